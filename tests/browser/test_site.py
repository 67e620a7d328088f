"""The built book as a reader's browser shows it: every page of the table of contents, in headless Chromium.

Run by `make browser` (part of `make test`), which builds the strict site first, installs Debian's chromium and
chromium-driver if they are missing, and sets CONNLAP_SITE to the site's folder. Each page must load with no
severe console message, have all its math typeset by MathJax, all its images loaded, no traceback in any cell
output, and a rendered or static view for every widget; notebook pages must offer the Colab launch button.
A full-page screenshot of each page goes to _build/screenshots/<page>.png.

    CONNLAP_SITE=_build/strict/_build/html .venv/bin/python -m pytest -q tests/browser
"""
import functools
import http.server
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

import pytest
import yaml

import conftest

ROOT = Path(__file__).resolve().parents[2]
if not os.environ.get("CONNLAP_SITE"):
    pytest.skip("the browser test runs through `make browser`, which sets CONNLAP_SITE", allow_module_level=True)

SITE = (ROOT / os.environ["CONNLAP_SITE"]).resolve()
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())

# Live widgets need JavaScript that Jupyter Book (myst-nb's nb_ipywidgets_js) takes from these CDNs. The test
# machine has no network, so their loads fail there; on the published site they succeed. Failures to load from
# exactly these hosts are the only console errors let through, and every widget must still show a static view
# (checked below), so a page never depends on them.
WIDGET_CDNS = ("https://cdnjs.cloudflare.com/ajax/libs/require.js/", "https://cdn.jsdelivr.net/npm/@jupyter-widgets/",
               "https://unpkg.com/@jupyter-widgets/")


def toc_pages():
    """Every page of _toc.yml, in reading order (the files on disk are checked against it below)."""
    return conftest.toc_files(TOC)


PAGES = toc_pages()


@pytest.fixture(scope="session")
def site():
    """The site served by python's http.server on a free loopback port; the base URL."""
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE}: run `make html-strict` (or `make browser`, which builds it)")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(SITE)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    """Headless Debian Chromium through its own chromedriver (Selenium Manager is never asked to download)."""
    for exe in (CHROMIUM, CHROMEDRIVER):
        if not exe.exists():
            pytest.fail(f"{exe} is missing: `make chromium` installs Debian's chromium and chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="connlap-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1280,900",
                 f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    os.environ["SE_OFFLINE"] = "true"           # Selenium Manager, should anything call it: no downloads
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=opts)
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(60)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def test_every_toc_page_was_built_and_every_built_page_is_in_the_toc():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site at {SITE}: run `make html-strict`")
    built = {p.relative_to(SITE).with_suffix("").as_posix() for p in (SITE / "book").rglob("*.html")}
    assert set(PAGES) == built, f"toc pages without HTML: {set(PAGES) - built}; HTML not in the toc: {built - set(PAGES)}"


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
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|\x1b\[|\[0;3\dm|^\s*[A-Z]\w*(?:Error|Exception): ", re.M)


# Jupyter Book 1's toolchain (sphinx-thebe 0.3.1 under Sphinx 7.4) writes sphinx-thebe's one-line configuration
# script twice into every page's <head>, so the second `const THEBE_JS_URL = ...` fails to redeclare the constant.
# Both copies are identical and this book does not use thebe (its launch button is Colab's), so nothing a reader
# sees depends on it. This one message, and only in that exact wording, is let through.
THEBE_TWICE = "Uncaught SyntaxError: Identifier 'THEBE_JS_URL' has already been declared"


def severe_console_messages(driver):
    """Severe browser-log entries, less the widget CDN failures (WIDGET_CDNS) and THEBE_TWICE explained above."""
    bad = []
    for entry in driver.get_log("browser"):
        if entry["level"] != "SEVERE":
            continue
        msg = entry["message"]
        if any(msg.startswith(cdn) or f" {cdn}" in msg for cdn in WIDGET_CDNS) and "net::ERR_" in msg:
            continue
        if msg.endswith(THEBE_TWICE):
            continue
        bad.append(msg)
    return bad


def screenshot(driver, page, height):
    """A full-page PNG through the DevTools protocol (the window itself stays 900 px high)."""
    import base64
    width = driver.execute_script("return document.documentElement.clientWidth")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": min(height, 30000), "scale": 1}})
    path = SHOTS / f"{page}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


@pytest.mark.parametrize("page", PAGES)
def test_page_renders(page, site, browser):
    html = SITE / f"{page}.html"
    assert html.is_file(), f"{page} is in _toc.yml but the site has no {html.relative_to(SITE)}"
    browser.get_log("browser")                                    # drop what earlier pages logged
    browser.get(site + f"{page}.html")
    seen = browser.execute_async_script(INSPECT)
    path = screenshot(browser, page, seen["height"])
    problems = []
    console = severe_console_messages(browser)
    if console:
        problems.append(f"console errors: {console}")
    if seen["math"]:
        if seen["mathjax"] != "ok":
            problems.append(f"{seen['math']} math elements, but {seen['mathjax']}")
        elif seen["typeset"] < seen["math"]:
            problems.append(f"MathJax typeset {seen['typeset']} of {seen['math']} math elements")
    if seen["merror"]:
        problems.append(f"MathJax errors (undefined macro or bad TeX): {seen['merror'][:5]}")
    if seen["broken_images"]:
        problems.append(f"images that did not load: {seen['broken_images']}")
    tracebacks = [o[:300] for o in seen["outputs"] if TRACEBACK.search(o)]
    if tracebacks:
        problems.append(f"{len(tracebacks)} cell outputs show an error: {tracebacks[:3]}")
    blind = [w["id"] for w in seen["widgets"] if not w["seen"]]
    if blind:
        problems.append(f"widgets with neither a rendered view nor a static figure beside them: {blind}")
    if (SITE / "_sources" / f"{page}.ipynb").exists():
        repo = CONFIG["repository"]
        owner_name = repo["url"].rstrip("/").removeprefix("https://github.com/")
        colab = (f"https://colab.research.google.com/github/{owner_name}/blob/{repo.get('branch', 'main')}/"
                 f"{(Path(repo.get('path_to_book') or '') / page).as_posix()}.ipynb")
        if colab not in seen["launch"]:
            problems.append(f"no Colab launch button to {colab} (launch buttons: {seen['launch']})")
    assert not problems, f"{page} ({path.relative_to(ROOT)}):\n  " + "\n  ".join(problems)
