"""Which part of the package may import which: the model, the specification, the
conformance suite, the runtime and the services never import the command line; the
runtime never imports the test mutants; errors come from replay_contract.errors."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Folder of the checkout -> the package it installs as.
PARTS = {
    "model": "replay_contract.model",
    "spec": "replay_contract.spec",
    "conformance": "replay_contract.conformance",
    "replay_contract/runtime": "replay_contract.runtime",
    "replay_contract/services": "replay_contract.services",
}


def imports(path: Path, package: str) -> set[str]:
    """Every module a file imports (at any depth of the file), relative ones resolved."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return names


def offenders(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    out = []
    for path in sorted((ROOT / folder).glob("*.py")):
        for name in imports(path, PARTS[folder]):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                out.append(f"{path.relative_to(ROOT)} imports {name}")
    return out


@pytest.mark.parametrize("folder", sorted(PARTS))
def test_no_part_imports_the_command_line(folder: str) -> None:
    assert offenders(folder, ("replay_contract.cli", "replay_contract.commands")) == []


def test_the_runtime_does_not_import_the_mutants() -> None:
    assert offenders("replay_contract/runtime", ("replay_contract.model.mutants",)) == []


def test_the_check_itself_sees_imports() -> None:
    """The checker resolves relative imports (a check that finds nothing proves nothing)."""
    found = imports(ROOT / "conformance" / "targets.py", PARTS["conformance"])
    assert "replay_contract.conformance.interface.Implementation" in found
    assert "replay_contract.errors.CommandError" in found


def test_the_model_does_not_import_the_specification() -> None:
    """The specification reads the model; the model never reads the specification."""
    assert offenders("model", ("replay_contract.spec",)) == []
