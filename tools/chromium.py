"""Debian's headless Chromium for the built book: a loopback server for a site folder, a browser driven
through its own chromedriver, and the script that inspects a page as a reader sees it. Shared by the browser
test (tests/browser) and the PDF of the book (tools/book_pdf.py, `make pdf`); `make chromium` installs both
programs where they are missing.
"""
import contextlib
import functools
import http.server
import os
import shutil
import tempfile
import threading
from pathlib import Path

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


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
def browser(width: int = 1280, height: int = 900):
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
