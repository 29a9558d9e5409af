"""The documentation site, built once per test session with ``mkdocs build --strict``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def mkdocs_build(site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of the repository's site into ``site``."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site; the session fails here if the strict build does not pass."""
    site = tmp_path_factory.mktemp("site")
    result = mkdocs_build(site)
    if result.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{result.stderr[-4000:]}")
    return site
