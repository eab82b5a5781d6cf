#!/usr/bin/env python3
"""cmake/write_version.cmake names the code that was built.

In a scratch git checkout: a clean tree gives PROJECT_VERSION+<commit>; a
changed tracked file adds ".dirty"; a new commit changes the text; an
unchanged text leaves the header untouched (so a build with nothing new
recompiles nothing); outside a checkout, the project version alone.

usage: version_text_test.py CMAKE SCRIPT
"""
import os
import subprocess
import sys
import tempfile


def main():
    cmake, script = sys.argv[1], os.path.abspath(sys.argv[2])
    failures = []

    def check(what, got, want):
        if got != want:
            failures.append(f"{what}: got {got!r}, want {want!r}")

    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        out = os.path.join(tmp, "out", "tailsweep_version.h")
        os.makedirs(src)

        def write_version():
            subprocess.run([cmake, f"-DSOURCE_DIR={src}", "-DPROJECT_VERSION=1.2.3",
                            f"-DOUT={out}", "-P", script], check=True)
            with open(out) as f:
                line = [l for l in f if l.startswith("#define")][0]
            return line.split('"')[1]

        def git(*args):
            return subprocess.run(["git", "-C", src, *args], check=True,
                                  capture_output=True, text=True).stdout.strip()

        check("outside a checkout", write_version(), "1.2.3")

        git("init", "-q")
        git("config", "user.email", "t@example.com")
        git("config", "user.name", "t")
        with open(os.path.join(src, "a.txt"), "w") as f:
            f.write("one\n")
        git("add", "a.txt")
        git("commit", "-qm", "one")
        first = git("rev-parse", "--short", "HEAD")
        check("clean checkout", write_version(), f"1.2.3+{first}")

        stamp = os.stat(out).st_mtime_ns
        os.utime(out, ns=(stamp - 10**9, stamp - 10**9))
        write_version()
        check("unchanged text rewrites nothing", os.stat(out).st_mtime_ns,
              stamp - 10**9)

        with open(os.path.join(src, "untracked.txt"), "w") as f:
            f.write("x\n")
        check("untracked files are not a change", write_version(),
              f"1.2.3+{first}")

        with open(os.path.join(src, "a.txt"), "w") as f:
            f.write("two\n")
        check("changed tracked file", write_version(), f"1.2.3+{first}.dirty")

        git("commit", "-qam", "two")
        second = git("rev-parse", "--short", "HEAD")
        check("new commit", write_version(), f"1.2.3+{second}")

    for failure in failures:
        print("FAIL", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
