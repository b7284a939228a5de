"""The HTML report (`snakemake --report`) of a small dataset, as a reviewer opens it and as an attacker would feed it.

One report is made for the whole module: two run groups of real loopback qlogs (one group's folder named with
markup of every kind), a dataset.yaml whose name and title carry Jinja, reStructuredText, HTML and Markdown payloads
(hand-made: what a hostile dataset description would say), the workflow up to the report's pages, then
`snakemake --report`. The injection test reads the report's own data; the browser test opens it in Debian's headless
Chromium (chromium-driver) and looks at it as a reviewer would."""

from __future__ import annotations

import base64
import html
import json
import re
import time
from pathlib import Path

import polars as pl
import pytest
from markdown_it import MarkdownIt

from quicack.layout import group_key
from tests.conftest import QLOG_FIXTURES, config_for, make_run, runs_in, snakemake

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WINDOW = (1600, 1000)

# Hand-made payloads. The marker file's text must never reach the report (`.. include::`); the products of the
# Jinja expressions (7*191 = 1337, 6*7 = 42 with whitespace control) must never appear, the expressions must.
MARKER = "MARKER-FILE-TEXT-5b1e0c"
# A folder name holds no '/'.
GROUP = ".. include:: README.md {% endraw %}{{ 7*191 }}{#c#}<img src=x onerror=alert(2)> |sub| `role`_"
TITLE_LINES = [
    "Hostile title {% endraw %}{{ 7*191 }}{# hidden comment #}{%- raw -%}",
    "",
    ".. raw:: html",
    "",
    "   <script>window.PWNED_RAW = 1</script>",
    "",
    ".. include:: {marker}",
    "",
    '<img src=x onerror="window.PWNED_IMG = 1"> :raw-html:`<i>r</i>` |sub| javascript:window.PWNED_URI=1',
    "[md link](javascript:alert(1)) {{- 6*7 -}} {%+ endraw %} end of title",
]
# What must not be in any page of the report (the payload live) ...
LIVE = (
    "<script>window.PWNED",
    "<img src",
    "<i>r</i>",
    'href="javascript:window',
    'href="javascript:alert',
    MARKER,
    "1337",
)
# ... and what must be there, as text.
VISIBLE = ("Hostile title {% endraw %}{{ 7*191 }}{# hidden comment #}{%- raw -%}", ".. raw:: html",
           "<script>window.PWNED_RAW = 1</script>",
           '<img src=x onerror="window.PWNED_IMG = 1">', "{{- 6*7 -}} {%+ endraw %} end of title")  # fmt: skip


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The report of the hostile small dataset: its path, the results folder, the marker file, how long it took."""
    base = tmp_path_factory.mktemp("report")
    marker = base / "marker.txt"
    marker.write_text(MARKER + "\n", encoding="utf-8")
    raw = base / "data" / "raw"
    for group, implementation, suffix in ((GROUP, "aioquic", "qlog"), ("ngtcp2_ngtcp2", "ngtcp2", "sqlog")):
        make_run(raw, f"{group}/transfer/1", QLOG_FIXTURES / implementation / f"client.{suffix}",
                 QLOG_FIXTURES / implementation / f"server.{suffix}",
                 {"client_impl": implementation, "server_impl": implementation, "scenario": "transfer", "repetition": 1,
                  "status": "ok", "app_protocol": "h3"})  # fmt: skip
    title = "\n".join(f"  {line}" if line else "" for line in TITLE_LINES).replace("{marker}", str(marker))
    (raw.parent / "dataset.yaml").write_text(
        f"name: t<b>n</b>{{{{7*191}}}}\nkind: emulated\ntitle: |-\n{title}\n", encoding="utf-8"
    )
    results = base / "results"
    landing = results / "t" / "report" / "landing.rst"
    config = config_for(raw, results)
    started = time.monotonic()
    done = snakemake(str(landing), *config)
    assert done.returncode == 0, done.stderr[-3000:]
    pipeline_s = time.monotonic() - started
    path = base / "report.html"
    started = time.monotonic()
    made = snakemake("--report", str(path), str(landing), *config)
    assert made.returncode == 0, made.stderr[-3000:]
    print(
        f"small dataset: pipeline to the report's pages {pipeline_s:.0f} s, snakemake --report "
        f"{time.monotonic() - started:.0f} s"
    )
    return {"path": path, "results": results / "t", "marker": marker}


def _script_json(page: str, script_id: str) -> object:
    """The JSON value that the report's script of id ``script_id`` assigns to its variable."""
    match = re.search(rf'<script id="{script_id}">\s*var \w+ = (.*?);\s*</script>', page, re.S)
    assert match, script_id
    return json.loads(match.group(1))


def _report_texts(path: Path) -> dict[str, str]:
    """Every HTML text of the report that came from our pages: the landing page, each entry's caption, and each
    HTML entry's page (embedded as a data URI)."""
    page = path.read_text(encoding="utf-8")
    texts = {"landing": _script_json(page, "workflow-desc")}
    for entry in _script_json(page, "results").values():
        texts[f"caption of {entry['name']}"] = entry["caption"]
        if entry["mime_type"] == "text/html":
            texts[entry["name"]] = base64.b64decode(entry["data_uri"].split(",", 1)[1]).decode("utf-8")
    return texts


def _as_text(markup: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def test_no_payload_of_a_title_or_group_name_is_live_in_the_report(report):
    """Jinja, reStructuredText, HTML and Markdown in the dataset's title and name and in a run group's folder name:
    nothing of it is evaluated, nothing runs, no file is included; the title reads as it was written."""
    page = report["path"].read_text(encoding="utf-8")
    assert MARKER not in page and "PWNED" not in page.replace("PWNED_RAW = 1", "").replace("PWNED_IMG = 1", "").replace(
        "PWNED_URI=1", ""
    )
    texts = _report_texts(report["path"])
    assert {"landing", "claims-imc24.html", "caption of claims-imc24.html"} <= set(texts)
    for where, text in texts.items():
        for live in LIVE:
            assert live not in text, (where, live)
        assert "<script" not in text, where
        assert "system-message" not in text and "System Message" not in text, (where, text[:3000])
    # The title as text where the dataset is named: the landing page and every paper's page.
    for where in ("landing", "claims-imc24.html"):
        shown = _as_text(texts[where])
        for visible in VISIBLE:
            assert " ".join(visible.split()) in shown, (where, visible, shown[:3000])
        assert "t<b>n</b>{{7*191}}" in shown
    # The run group's name reaches the report only as its key (%-encoded, quicack.layout.group_key), never as it is.
    assert group_key(GROUP) in page and GROUP not in page and "onerror=alert(2)" not in page
    assert sorted(runs_in(report["results"] / "quicack.duckdb")) == sorted(
        [f"{GROUP}/transfer/1", "ngtcp2_ngtcp2/transfer/1"]
    )
    # The tables' Markdown (rendered as CommonMark with tables) and LaTeX, beside the report, carry the title as text.
    tables = report["results"] / "tables"
    titled = []
    for md in tables.glob("*.md"):
        rendered = MarkdownIt("commonmark").enable("table").render(md.read_text(encoding="utf-8"))
        assert "<img" not in rendered and "<script" not in rendered and "<a href" not in rendered, md.name
        if "Hostile title" in rendered:  # the scan's tables name the scan's description
            titled.append(md.name)
            assert "&lt;img src=x onerror=" in rendered, md.name
    assert "imc24-claims.md" in titled
    texs = sorted(tables.glob("*.tex"))
    assert texs, tables
    for tex in texs:
        lines = tex.read_text(encoding="utf-8").splitlines()
        assert not [line for line in lines if "PWNED" in line and not line.startswith("%")], tex.name


# ------------------------------------------------------------------------------------------------
# In a browser


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        pytest.skip("Debian's chromium and chromium-driver are not installed (install.sh --dev)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={WINDOW[0]},{WINDOW[1]}", "--hide-scrollbars"):  # fmt: skip
        options.add_argument(argument)
    service = webdriver.ChromeService(executable_path=str(CHROMEDRIVER))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(120)
    # The page's own viewport at exactly WINDOW (the window size includes the browser's frame).
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": WINDOW[0], "height": WINDOW[1], "deviceScaleFactor": 1,
                            "mobile": False})  # fmt: skip
    yield driver
    driver.quit()


# The landing page's first heading, the counts table and the scroll area that holds them (Snakemake's content
# pane), measured in the page.
_LANDING_BOX = """
const heading = document.querySelector('#app .prose h1');
if (!heading) return null;
const area = heading.closest('.overflow-auto');
const table = document.querySelector('#app .prose table');
const box = (element) => {
  const r = element.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, left: r.left, right: r.right};
};
return {heading: box(heading), table: table && box(table), area: box(area), text: heading.textContent,
        scrollTop: area.scrollTop, scrollHeight: area.scrollHeight, clientHeight: area.clientHeight,
        innerHeight: window.innerHeight, innerWidth: window.innerWidth};
"""
# Inside a claims page (the report's frame): every claim's row scrolled into view, where it then is.
_CLAIM_ROWS = """
const area = document.scrollingElement;
return arguments[0].map((id) => {
  const row = document.getElementById(id);
  if (!row) return [id, null];
  row.scrollIntoView({block: 'start'});
  const r = row.getBoundingClientRect();
  return [id, {top: r.top, bottom: r.bottom, left: r.left, right: r.right, scrollHeight: area.scrollHeight,
               innerHeight: window.innerHeight, absoluteTop: r.top + area.scrollTop,
               widest: Math.max(...Array.from(row.cells, (cell) => cell.getBoundingClientRect().right)),
               clientWidth: area.clientWidth}];
});
"""


def _wait(driver, condition, timeout_s: float = 60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout_s, poll_frequency=0.2).until(condition)


def check_report_in_browser(driver, path: Path, claims: pl.DataFrame, screenshot: Path) -> None:
    """As a reviewer: open the report; the landing page's title and the counts per paper are in the window at
    scroll 0; each paper's claims are reached from the landing page's links and every claim's row can be scrolled
    into view. Writes a screenshot of the landing page."""
    from selenium.webdriver.common.by import By

    driver.get(path.resolve().as_uri())
    landing = _wait(driver, lambda d: d.execute_script(_LANDING_BOX))
    driver.save_screenshot(str(screenshot))
    print(f"landing page screenshot: {screenshot}")
    window_height = landing["innerHeight"]
    assert landing["text"].strip() == "Claims overview"
    assert landing["scrollTop"] == 0
    # In the window and in the pane (not above its top, where nothing can be scrolled to).
    assert 0 <= landing["heading"]["top"] and landing["heading"]["bottom"] <= window_height, landing
    assert landing["area"]["top"] <= landing["heading"]["top"], landing
    assert (
        landing["table"] is not None and 0 <= landing["table"]["top"] and landing["table"]["bottom"] <= window_height
    ), landing
    assert 0 <= landing["table"]["left"] and landing["table"]["right"] <= landing["innerWidth"], landing
    # Each paper: its link on the landing page, then the entry's eye button, as a reviewer clicks them.
    for paper in claims["paper"].unique(maintain_order=True).to_list():
        page = f"claims-{paper}.html"
        # From the landing page as the report opens, for each paper (a reviewer's back to the start).
        driver.switch_to.default_content()
        driver.get(path.resolve().as_uri())
        _wait(driver, lambda d: d.execute_script(_LANDING_BOX))
        link = _wait(
            driver,
            lambda d, paper=paper: d.find_element(
                By.XPATH, f"//div[contains(@class,'prose')]//a[normalize-space(.)='{paper}']"
            ),
        )
        link.click()
        eye = _wait(
            driver,
            lambda d, page=page: d.find_element(
                By.XPATH, f"//nav//span[contains(., '{page}')]/following-sibling::a[@type='button']"
            ),
        )
        eye.click()
        frame = _wait(driver, lambda d: d.find_element(By.TAG_NAME, "iframe"))
        box = driver.execute_script(
            "const r = arguments[0].getBoundingClientRect(); return [r.top, r.bottom, window.innerHeight];", frame
        )
        assert 0 <= box[0] and box[1] <= box[2] + 1, (paper, box)  # the frame itself lies in the window
        driver.switch_to.frame(frame)
        ids = claims.filter(pl.col("paper") == paper)["claim_id"].to_list()
        rows = dict(_wait(driver, lambda d, ids=ids: d.execute_script(_CLAIM_ROWS, ids)))
        for claim_id, row in rows.items():
            assert row is not None, (paper, claim_id)
            # Scrolled to, the row starts in the frame (its whole box inside what the frame scrolls over).
            assert -1 <= row["top"] < row["innerHeight"] and row["bottom"] - row["top"] < row["innerHeight"], (
                claim_id,
                row,
            )
            assert row["absoluteTop"] + row["bottom"] - row["top"] <= row["scrollHeight"] + 1, (claim_id, row)
            assert 0 <= row["left"] and row["widest"] <= row["clientWidth"] + 1, (
                claim_id,
                row,
            )  # nothing cut at the right
    driver.switch_to.default_content()
    # A figure taller and wider than the window, shown as the report shows a figure (hand-made: this small dataset
    # draws none; imc24 Fig. 3 of the embedded dataset is 2523 x 2719 px): it opens at its top-left corner.
    driver.execute_script("app.setView({content: 'img', contentPath: arguments[0]})", TALL_FIGURE)
    figure = _wait(driver, lambda d: d.execute_script(_TALL_FIGURE_BOX))
    assert figure["top"] >= figure["areaTop"] and figure["left"] >= figure["areaLeft"], figure
    assert figure["scrollHeight"] >= figure["height"], figure


TALL_FIGURE = "data:image/svg+xml;base64," + base64.b64encode(
    b'<svg xmlns="http://www.w3.org/2000/svg" width="2400" height="6000"><rect width="2400" height="6000" '
    b'fill="#ddd"/></svg>'
).decode("ascii")
_TALL_FIGURE_BOX = """
const image = document.querySelector('#app div.justify-center.overflow-auto img');
if (!image || !image.complete) return null;
const area = image.closest('.overflow-auto'), r = image.getBoundingClientRect(), a = area.getBoundingClientRect();
return {top: r.top, left: r.left, height: r.height, areaTop: a.top, areaLeft: a.left, scrollHeight: area.scrollHeight};
"""


def test_the_landing_page_opens_at_its_title_and_every_claim_can_be_reached(report, browser, tmp_path):
    claims = pl.read_csv(report["results"] / "claims.csv", infer_schema_length=None)
    assert claims.height > 50
    screenshot = tmp_path / "landing.png"
    check_report_in_browser(browser, report["path"], claims, screenshot)
    # The payloads did not run in the browser either.
    assert browser.execute_script("return [window.PWNED_RAW, window.PWNED_IMG, window.PWNED_URI]") == [None, None, None]
    assert screenshot.stat().st_size > 10_000
