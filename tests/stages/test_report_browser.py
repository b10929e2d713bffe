"""The HTML report as people see it: rendered by headless Chromium, checked from the page.

The report is the one of ``test_report_stage`` (real VOC val and train images, both galleries,
the provenance and cost sections), with the sidecars' command lines made as long as a real
run's (absolute paths, many options), since those are what ran off the page.

How the page is checked: ``chromium --headless --dump-dom`` prints the DOM after the page has
loaded, so facts only the browser knows (did each image decode? how wide is the laid-out page?)
must be written into the DOM by the page itself. The test renders a copy of ``report.html`` with
a probe ``<script>`` appended (the report itself stays script-free) that, on the ``load``
event, writes into a ``<div id=probe>``: the number of ``<img>`` elements and of those
``complete`` with ``naturalWidth > 0``, the root element's ``scrollWidth`` and ``clientWidth``
(equal when nothing makes the page scroll sideways), and every table, ``<pre>``, figure or
paragraph whose right edge passes the body's content edge (a table in its scrolling box would
not widen the page, yet a reader would still have to scroll it). The dumped DOM is parsed with
the standard library's ``html.parser``: the tables and images it holds are counted against
``report.md`` (the same document rendered as Markdown) and the cells' text is checked for
Markdown markup. A ``--screenshot`` of the top of the page must decode to a PNG of the window's
size that is not blank. Chromium missing is a failure, not a skip: ``make setup`` installs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from wsod.stages.report import run

PROBE = """
<script>
window.addEventListener("load", () => {
  const body = document.body, root = document.documentElement;
  const edge = body.getBoundingClientRect().right - parseFloat(getComputedStyle(body).paddingRight);
  const wide = [...document.querySelectorAll("table, pre, figure, img, p, ul, h1, h2, h3")]
    .filter((el) => el.getBoundingClientRect().right > edge + 0.5)
    .map((el) => el.tagName + ": " + el.textContent.slice(0, 60));
  const imgs = [...document.images];
  const probe = document.createElement("div");
  probe.id = "probe";
  probe.dataset.images = imgs.length;
  probe.dataset.loaded = imgs.filter((i) => i.complete && i.naturalWidth > 0).length;
  probe.dataset.scroll = root.scrollWidth;
  probe.dataset.client = root.clientWidth;
  probe.dataset.overflow = JSON.stringify(wide);
  body.appendChild(probe);
});
</script>
"""


SKIPPED = (
    "Skipped CorLoc and pseudo-label precision on train: it has no boxes; "
    "`wsod data --boxes FILE` gives them for the images it covers."
)


def chromium() -> str:
    """The Chromium binary (``WSOD_CHROMIUM`` or ``chromium`` on PATH); missing = failure."""
    exe = shutil.which(os.environ.get("WSOD_CHROMIUM", "chromium"))
    if exe is None:
        pytest.fail(
            "chromium not found on PATH: the report's browser test needs Debian's chromium "
            "package; `make setup` installs it (apt-get install chromium), or set WSOD_CHROMIUM"
        )
    return exe


def _browse(html: Path, profile: Path, width: int, height: int, *extra: str) -> str:
    """Run headless Chromium on ``html`` at ``width`` x ``height``; returns its stdout."""
    cmd = [
        chromium(),
        "--headless",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",  # containers often have a small /dev/shm
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        "--virtual-time-budget=20000",
        *extra,
        html.resolve().as_uri(),
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, f"{' '.join(cmd)} failed:\n{res.stderr[-3000:]}"
    return res.stdout


class _Page(HTMLParser):
    """Tables (rows of cell texts), ``<img>`` count and the probe's data from a dumped DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.images = 0
        self.strong_cells: list[str] = []
        self.probe: dict[str, str] | None = None
        self.codes: list[str] = []  # text of <code> elements
        self.text: list[str] = []  # text outside <pre>, <style> and <script>
        self._cell: list[str] | None = None
        self._strong = False
        self._code: list[str] | None = None
        self._raw = 0  # inside <pre>, <style> or <script>

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "strong" and self._cell is not None:
            self._strong = True
        elif tag == "img":
            self.images += 1
        elif tag == "code":
            self._code = []
        elif tag in ("pre", "style", "script"):
            self._raw += 1
        elif tag == "div" and a.get("id") == "probe":
            self.probe = {k.removeprefix("data-"): v for k, v in attrs if k.startswith("data-")}

    def handle_endtag(self, tag):
        if tag == "code" and self._code is not None:
            self.codes.append("".join(self._code))
            self._code = None
        elif tag in ("pre", "style", "script"):
            self._raw -= 1
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            if self._strong:
                self.strong_cells.append(self.tables[-1][-1][-1])
            self._cell, self._strong = None, False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._code is not None:
            self._code.append(data)
        if not self._raw:
            self.text.append(data)


@pytest.fixture(scope="module")
def report(evaluated: dict, tmp_path_factory) -> dict:
    """The report of ``evaluated``'s run, its sidecars given a real run's long command lines."""
    work = evaluated["work"]
    for side in sorted(work.glob("*.meta.json")):
        meta = json.loads(side.read_text())
        name = side.name.removesuffix(".meta.json")
        meta["command"] = [
            "/home/user/projects/wsod/.venv/lib/python3.11/site-packages/wsod/__main__.py",
            meta.get("stage") or "stage",
            "--pipeline",
            "pipelines/voc07_cpu.py",
            "--out",
            str(work / "work_dirs" / "voc07_cpu_a_long_run_name_without_spaces" / name),
            "--cfg-options",
            "train_cfg.max_iters=3000",
            "optim_wrapper.optimizer.lr=0.02",
        ]
        side.write_text(json.dumps(meta))
    # a "Skipped" line as evaluate writes them, with inline code (rendered as <code> in HTML)
    metrics = json.loads(evaluated["metrics"].read_text())
    metrics["skipped"] = [SKIPPED]
    folder = tmp_path_factory.mktemp("browser")
    metrics_file = folder / "metrics.json"
    metrics_file.write_text(json.dumps(metrics))
    sidecar = Path(str(evaluated["metrics"]) + ".meta.json")
    shutil.copy(sidecar, folder / "metrics.json.meta.json")
    out = folder / "report"
    res = run(
        metrics_file,
        out,
        gt=evaluated["gt"],
        pseudo_labels=evaluated["pseudo"],
        gallery_images=3,
        run_dir=work,
    )
    probe = out.parent / "probe.html"
    html = res["html"].read_text()
    assert html.count("</body>") == 1
    probe.write_text(html.replace("</body>", PROBE + "</body>"))
    return {**res, "probe": probe, "profile": out.parent / "chromium-profile"}


@pytest.mark.slow
@pytest.mark.parametrize("width", [1280, 800])
def test_rendered_report_has_every_table_and_image_and_fits_the_page(report: dict, width: int):
    page = _Page()
    page.feed(_browse(report["probe"], report["profile"], width, 900, "--dump-dom"))
    assert page.probe is not None, "the probe script did not run: the page never fired 'load'"
    md = report["markdown"].read_text().splitlines()
    # every table of the document is on the page, with a header and as many rows as in Markdown
    md_tables = [i for i, line in enumerate(md) if line.startswith("|---")]
    assert len(page.tables) == len(md_tables)
    # side by side, cost per artifact and per stage, provenance
    assert [t[0][:2] for t in page.tables] == [
        ["class", "#GT"],
        ["stage", "artifact"],
        ["stage", "artifacts"],
        ["input", "file"],
    ]
    for rows, i in zip(page.tables, md_tables, strict=True):
        n_md = next((k for k, line in enumerate(md[i + 1 :]) if not line.startswith("|")), None)
        assert len(rows) == 1 + n_md and all(rows), rows[:2]
    # every figure and gallery image is on the page and decoded by the browser
    n_images = len(report["figures"]) + len(report["gallery"])
    assert n_images == sum(line.startswith("![") for line in md) >= 2 + 3
    assert page.images == int(page.probe["images"]) == n_images
    assert int(page.probe["loaded"]) == n_images, page.probe
    # no Markdown markup in any cell; the mean rows' labels are bold instead
    cells = [c for t in page.tables for r in t for c in r]
    assert not [c for c in cells if "**" in c]
    assert {"mAP (11-point)", "mAP (area)", "COCO AP 0.5:0.95", "total", "run"} <= set(
        page.strong_cells
    )
    # nothing runs off the page: no sideways scrolling, no block past the body's edge
    assert int(page.probe["scroll"]) == int(page.probe["client"]) == width, page.probe
    assert json.loads(page.probe["overflow"]) == []
    # the long command lines are on the page in full
    assert any("voc07_cpu_a_long_run_name_without_spaces" in c for c in cells)
    # the provenance table names the program `wsod`, as the run provenance does, not the
    # interpreter's path to wsod/__main__.py
    provenance = page.tables[-1]
    commands = [row[provenance[0].index("command")] for row in provenance[1:]]
    assert commands and all(c.startswith("wsod ") for c in commands if c), commands
    assert not [c for c in cells if "__main__.py" in c]
    # inline code of the "Skipped" boxes is rendered, not shown as backticks
    assert "wsod data --boxes FILE" in page.codes
    assert "`" not in "".join(page.text)


@pytest.mark.slow
def test_screenshot_of_the_report_is_not_blank(report: dict):
    shot = report["probe"].parent / "report.png"
    _browse(report["html"], report["profile"], 1280, 1600, f"--screenshot={shot}")
    with Image.open(shot) as im:
        assert im.size == (1280, 1600)
        gray = np.asarray(im.convert("L"))
    # text and table borders: a good share of the pixels is not background white
    assert (gray < 200).mean() > 0.01 and gray.std() > 10
