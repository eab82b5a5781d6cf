#!/usr/bin/env python3
"""The release as a Python wheel, as the `cmake` and `ninja` wheels carry
their programs: `pip install tailsweep-VERSION-py3-none-manylinux_X_Y_x86_64.whl`
(offline, no compiler) puts `tailsweep`, `tailsweep-coordinator`,
`tailsweep-worker` and `tailsweep-snapshot` on the environment's PATH and
installs `import tailsweep`.

    make_wheel.py RELEASE_TARBALL OUT_DIR

The wheel holds the Python package (python/tailsweep of the release) and,
under tailsweep/_release/, the release's bin/, libexec/, lib/ and share/;
the console scripts (tailsweep/_programs.py) exec the release's launchers,
which check glibc first. The platform tag is the release's glibc floor
(share/tailsweep/FLOOR): manylinux_2_34 means glibc 2.34 or newer. Standard
library only: a wheel is a zip with a METADATA, a WHEEL and a RECORD of
every file's SHA-256 (PEP 427, PEP 491).
"""

import base64
import hashlib
import io
import os
import re
import stat
import sys
import tarfile
import zipfile

PROGRAMS = ["tailsweep", "tailsweep-coordinator", "tailsweep-worker",
            "tailsweep-snapshot"]

PROGRAMS_PY = '''"""Console scripts of the wheel: each runs the release program of its name
(tailsweep/_release/bin/NAME, the launcher that checks glibc first)."""

import os
import sys

_RELEASE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_release")


def _run(name):
    launcher = os.path.join(_RELEASE, "bin", name)
    if not os.path.exists(launcher):
        sys.exit("%s: %s is missing; reinstall the tailsweep wheel" % (name, launcher))
    for folder in ("bin", "libexec"):
        path = os.path.join(_RELEASE, folder, name)
        if os.path.exists(path) and not os.access(path, os.X_OK):
            try:
                os.chmod(path, 0o755)
            except OSError as e:
                sys.exit("%s: %s is not executable (%s); reinstall the wheel "
                         "where you may write" % (name, path, e))
    os.execv(launcher, [name] + sys.argv[1:])


def tailsweep():
    _run("tailsweep")


def coordinator():
    _run("tailsweep-coordinator")


def worker():
    _run("tailsweep-worker")


def snapshot():
    _run("tailsweep-snapshot")
'''

ENTRY_POINTS = {
    "tailsweep": "tailsweep._programs:tailsweep",
    "tailsweep-coordinator": "tailsweep._programs:coordinator",
    "tailsweep-worker": "tailsweep._programs:worker",
    "tailsweep-snapshot": "tailsweep._programs:snapshot",
}


def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(
        hashlib.sha256(data).digest()).rstrip(b"=").decode()


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: make_wheel.py RELEASE_TARBALL OUT_DIR")
    tarball, out_dir = argv[1], argv[2]
    files = {}  # path in the wheel -> (bytes, mode)
    version = floor = None
    with tarfile.open(tarball) as tar:
        for m in tar.getmembers():
            parts = m.name.split("/", 1)
            if len(parts) < 2 or not (m.isfile() or m.issym()):
                continue
            rel = parts[1]
            if m.issym():
                sys.exit("make_wheel: %s is a symbolic link; the release "
                         "has none" % m.name)
            data = tar.extractfile(m).read()
            if rel == "share/tailsweep/VERSION":
                version = data.decode().strip()
            if rel == "share/tailsweep/FLOOR":
                found = re.search(r"glibc (\d+)\.(\d+)", data.decode())
                floor = found.groups() if found else None
            if rel.startswith("python/"):
                files[rel[len("python/"):]] = (data, m.mode)
            elif rel == "LICENSE":
                license_text = data
            else:
                files["tailsweep/_release/" + rel] = (data, m.mode)
    if version is None or floor is None:
        sys.exit("make_wheel: %s has no share/tailsweep/VERSION or FLOOR: "
                 "not a release (deploy/release.sh)" % tarball)
    # PEP 440: 0.1.0+015c838.dirty -> 0.1.0+015c838.dirty is a local
    # version, which an index refuses but a file installs; keep the public
    # part only, the whole one stays in share/tailsweep/VERSION.
    public = version.split("+", 1)[0]
    tag = "py3-none-manylinux_%s_%s_x86_64" % floor
    name = "tailsweep-%s-%s.whl" % (public, tag)
    dist_info = "tailsweep-%s.dist-info" % public
    files["tailsweep/_programs.py"] = (PROGRAMS_PY.encode(), 0o644)
    files[dist_info + "/METADATA"] = ((
        "Metadata-Version: 2.1\n"
        "Name: tailsweep\n"
        "Version: %s\n"
        "Summary: Sweeps of training runs (and any program) from a laptop to "
        "a Slurm cluster: the coordinator, worker and CLI, and the Python "
        "client\n"
        "License: Apache-2.0\n"
        "Classifier: License :: OSI Approved :: Apache Software License\n"
        "Classifier: Operating System :: POSIX :: Linux\n"
        "Classifier: Programming Language :: Python :: 3\n"
        "Requires-Python: >=3.8\n"
        "Provides-Extra: pandas\n"
        "Requires-Dist: pandas; extra == \"pandas\"\n"
        "\n"
        "The tailsweep programs (built for x86-64 Linux with glibc %s.%s or "
        "newer) and its Python package. Full version: %s.\n"
        % (public, floor[0], floor[1], version)).encode(), 0o644)
    files[dist_info + "/WHEEL"] = ((
        "Wheel-Version: 1.0\n"
        "Generator: tailsweep deploy/release/make_wheel.py\n"
        "Root-Is-Purelib: false\n"
        "Tag: %s\n" % tag).encode(), 0o644)
    files[dist_info + "/entry_points.txt"] = ((
        "[console_scripts]\n" + "".join(
            "%s = %s\n" % kv for kv in ENTRY_POINTS.items())).encode(), 0o644)
    files[dist_info + "/LICENSE"] = (license_text, 0o644)
    record_path = dist_info + "/RECORD"
    record = io.StringIO()
    for path in sorted(files):
        data = files[path][0]
        record.write("%s,%s,%d\n" % (path, digest(data), len(data)))
    record.write("%s,,\n" % record_path)
    files[record_path] = (record.getvalue().encode(), 0o644)

    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, name)
    with zipfile.ZipFile(out + ".part", "w", zipfile.ZIP_DEFLATED) as z:
        # dist-info last, as PEP 427 recommends.
        for path in sorted(files, key=lambda p: (p.startswith(dist_info), p)):
            data, mode = files[path]
            info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (stat.S_IFREG | (mode & 0o777)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(out + ".part", out)
    print(out)


if __name__ == "__main__":
    main(sys.argv)
