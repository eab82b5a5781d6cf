"""The dashboard's pages in headless chromium (tests/browser/check_page.mjs)
against a real coordinator and worker: the list of sweeps shows each one's
state (held, with why as its title; paused; running or finished), priority,
device hours and tags; a sweep's report shows its settings under the title.
The pages are served with report/web/report.js and report.css as they are
in the source (check_page.mjs --report-js), so the test reads the code under
review, built in or not. Skips without node, chromium or web/node_modules.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
import tailsweep  # noqa: E402
from services import BIN, Services, wait_for  # noqa: E402

NODE = shutil.which("node") or "/usr/bin/node"
CHROMIUM = os.environ.get("TAILSWEEP_CHROMIUM", "/usr/bin/chromium")
WEB = os.path.join(REPO, "web")

pytestmark = [
    pytest.mark.skipif(
        not os.path.isfile(os.path.join(BIN, "tailsweep-coordinator")),
        reason="TAILSWEEP_BIN_DIR has no tailsweep-coordinator"),
    pytest.mark.skipif(
        not (os.path.isfile(NODE) and os.path.isfile(CHROMIUM) and
             os.path.isdir(os.path.join(WEB, "node_modules",
                                        "playwright-core"))),
        reason="needs node, chromium and web/node_modules/playwright-core")]

# Markup in a note or a tag must stay text (check_page counts elements
# that would be made of it as "injected").
NOTE = 'baseline <img src="x"> <b class="tailsweep-injected">not bold</b>'
VISION = """name: vision
kind: command
command: [sh, -c, 'exit 0', "${x}"]
grid: {x: [1, 2]}
priority: 5
tags: {team: vision, markup: "<i class=tailsweep-injected>"}
notes: '%s'
""" % NOTE
FLAKY = """name: flaky
kind: command
command: [sh, -c, 'exit 5', "${x}"]
grid: {x: [1, 2]}
max_failures: 1
"""
# A job that leaves a plot (a 1x1 PNG) and a file whose name is markup.
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAC"
       "hwGA60e6kgAAAABJRU5ErkJggg==")
ODD = "plots/<b class=tailsweep-injected>x #1.txt"
OUTPUTS = """name: outputs
kind: command
command: [sh, -c, 'cd "$TAILSWEEP_JOB_DIR" && mkdir -p plots &&
  echo %s | base64 -d > plots/a.png && echo odd > "%s"', "${x}"]
grid: {x: [3]}
artifacts: [plots/*]
""" % (PNG, ODD)
LATER = """name: later
kind: command
command: [sh, -c, 'exit 0', "${x}"]
grid: {x: [7]}  # a job of its own (vision has x 1 and 2)
"""


@pytest.fixture(scope="module")
def services():
    root = tempfile.mkdtemp(prefix="tailsweep_dashboard_")
    s = Services(root)
    try:
        s.submit("vision", VISION)
        s.submit("flaky", FLAKY)
        s.submit("outputs", OUTPUTS)
        client = tailsweep.Client(s.http, token=s.token)
        worker = s.worker()
        # vision and outputs done; flaky held after its first failed
        # attempt, nothing of it running (a held queue is not leased).
        wait_for(lambda: client.sweep("vision").status().counts["done"] == 2
                 and client.sweep("outputs").status().counts["done"] == 1
                 and client.sweep("flaky").status().held != "" and
                 client.sweep("flaky").status().counts["leased"] == 0,
                 "vision and outputs done, flaky held")
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        s.submit("later", LATER)  # no worker runs: it stays queued
        client.sweep("later").pause()
        s.client = client
        yield s
    finally:
        s.stop()
        shutil.rmtree(root, ignore_errors=True)


def browse(services, path, tmp_path):
    """check_page.mjs's findings on the page at `path`."""
    out = tmp_path / "shots"
    out.mkdir(exist_ok=True)
    r = subprocess.run(
        [NODE, os.path.join(REPO, "tests", "browser", "check_page.mjs"),
         "--web", WEB, "--url", services.http + path, "--out", str(out),
         "--header", "Authorization: Bearer " + services.token,
         "--report-js", os.path.join(REPO, "report", "web", "report.js"),
         "--report-css", os.path.join(REPO, "report", "web", "report.css")],
        capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    page = json.loads(r.stdout.strip().splitlines()[-1])
    assert page["console_errors"] == [] and page["page_errors"] == [], page
    assert page["injected"] == 0 and page["dialogs"] == 0, page
    return page


def test_the_list_shows_state_priority_hours_and_tags(services, tmp_path):
    page = browse(services, "/", tmp_path)
    columns = page["sweep_columns"]
    assert columns == ["sweep", "kind", "state", "priority", "queued",
                       "leased", "done", "failed", "cancelled", "hours",
                       "tags"], columns
    rows = {r["cells"][0]: r for r in page["sweeps"]}
    assert sorted(rows) == ["flaky", "later", "outputs", "vision"]
    cell = {name: dict(zip(columns, r["cells"])) for name, r in rows.items()}

    vision = cell["vision"]
    assert (vision["state"], vision["priority"], vision["done"]) == \
        ("finished", "5", "2")
    assert vision["hours"].endswith(" CPU-h") and "GPU" not in \
        vision["hours"], vision
    assert rows["vision"]["tags"] == ["markup=<i class=tailsweep-injected>",
                                      "team=vision"]

    flaky = cell["flaky"]
    held = services.client.sweep("flaky").status().held
    assert flaky["state"] == "held" and "max_failures: 1" in held
    assert rows["flaky"]["state_title"] == held
    assert flaky["hours"].endswith(" CPU-h")
    assert rows["flaky"]["tags"] == []

    later = cell["later"]
    assert (later["state"], later["priority"], later["queued"],
            later["hours"]) == ("paused", "0", "1", "0 h")
    assert "nothing new is leased" in rows["later"]["state_title"]


def test_a_report_shows_the_sweeps_settings_under_its_title(services,
                                                            tmp_path):
    page = browse(services, "/sweeps/vision", tmp_path)
    text = page["settings_text"]
    assert text is not None, page["text"][:2000]
    assert "priority 5" in text and "CPU-h" in text, text
    assert "team=vision" in text and NOTE in text, text
    assert "paused" not in text and "held" not in text, text
    # The title comes first, then the settings.
    assert page["text"].index("Sweep vision") < page["text"].index(
        "priority 5")

    held = browse(services, "/sweeps/flaky", tmp_path)["settings_text"]
    assert "held: held after" in held and "max_failures 1" in held, held
    paused = browse(services, "/sweeps/later", tmp_path)["settings_text"]
    assert "paused: running jobs finish" in paused and "0 h" in paused, \
        paused


def test_a_report_shows_each_jobs_artifacts(services, tmp_path):
    import urllib.request
    page = browse(services, "/sweeps/outputs", tmp_path)
    job = next(services.client.sweep("outputs").jobs())
    strips = page["artifacts"]
    assert [s["job"] for s in strips] == [job.id], page["text"][:2000]
    strip = strips[0]
    assert job.id[:12] in strip["label"]
    # The image drawn; the other file a link, its name shown as text.
    assert [(i["alt"], i["loaded"]) for i in strip["images"]] == \
        [("plots/a.png", True)]
    assert [a["text"] for a in strip["links"]] == [ODD]
    # Each address is the artifact's (the name percent-encoded).
    for href, want in ((strip["images"][0]["src"], None),
                       (strip["links"][0]["href"], b"odd\n")):
        request = urllib.request.Request(
            services.http + href,
            headers={"Authorization": "Bearer " + services.token})
        with urllib.request.urlopen(request) as answer:
            body = answer.read()
        if want is not None:
            assert body == want, href
        else:
            assert body.startswith(b"\x89PNG"), href
    # Jobs that made none show no strip.
    assert browse(services, "/sweeps/vision", tmp_path)["artifacts"] == []
