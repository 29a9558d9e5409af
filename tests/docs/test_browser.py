"""The built site in a real headless browser: links, Mermaid diagrams, screenshots.

Needs Debian's chromium (``apt-get install -y chromium``); skipped, with that reason,
where it is not installed. Screenshots go to ``out/docs-screenshots/``.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from .conftest import ROOT


def _browser_check() -> ModuleType:
    path = Path(__file__).with_name("browser_check.py")
    spec = importlib.util.spec_from_file_location("browser_check", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["browser_check"] = module
    spec.loader.exec_module(module)
    return module


bc = _browser_check()
needs_chromium = pytest.mark.skipif(
    bc.chromium() is None, reason="chromium is not installed (apt-get install -y chromium)"
)
pytestmark = pytest.mark.browser


def test_internal_links_resolve(built_site: Path) -> None:
    assert bc.broken_links(built_site) == []


def test_link_check_finds_a_broken_link(built_site: Path, tmp_path: Path) -> None:
    copy = tmp_path / "site"
    shutil.copytree(built_site, copy)
    page = copy / "contract/index.html"
    page.write_text(
        page.read_text().replace(
            "</body>", '<a href="../nowhere/">x</a><a href="#no-such-anchor">y</a></body>'
        )
    )
    problems = bc.broken_links(copy)
    assert any("nowhere" in p and "no such file" in p for p in problems)
    assert any("no-such-anchor" in p for p in problems)


@needs_chromium
def test_site_renders_in_chromium(built_site: Path) -> None:
    shots = ROOT / "out" / "docs-screenshots"
    assert bc.check(built_site, shots) == []
    for name in ("contract", "properties", "topologies", "index"):
        assert (shots / f"{name}.png").stat().st_size > 20_000


def test_every_job_graph_is_checked(built_site: Path) -> None:
    pages = bc.pages_with_diagrams(built_site)
    assert pages["topologies/"] == 5
    assert pages[""] == 1  # the picture of the problem on the overview


@needs_chromium
def test_diagram_check_fails_on_a_broken_job_graph(built_site: Path, tmp_path: Path) -> None:
    copy = tmp_path / "site"
    shutil.copytree(built_site, copy)
    page = copy / "topologies/index.html"
    page.write_text(page.read_text().replace("flowchart LR", "flowchart LR\n    a -->", 1))
    problems = bc.diagram_problems(bc.chromium(), copy, only=("topologies/",))
    assert len(problems) == 1
    assert problems[0].startswith("topologies/: 4 of 5 Mermaid diagrams rendered to SVG")


@needs_chromium
def test_cut_off_check_fails_without_the_stylesheet(built_site: Path, tmp_path: Path) -> None:
    copy = tmp_path / "site"
    shutil.copytree(built_site, copy)
    (copy / "stylesheets/extra.css").write_text("/* removed */")
    problems = bc.cut_off(bc.chromium(), copy, widths=(1920,), only=("", "contract/"))
    # The overview's command output is wider than Material's column and scrolls ...
    assert any(p.startswith("index at 1920 px: code") and "needs" in p for p in problems)
    # ... and Material lets the code spans of a table break inside a word.
    assert any(p.startswith("contract/ at 1920 px:") and "mid-word" in p for p in problems)


@needs_chromium
def test_diagram_check_fails_without_the_mermaid_runtime(built_site: Path, tmp_path: Path) -> None:
    copy = tmp_path / "site"
    shutil.copytree(built_site, copy)
    (copy / "assets/javascripts/mermaid.min.js").write_text("/* removed */")
    problems = bc.diagram_problems(bc.chromium(), copy)
    assert any("contract/" in p and "0 of 2" in p for p in problems)
