"""Check a built documentation site in a real headless browser (Debian's chromium).

    python tests/docs/browser_check.py SITE_DIR [--shots DIR]

It serves SITE_DIR on 127.0.0.1 and checks that:

- every internal link and asset of every page resolves: the file exists and, for a
  link with a fragment, the target page has an element with that id;
- every Mermaid diagram renders into an SVG in chromium. mkdocs-material renders each
  diagram into a closed shadow root, which ``--dump-dom`` cannot show; the check
  therefore loads a copy of each page in which ``attachShadow`` returns the element
  itself, so the SVG that Mermaid produced lands in the dumped DOM;
- no command output, code block, table or diagram is cut off (wider than the content
  column, behind a scroll bar) at 1920 and 1280 px, and no code span of a table cell
  may break inside a word (:func:`cut_off`);
- the contract, properties, topologies and overview pages render: it takes
  screenshots of them (and of the contract page's first diagram) into the ``--shots``
  folder.

Exit status 0 when everything holds, 1 with one line per problem otherwise, 2 when
chromium is not installed.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import html.parser
import http.server
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
#: Pages whose screenshots the check takes, with the window height for each.
SCREENSHOTS = {
    "contract": ("contract/", 2400),
    "properties": ("properties/", 2400),
    "topologies": ("topologies/", 4800),
    "index": ("", 2400),
}
#: Replaces the closed shadow root that mkdocs-material renders a diagram into.
PROBE = "<script>Element.prototype.attachShadow = function () { return this; };</script>"
#: Window widths at which no command output or table may be cut off.
WIDTHS = (1920, 1280)
#: Once the page is laid out, lists every code block, table or diagram of the content
#: that is wider than the box it sits in (it would need a scroll bar, or is clipped),
#: and every code span in a table cell that the browser may break inside a word, as
#: JSON in an element ``#rc-cut`` that ``--dump-dom`` shows.
CUT_PROBE = """<script>
window.addEventListener("load", () => setTimeout(() => {
  const cut = [];
  const what = (el) => el.tagName.toLowerCase() + " \\"" +
    (el.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 60) + "\\"";
  // The scroll wrappers of tables reach a little past the text on purpose; the column
  // they may not leave is the content area itself.
  const content = document.querySelector(".md-content");
  const right = content ? content.getBoundingClientRect().right : innerWidth;
  for (const el of document.querySelectorAll(
      ".md-content pre > code, .md-content table, .md-content .md-typeset__scrollwrap," +
      " .md-content .md-typeset__table, .md-content div.mermaid")) {
    if (el.scrollWidth > el.clientWidth + 1) {
      cut.push(what(el) + " needs " + el.scrollWidth + " px, has " + el.clientWidth);
    } else if (el.getBoundingClientRect().right > right + 1) {
      cut.push(what(el) + " sticks out of the content column");
    }
  }
  let breaking = 0, example = "";
  for (const el of document.querySelectorAll(".md-content td code, .md-content th code")) {
    const style = getComputedStyle(el);
    if (style.wordBreak === "break-all" || style.wordBreak === "break-word" ||
        style.overflowWrap === "anywhere" || style.overflowWrap === "break-word") {
      breaking += 1;
      example = example || what(el) + " (" + style.wordBreak + ", " + style.overflowWrap + ")";
    }
  }
  if (breaking) {
    cut.push(breaking + " code spans in table cells may break mid-word, such as " + example);
  }
  const out = document.createElement("pre");
  out.id = "rc-cut";
  out.textContent = JSON.stringify(cut);
  document.body.appendChild(out);
}, 200));
</script>"""


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


# -- links ------------------------------------------------------------------------------


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.mermaid = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if a.get("name") and tag == "a":
            self.ids.add(str(a["name"]))
        for attr in ("href", "src"):
            value = a.get(attr)
            if value and not (tag == "link" and a.get("rel") in ("canonical", "alternate")):
                self.links.append(value)
        if tag == "pre" and "mermaid" in (a.get("class") or "").split():
            self.mermaid += 1


@functools.cache
def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(errors="replace"))
    return page


def _target(site: Path, page: Path, link: str) -> tuple[Path, str] | None:
    """The file and fragment an internal link points at; None for an external one."""
    parts = urllib.parse.urlsplit(link)
    if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:", "data:")):
        return None
    path = urllib.parse.unquote(parts.path)
    if path.startswith("/"):
        target = site / path.lstrip("/")
    elif path:
        target = (page.parent / path).resolve()
    else:
        target = page
    if target.is_dir() or path.endswith("/"):
        target = target / "index.html"
    return target, urllib.parse.unquote(parts.fragment)


def broken_links(site: Path) -> list[str]:
    """Every internal link or asset of every page that does not resolve."""
    site = site.resolve()
    problems = []
    for page in sorted(site.rglob("*.html")):
        for link in _parse(page).links:
            found = _target(site, page, link)
            if found is None:
                continue
            target, fragment = found
            where = f"{page.relative_to(site)}: {link}"
            if not target.is_relative_to(site) or not target.exists():
                problems.append(f"{where}: no such file")
            elif fragment and target.suffix == ".html" and fragment not in _parse(target).ids:
                problems.append(f"{where}: no element with id {fragment!r}")
    return problems


def pages_with_diagrams(site: Path) -> dict[str, int]:
    """Site-relative URL of each page with Mermaid diagrams, and how many it has."""
    out = {}
    for page in sorted(site.rglob("*.html")):
        count = _parse(page).mermaid
        if count:
            rel = page.relative_to(site).as_posix()
            out[rel.removesuffix("index.html")] = count
    return out


# -- the browser ------------------------------------------------------------------------


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve a folder on 127.0.0.1 (a free port) for the duration of the block."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def _browse(browser: str, url: str, *args: str, budget_ms: int = 10000) -> str:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        done = subprocess.run(
            [
                browser,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--virtual-time-budget={budget_ms}",
                *args,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"chromium exited {done.returncode} on {url}: {done.stderr[-500:]}")
    return done.stdout


def dump_dom(browser: str, url: str) -> str:
    return _browse(browser, url, "--dump-dom")


def screenshot(browser: str, url: str, out: Path, height: int) -> Path:
    _browse(browser, url, f"--window-size=1280,{height}", f"--screenshot={out}")
    if not out.exists() or out.stat().st_size < 20_000:
        raise RuntimeError(f"the screenshot of {url} is missing or blank")
    return out


def _probe_copy(site: Path, folder: Path) -> None:
    """A copy of the site in which diagrams render into the light DOM, and each page
    reports what of its content is cut off (:data:`CUT_PROBE`)."""
    shutil.copytree(site, folder, dirs_exist_ok=True)
    for page in folder.rglob("*.html"):
        text = page.read_text()
        text = text.replace("<head>", "<head>" + PROBE, 1)
        page.write_text(text.replace("</body>", CUT_PROBE + "</body>", 1))


_CUT = re.compile(r'<pre id="rc-cut">(.*?)</pre>', re.S)


#: A diagram Mermaid rendered: a sequence diagram or a flowchart (a job graph).
_SVG = re.compile(
    r'<div class="mermaid"[^>]*>\s*<svg[^>]*aria-roledescription="(?:sequence|flowchart-v2)"'
)


def probe_pages(
    browser: str, site: Path, widths: tuple[int, ...] = WIDTHS, only: tuple[str, ...] = ()
) -> dict[tuple[str, int], str]:
    """The DOM of every page (or of the site-relative URLs in ``only``) at each window
    width, laid out in chromium from a probe copy of the site (:func:`_probe_copy`):
    diagrams rendered into the light DOM, and what is cut off listed in ``#rc-cut``.
    One load per page and width serves both checks."""
    doms = {}
    with tempfile.TemporaryDirectory(prefix="site-probe-") as tmp:
        probe = Path(tmp)
        _probe_copy(site, probe)
        with serve(probe) as base:
            for page in sorted(site.rglob("*.html")):
                rel = page.relative_to(site).as_posix()
                url = rel.removesuffix("index.html")
                if rel == "404.html" or (only and url not in only):
                    continue
                for width in widths:
                    doms[url, width] = _browse(
                        browser, base + url, "--dump-dom", f"--window-size={width},1200"
                    )
    return doms


def _diagrams(site: Path, doms: dict[tuple[str, int], str]) -> list[str]:
    problems = []
    width = min(w for _, w in doms) if doms else 0
    for rel, expected in pages_with_diagrams(site).items():
        dom = doms.get((rel, width))
        if dom is None:
            continue
        rendered = len(_SVG.findall(dom))
        left = dom.count('<pre class="mermaid"')
        if rendered != expected or left:
            problems.append(
                f"{rel or 'index'}: {rendered} of {expected} Mermaid diagrams rendered "
                f"to SVG, {left} left unrendered"
            )
    return problems


def _cut(doms: dict[tuple[str, int], str]) -> list[str]:
    import html as html_text
    import json

    problems = []
    for (url, width), dom in doms.items():
        found = _CUT.search(dom)
        if found is None:
            problems.append(f"{url or 'index'} at {width} px: the page did not lay out")
            continue
        for item in json.loads(html_text.unescape(found.group(1))):
            problems.append(f"{url or 'index'} at {width} px: {item}")
    return problems


def diagram_problems(browser: str, site: Path, only: tuple[str, ...] = ()) -> list[str]:
    """Pages whose Mermaid diagrams did not all render into an SVG (a sequence diagram
    or a flowchart)."""
    pages = tuple(pages_with_diagrams(site))
    wanted = tuple(p for p in pages if not only or p in only)
    return _diagrams(site, probe_pages(browser, site, (WIDTHS[-1],), wanted))


def cut_off(
    browser: str, site: Path, widths: tuple[int, ...] = WIDTHS, only: tuple[str, ...] = ()
) -> list[str]:
    """Every code block, table or diagram that does not fit the content column, and
    every code span of a table that may break mid-word, on every page (or the pages of
    ``only``, site-relative URLs such as ``contract/``), at each window width."""
    return _cut(probe_pages(browser, site, widths, only))


def check(site: Path, shots: Path | None) -> list[str]:
    browser = chromium()
    if browser is None:
        raise FileNotFoundError("chromium is not installed (apt-get install -y chromium)")
    problems = broken_links(site)
    if not pages_with_diagrams(site):
        problems.append("no page has a Mermaid diagram")
    doms = probe_pages(browser, site)
    problems += _diagrams(site, doms)
    problems += _cut(doms)
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
        with serve(site) as base:
            for name, (rel, height) in SCREENSHOTS.items():
                screenshot(browser, base + rel, shots / f"{name}.png", height)
            # The first diagram of the contract page, taken from a window tall enough
            # to reach it (a fragment URL does not scroll a headless screenshot).
            screenshot(browser, base + "contract/", shots / "contract-full.png", 12000)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="the built site (mkdocs build -d SITE)")
    parser.add_argument("--shots", type=Path, help="write screenshots to this folder")
    args = parser.parse_args(argv)
    try:
        problems = check(args.site, args.shots)
    except FileNotFoundError as exc:
        print(f"browser check: {exc}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"browser check: {problem}", file=sys.stderr)
    if not problems:
        print(
            "browser check: links resolve, diagrams render, nothing is cut off, screenshots taken"
        )
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
