#!/usr/bin/python3
"""EXPERIMENTS.md regenerates from the files under reports/experiments/.

    reports/check_experiments.py [REPO]

Runs every `reports/...` command in EXPERIMENTS.md's ```sh blocks (lines
joined at a trailing backslash, a trailing `# comment` dropped, globs
expanded by the shell) from the repository's root, and checks that each
exits 0 and that every table row it prints (a line starting with `|`, rules
`|---` aside) appears verbatim in EXPERIMENTS.md or in a stored table
(`reports/experiments/**/*.md`). Prints one line per command and the rows
not found; exits 1 if any command failed or any row is missing.
Standard library only (the commands need Debian's python3 with pandas).
"""
import pathlib
import re
import subprocess
import sys


def commands(page):
    """The `reports/` command lines of the page's sh blocks."""
    out, block, pending = [], False, ""
    for line in page.splitlines():
        if line.startswith("```"):
            block = line.strip() == "```sh"
            continue
        if not block:
            continue
        line = pending + line.strip()
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        pending = ""
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line.startswith("reports/"):
            out.append(line)
    return out


def main(argv):
    root = pathlib.Path(argv[1] if len(argv) > 1 else
                        pathlib.Path(__file__).resolve().parent.parent)
    page = (root / "EXPERIMENTS.md").read_text()
    known = set(page.splitlines())
    for stored in (root / "reports" / "experiments").rglob("*.md"):
        known.update(stored.read_text().splitlines())
    bad = 0
    found = commands(page)
    if not found:
        print("no reports/ commands in EXPERIMENTS.md")
        return 1
    for command in found:
        run = subprocess.run(command, shell=True, cwd=root, text=True,
                             capture_output=True)
        rows = [l for l in run.stdout.splitlines()
                if l.startswith("|") and not l.startswith("|---")]
        missing = [r for r in rows if r not in known]
        if run.returncode != 0:
            bad += 1
            print(f"FAILED ({run.returncode}): {command}\n{run.stderr}")
            continue
        print(f"{len(rows) - len(missing)} of {len(rows)} rows found: "
              f"{command}")
        for row in missing:
            bad += 1
            print(f"  not found: {row}")
        if not rows:
            bad += 1
            print("  printed no table")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
