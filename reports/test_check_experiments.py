"""reports/check_experiments.py on a hand-made repository: a page whose
tables its commands print passes; a changed row, a failing command or a
page without commands fails."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent / "check_experiments.py"
TABLE = "| a | b |\n|---|---|\n| 1 | 2 |\n"


def repo(tmp_path, page, printed=TABLE):
    (tmp_path / "reports" / "experiments" / "x").mkdir(parents=True, exist_ok=True)
    tool = tmp_path / "reports" / "show.sh"
    tool.write_text(f"#!/bin/sh\ncat <<'T'\n{printed}T\n")
    tool.chmod(0o755)
    (tmp_path / "EXPERIMENTS.md").write_text(page)
    return subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)],
                          capture_output=True, text=True)


def test_a_page_its_commands_regenerate_passes(tmp_path):
    page = ("# E\n\n```sh\nreports/show.sh \\\n  --any   # the table\n```\n\n"
            + TABLE)
    run = repo(tmp_path, page)
    assert run.returncode == 0, run.stdout
    assert "2 of 2 rows found: reports/show.sh --any" in run.stdout


def test_a_row_the_command_no_longer_prints_fails(tmp_path):
    page = "```sh\nreports/show.sh\n```\n\n" + TABLE
    run = repo(tmp_path, page, printed=TABLE.replace("| 1 |", "| 7 |"))
    assert run.returncode == 1
    assert "not found: | 7 | 2 |" in run.stdout


def test_a_row_in_a_stored_table_counts(tmp_path):
    page = "```sh\nreports/show.sh\n```\n"
    (tmp_path / "reports" / "experiments" / "x").mkdir(parents=True, exist_ok=True)
    (tmp_path / "reports" / "experiments" / "x" / "t.md").write_text(TABLE)
    assert repo(tmp_path, page).returncode == 0


def test_a_failing_or_missing_command_fails(tmp_path):
    assert repo(tmp_path, "```sh\nreports/absent.py\n```\n").returncode == 1
    assert repo(tmp_path, "no commands\n").returncode == 1
