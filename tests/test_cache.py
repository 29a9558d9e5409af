"""One download cache for everything the project keeps outside a clone: the services'
jars, the Mermaid runtime of the site and the proof cache all sit in the folder
``$REPLAY_CONTRACT_CACHE`` names (by default ``~/.cache/replay-contract``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_contract import docs_hooks
from replay_contract.cache import cache_dir
from replay_contract.services import common
from replay_contract.spec import proofcache


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "downloads"
    monkeypatch.setenv("REPLAY_CONTRACT_CACHE", str(folder))
    monkeypatch.delenv("REPLAY_CONTRACT_PROOF_CACHE", raising=False)
    return folder


def test_the_cache_is_the_folder_the_environment_names(root: Path) -> None:
    assert cache_dir() == root
    assert common.cache_dir() == root


def test_the_cache_defaults_to_the_users_cache_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REPLAY_CONTRACT_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_dir() == tmp_path / ".cache" / "replay-contract"


def test_the_proof_cache_is_inside_it(root: Path) -> None:
    assert proofcache.folder() == root / "proofs"


def test_the_site_finds_the_mermaid_runtime_there(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runtime fetched once into the download cache is used without fetching again
    (the site's build reads it from there, not from another cache folder)."""
    monkeypatch.delenv("REPLAY_CONTRACT_MERMAID_JS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(root.parent / "elsewhere"))
    folder = root / f"mermaid-{docs_hooks.MERMAID_VERSION}"
    folder.mkdir(parents=True)
    (folder / "mermaid.min.js").write_text("/* mermaid */")
    (folder / "LICENSE").write_text("licence")
    assert docs_hooks.mermaid_js() == (folder / "mermaid.min.js", folder / "LICENSE")
