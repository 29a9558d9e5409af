"""The built-in catalogue of scenarios (JSON files shipped in ``catalogue/``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .errors import ScenarioError
from .scenario import Scenario, load, loads


def names() -> list[str]:
    folder = resources.files(__package__).joinpath("catalogue")
    return sorted(
        p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json")
    )


def builtin(name: str) -> Scenario:
    if name not in names():
        raise ScenarioError(f"no built-in scenario {name!r} (known: {', '.join(names())})")
    text = resources.files(__package__).joinpath("catalogue", f"{name}.json").read_text()
    return loads(text, name)


def resolve(ref: str) -> Scenario:
    """A scenario file's path, or the name of a built-in scenario (a name that is both
    is refused: ``./NAME`` is the file)."""
    if ref in names():
        if Path(ref).exists():
            raise ScenarioError(
                f"{ref}: both a file here and a built-in scenario; "
                f"write ./{ref} for the file or rename it"
            )
        return builtin(ref)
    if ref.endswith(".json") or Path(ref).exists():
        return load(ref)
    raise ScenarioError(
        f"{ref}: neither a scenario file nor a built-in scenario (built-in: {', '.join(names())})"
    )


def all_builtin() -> list[Scenario]:
    return [builtin(n) for n in names()]
