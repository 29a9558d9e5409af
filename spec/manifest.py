"""The manifest of expected verdicts: ``spec/manifest.json``.

One object per (contract, property): the bound, the expected verdict, the time budget in
seconds and, for a counterexample, the scenario file (under ``spec/counterexamples/``)
that ``simulate`` replays. ``status`` says how the verdict is established today:
``verified`` (``verify`` reaches it within the budget, checked by
``tests/spec/test_manifest.py``) or ``explorer-only`` (the exhaustive explorer of the
model gives it at that bound, the symbolic proof does not finish within the budget yet).

:func:`check` runs ``verify`` (with :data:`.bound.MANIFEST_ENGINE`, the opt-in
every-bound steps where they fit, and the reachability checks) on every ``verified``
entry and reports any difference (``tests/spec/test_manifest.py``); the command line's
``verify --contract all --manifest`` compares every verdict with the manifest.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from attrs import frozen

from replay_contract.model.contracts import CONTRACTS
from replay_contract.model.scenario import Scenario, loads

from .bound import MANIFEST_ENGINE, Bound, parse

#: The folder of this package in a checkout. Reading goes through :mod:`importlib.resources`,
#: so that an installed wheel reads the manifest and the counterexamples it ships as package
#: data.
ROOT = Path(__file__).resolve().parent


@frozen
class Expected:
    contract: str
    property: str
    verdict: str
    bound: Bound
    budget: float
    status: str
    counterexample: str = ""


def load(path: Path | None = None) -> list[Expected]:
    """The manifest's entries: the packaged ``manifest.json``, or the file at ``path``."""
    text = path.read_text() if path is not None else _packaged("manifest.json")
    data = json.loads(text)
    out = []
    for item in data["verdicts"]:
        out.append(
            Expected(
                item["contract"],
                item["property"],
                item["verdict"],
                parse(item["bound"]),
                float(item["budget"]),
                item["status"],
                item.get("counterexample", ""),
            )
        )
    return out


def counterexample(e: Expected) -> Scenario:
    """The counterexample scenario an entry names (``spec/counterexamples/NAME.json``),
    read from the package's data."""
    if not e.counterexample:
        raise ValueError(f"{e.contract} / {e.property}: the manifest names no counterexample")
    relative = e.counterexample.removeprefix("spec/")
    return loads(_packaged(*relative.split("/")), e.counterexample)


def _packaged(*parts: str) -> str:
    return resources.files(__package__).joinpath(*parts).read_text()


def check(entries: list[Expected]) -> list[str]:
    """Run ``verify`` on the ``verified`` entries; the differences, as lines."""
    from .verify import verify_contract

    problems = []
    groups: dict[tuple[str, str], list[Expected]] = {}
    for e in entries:
        if e.status == "verified":
            groups.setdefault((e.contract, str(e.bound)), []).append(e)
    for (name, _), group in groups.items():
        bound = group[0].bound
        results = verify_contract(
            CONTRACTS[name],
            bound,
            [e.property for e in group],
            timeout=max(e.budget for e in group),
            engine=MANIFEST_ENGINE,
        )
        for e, r in zip(group, results, strict=True):
            if r.verdict != e.verdict:
                problems.append(
                    f"{name} / {e.property} at {bound}: expected {e.verdict}, "
                    f"verify says {r.verdict} {r.reason}".rstrip()
                )
            elif r.seconds > e.budget:
                problems.append(
                    f"{name} / {e.property}: {r.seconds:.1f} s, over the budget of {e.budget:g} s"
                )
    return problems


def to_json(entries: list[Expected]) -> dict[str, Any]:
    return {
        "verdicts": [
            {
                "contract": e.contract,
                "property": e.property,
                "verdict": e.verdict,
                "bound": str(e.bound),
                "budget": e.budget,
                "status": e.status,
                **({"counterexample": e.counterexample} if e.counterexample else {}),
            }
            for e in entries
        ]
    }
