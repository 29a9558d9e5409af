"""The mkdocs hooks of the documentation site (``hooks:`` in ``mkdocs.yml``).

- ``on_page_markdown`` expands the ``<!-- gen: ... -->`` markers of every page with
  :func:`replay_contract.docs_gen.expand_markers`.
- ``on_startup`` stages the package in its installed layout under ``build/api-src``
  (:func:`replay_contract.layout.stage`), where the API pages read the docstrings.
- ``on_files`` adds the Mermaid runtime to the site (:func:`mermaid_js`) so that the
  diagrams render without a CDN, and a stand-in page for the process protocol while
  ``docs/protocol.md`` does not exist yet.

The Mermaid runtime is the ``mermaid`` package of the npm registry at a pinned version,
checked against a pinned SHA-512 digest, fetched once with ``npm pack`` into the download cache
(:func:`replay_contract.cache.cache_dir`: ``$REPLAY_CONTRACT_CACHE``, by default
``~/.cache/replay-contract``).
``REPLAY_CONTRACT_MERMAID_JS`` may name a ``mermaid.min.js`` to use instead (for a
machine that cannot reach the registry).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from replay_contract.cache import cache_dir
from replay_contract.docs_gen import GenerationError, expand_markers
from replay_contract.layout import stage

log = logging.getLogger("mkdocs.hooks.replay_contract")

MERMAID_VERSION = "11.17.2"
MERMAID_INTEGRITY = (
    "sha512-V6K3C8EBdEsPFZXSKMJe6ppQOENxuHARr9GvHX4hh47lAbhMRD9qf4oEK7LoaRQx"
    "ULMa80/qt5gHO73aCleBBg=="
)
#: Where the runtime sits in the built site (``extra_javascript`` names it).
MERMAID_URI = "assets/javascripts/mermaid.min.js"
MERMAID_LICENSE_URI = "assets/javascripts/mermaid.LICENSE.txt"

PROTOCOL_STAND_IN = """# The process protocol

The line-oriented JSON protocol that lets the conformance suite drive an
implementation in another process is being written. Until this page is published,
the interface it carries is `replay_contract.conformance.interface`, described in the
[Python API](reference/api.md).
"""


class MermaidUnavailable(RuntimeError):
    """The Mermaid runtime is neither cached nor fetchable."""


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def mermaid_js() -> tuple[Path, Path | None]:
    """The pinned ``mermaid.min.js`` and its licence, fetched into the cache on first use."""
    override = os.environ.get("REPLAY_CONTRACT_MERMAID_JS")
    if override:
        return Path(override), None
    folder = cache_dir() / f"mermaid-{MERMAID_VERSION}"
    script, licence = folder / "mermaid.min.js", folder / "LICENSE"
    if script.exists() and licence.exists():
        return script, licence
    npm = shutil.which("npm")
    if npm is None:
        raise MermaidUnavailable(
            f"mermaid {MERMAID_VERSION} is not cached in {folder} and "
            "npm is not installed (or set REPLAY_CONTRACT_MERMAID_JS)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [npm, "pack", f"mermaid@{MERMAID_VERSION}", "--silent", "--pack-destination", tmp],
            capture_output=True,
            text=True,
            check=False,
        )
        tarballs = list(Path(tmp).glob("mermaid-*.tgz"))
        if done.returncode != 0 or not tarballs:
            raise MermaidUnavailable(
                f"npm pack mermaid@{MERMAID_VERSION} failed: {done.stderr.strip()[:300]}"
            )
        data = tarballs[0].read_bytes()
        if _integrity(data) != MERMAID_INTEGRITY:
            raise MermaidUnavailable(
                f"mermaid@{MERMAID_VERSION}: the tarball's digest is not the pinned one"
            )
        folder.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarballs[0]) as tar:
            for member, target in (
                ("package/dist/mermaid.min.js", script),
                ("package/LICENSE", licence),
            ):
                source = tar.extractfile(member)
                if source is None:
                    raise MermaidUnavailable(f"mermaid@{MERMAID_VERSION} lacks {member}")
                partial = target.with_suffix(".partial")
                partial.write_bytes(source.read())
                partial.replace(target)
    log.info("fetched mermaid %s into %s", MERMAID_VERSION, folder)
    return script, licence


# -- mkdocs events ----------------------------------------------------------------------


def _root(config: Any) -> Path:
    return Path(config["config_file_path"]).resolve().parent


#: Where ``on_startup`` stages the package for the API pages (``paths`` of the
#: mkdocstrings handler in ``mkdocs.yml``), below the checkout that holds this hook.
API_SOURCES = Path("build") / "api-src"


def on_startup(command: str, dirty: bool) -> None:
    # before any plugin's on_config: the handler's paths must exist when it starts
    root = Path(__file__).resolve().parents[1]
    stage(root, root / API_SOURCES)


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    try:
        script, licence = mermaid_js()
    except MermaidUnavailable as exc:
        from mkdocs.exceptions import PluginError

        raise PluginError(f"the Mermaid runtime: {exc}") from None
    files.append(File.generated(config, MERMAID_URI, abs_src_path=str(script)))
    if licence is not None:
        files.append(File.generated(config, MERMAID_LICENSE_URI, abs_src_path=str(licence)))
    if files.get_file_from_path("protocol.md") is None:
        files.append(File.generated(config, "protocol.md", content=PROTOCOL_STAND_IN))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    try:
        return expand_markers(markdown, _root(config), page.file.src_uri)
    except GenerationError as exc:
        from mkdocs.exceptions import PluginError

        raise PluginError(str(exc)) from None
