"""Debian's headless Chromium for the built book: a loopback server for a site folder, a browser driven
through its own chromedriver, the script that inspects a page as a reader sees it, the one that finds
content wider than its column, the one that says what a chapter's first screen holds, and screenshots of
the whole page and of its first screen as a reader sees them. Shared by the
browser test (tests/browser) and the PDF of the book (tools/book_pdf.py, `make pdf`); `make chromium`
installs both programs where they are missing.
"""
import base64
import contextlib
import functools
import http.server
import os
import shutil
import tempfile
import threading
from pathlib import Path

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
WIDTH = 1280                 # the reader's window: the browser test reads every page at this width


class Missing(RuntimeError):
    """Chromium or its driver is not installed."""


@contextlib.contextmanager
def serve(folder: Path):
    """Serve ``folder`` with python's http.server on a free loopback port; yields the base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def browser(width: int = WIDTH, height: int = 900):
    """Headless Debian Chromium through its own chromedriver (Selenium Manager is never asked to download)."""
    for exe in (CHROMIUM, CHROMEDRIVER):
        if not exe.exists():
            raise Missing(f"{exe} is missing: `make chromium` installs Debian's chromium and chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="connlap-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--hide-scrollbars", f"--window-size={width},{height}",
                 f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    os.environ["SE_OFFLINE"] = "true"           # Selenium Manager, should anything call it: no downloads
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=opts)
    try:
        driver.set_page_load_timeout(120)
        driver.set_script_timeout(120)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


# Runs in the page: waits for MathJax's first typesetting to finish (or fail), for every image to settle,
# then reports what a reader would see.
INSPECT = r"""
const done = arguments[arguments.length - 1];
const start = Date.now();
function settled(img) {
  return img.complete ? Promise.resolve() : new Promise(r => { img.onload = img.onerror = r; setTimeout(r, 15000); });
}
async function mathjax() {
  while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) {
    if (Date.now() - start > 20000) return window.MathJax ? "MathJax never started" : "MathJax is not on the page";
    await new Promise(r => setTimeout(r, 100));
  }
  try { await MathJax.startup.promise; return "ok"; } catch (e) { return "MathJax failed: " + e; }
}
(async () => {
  const math = document.querySelectorAll("div.math, span.math");
  const mj = math.length ? await mathjax() : "no math";
  await Promise.all([...document.images].map(settled));
  // A widget counts as seen if it rendered, or if a static view (a loaded image, an SVG or a table) stands in its
  // own cell or in a later cell of the same section before the next widget: "the static figure next to it".
  const VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]';
  const rendered = c => c.querySelector(".jupyter-widgets, .widget-container, .lm-Widget, .p-Widget");
  const still = c => [...c.querySelectorAll("img")].some(i => i.naturalWidth > 0) ||
    c.querySelector(".cell_output table") ||                  // svg icons of buttons (copy) are not figures
    [...c.querySelectorAll(".cell_output svg")].some(g => !g.closest("button") && !g.classList.contains("icon"));
  const widgets = [...document.querySelectorAll(VIEW)].map(s => {
    const here = s.closest("div.cell") || s.parentElement;
    let seen = Boolean(rendered(here) || still(here));
    for (let c = here.nextElementSibling; c && !seen && !c.querySelector(VIEW); c = c.nextElementSibling) {
      if (c.matches("div.cell") && still(c)) seen = true;
    }
    return {id: (s.textContent.match(/"model_id":\s*"([^"]+)"/) || [])[1], seen};
  });
  done({
    mathjax: mj,
    math: math.length,
    typeset: [...math].filter(m => m.querySelector("mjx-container")).length,
    // TeX errors; an undefined macro (MathJax's noundefined package) is drawn as red text instead
    merror: [...document.querySelectorAll('mjx-merror, [data-mjx-error], mjx-container [style*="color: red"]')]
              .map(e => (e.getAttribute("data-mjx-error") || e.textContent).slice(0, 80)),
    broken_images: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))
                                       .map(i => i.getAttribute("src")),
    outputs: [...document.querySelectorAll(".cell_output")].map(o => o.innerText),
    widgets,
    launch: [...document.querySelectorAll(".dropdown-launch-buttons a")].map(a => a.href),
    height: Math.max(document.body.scrollHeight, document.documentElement.scrollHeight),
  });
})();
"""


# Runs in the page: every content element (a table, a code or output block, a display equation, a figure's
# image) that is wider than the page's text column, or that hides part of itself behind a horizontal scroll
# (its own or a wrapper's). Each is reported with its kind, its widths in CSS pixels and the heading it sits
# under, so that a failure names what to fix. The column is the article (the theme's main text block).
OVERFLOW = r"""
const col = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
const box = col.getBoundingClientRect();
const KINDS = [["table", "table"], ["pre", "code"], ["mjx-container[display='true']", "equation"],
               ["figure img, .cell_output img", "figure"]];
const seen = new Set(), found = [];
function heading(el) {
  for (let s = el.closest("section"); s; s = s.parentElement && s.parentElement.closest("section")) {
    const h = s.querySelector("h1, h2, h3, h4");
    if (h) return h.textContent.replace(/[#¶]/g, "").trim().slice(0, 70);
  }
  return "";
}
function hidden(el) {     // content spilling out of el, or hidden behind a horizontal scroll of el or a wrapper
  for (let e = el; e && e !== col.parentElement; e = e.parentElement) {
    const ox = getComputedStyle(e).overflowX;
    if ((e === el || ox !== "visible") && e.scrollWidth > e.clientWidth + 1) return [e.scrollWidth, e.clientWidth];
  }
  return null;
}
for (const [sel, kind] of KINDS) {
  for (const el of col.querySelectorAll(sel)) {
    if (seen.has(el) || !el.getClientRects().length) continue;          // not displayed (a closed toggle)
    seen.add(el);
    const r = el.getBoundingClientRect();
    const scroll = hidden(el);
    const wide = r.right > box.right + 1 || r.left < box.left - 1;
    if (wide || scroll) {
      found.push({kind, width: Math.round(scroll ? scroll[0] : r.width), column: Math.round(scroll ? scroll[1] : box.width),
                  under: heading(el), text: (el.textContent || el.getAttribute("alt") || "").trim().slice(0, 60)});
    }
  }
}
return found;
"""


# Runs in the page, at the reader's first screen (scrolled to the top): where the chapter's summary (the first
# paragraph of prose under the title, outside figures, boxes and cells), its first figure and its set-up cell
# are, in CSS pixels from the top of the page. The summary's code spans with an underscore are identifiers
# (tv_norm_nosink) a plain summary should not need.
FIRST_SCREEN = r"""
const col = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
const where = el => { const r = el.getBoundingClientRect();
                      return {top: Math.round(r.top + window.scrollY), bottom: Math.round(r.bottom + window.scrollY)}; };
const prose = [...col.querySelectorAll("p")].filter(p =>
  !p.closest("figure, .admonition, details, div.cell, nav, table, li") && p.innerText.trim().length >= 80);
const summary = prose[0];
const figure = col.querySelector("figure");
const cell = col.querySelector("div.cell");
const input = cell && cell.querySelector(".cell_input");
return {
  summary: summary ? {...where(summary), text: summary.innerText.trim().slice(0, 120),
                      identifiers: [...summary.querySelectorAll("code")].map(c => c.innerText).filter(t => t.includes("_"))}
                   : null,
  figure: figure ? {...where(figure), caption: (figure.querySelector("figcaption") || figure).innerText.trim().slice(0, 80)}
                 : null,
  setup: cell ? {folded: Boolean(input && input.closest("details") && !input.closest("details").open),
                 note: (cell.querySelector("summary") || {innerText: ""}).innerText.trim().slice(0, 120)} : null,
};
"""


@contextlib.contextmanager
def viewport(driver, width: int, height: int):
    """Lay the page out in a ``width`` x ``height`` window (as a reader's browser would), scrolled to the top."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
    try:
        driver.execute_script("window.scrollTo(0, 0)")
        yield driver
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def capture(driver, path: Path) -> Path:
    """A PNG of what the window shows now."""
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "fromSurface": True})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def screenshot(driver, path: Path, width: int = WIDTH) -> Path:
    """A PNG of the whole page as a reader's ``width``-pixel window shows it: the sidebar, the text column
    and every line start where the reader sees them. The window is made as tall as the page (so nothing is
    laid out at another width), captured in one piece, and set back."""
    height = driver.execute_script(
        "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
    with viewport(driver, width, min(int(height), 30000)):
        return capture(driver, path)
