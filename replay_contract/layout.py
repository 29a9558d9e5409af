"""The installed layout of a checkout, for tools that read sources without importing.

``pyproject.toml`` installs the top-level folders ``model/``, ``spec/`` and
``conformance/`` as ``replay_contract.model``, ``replay_contract.spec`` and
``replay_contract.conformance`` (``[tool.setuptools.package-dir]``). Python finds them
through the installer's mapping; mypy and the API pages (griffe) walk folders instead, so
:func:`stage` copies the checkout into that layout for them: ``replay_contract/`` with
each mapped folder inside it, as a wheel would hold it.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

PACKAGE = "replay_contract"


def mapping(root: Path) -> dict[str, str]:
    """The package-dir table of the checkout at ``root``: package name -> folder."""
    data = tomllib.loads((root / "pyproject.toml").read_text())
    table: dict[str, str] = data["tool"]["setuptools"].get("package-dir", {})
    return table


def stage(root: Path, dest: Path) -> Path:
    """Copy the package at ``root`` into ``dest`` in its installed layout (replacing what
    ``dest`` held); the staged package's folder."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    target = dest / PACKAGE
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(root / PACKAGE, target, ignore=ignore)
    for name, folder in mapping(root).items():
        parts = name.split(".")
        if parts[0] != PACKAGE:
            raise ValueError(f"pyproject.toml: package-dir {name!r} is outside {PACKAGE}")
        shutil.copytree(root / folder, dest.joinpath(*parts), ignore=ignore)
    return target
