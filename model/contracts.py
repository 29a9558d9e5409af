"""The contract variants, as values.

A contract is a handful of rules, each a field of :class:`Contract`:

``match``
    how a saved completion is found for an action: ``position`` (the key, the input's
    position, identity and digest, and the action's causal path), ``identity`` (the
    same without the position) or ``reads`` (``identity`` plus the values the action
    reads now).
``on_miss``
    what a lookup that finds nothing does: ``invalidate`` voids the key's saved entries
    after the position (and those of other inputs at it); ``nothing`` leaves them.
``wait``
    whether an input that arrives before its recorded predecessor waits for it.
``record_order``
    whether and when an input's position is made durable: ``no``,
    ``with-first-completion`` (in the same write as its first saved completion, or on
    its own when it saves none) or ``before-first-tool-call`` (on its own, before its
    first action).
``give_up_after``
    how many inputs of a key may wait for one missing recorded input before it is
    given up. End of input gives up too; so does a later record of the missing input's
    own channel, when ``split_order`` is set.
``give_up_on_timeout``
    whether the contract bounds waiting in processing time: when the wait bound passes
    (a ``timeout`` step), every recorded input that an input of the key waits for is
    given up, so nothing waits longer than the bound, whatever arrives or does not.
    ``false`` is a variant that can wait without bound (it breaks ``bounded-waiting``).
``durable_invalidation`` and ``invalidation_scope``
    whether an invalidation is written to the store, and whether it covers the
    diverging key only (``key``) or every key (``all``).

The five named variants of the published contract are in :data:`CONTRACTS`; a proposed
change is another value of the same class (see :func:`contract_from_json`).
"""

from __future__ import annotations

from typing import Any, Literal

from attrs import evolve, fields, frozen

from .errors import UnknownContractError

Match = Literal["position", "identity", "reads"]
OnMiss = Literal["invalidate", "nothing"]
RecordOrder = Literal["no", "with-first-completion", "before-first-tool-call"]
Scope = Literal["key", "all"]

_CHOICES: dict[str, tuple[str, ...]] = {
    "match": ("position", "identity", "reads"),
    "on_miss": ("invalidate", "nothing"),
    "record_order": ("no", "with-first-completion", "before-first-tool-call"),
    "invalidation_scope": ("key", "all"),
}


@frozen
class Contract:
    name: str
    match: Match = "position"
    on_miss: OnMiss = "invalidate"
    wait: bool = False
    record_order: RecordOrder = "no"
    give_up_after: int = 64
    split_order: bool = True
    give_up_on_timeout: bool = True
    durable_invalidation: bool = True
    invalidation_scope: Scope = "key"
    description: str = ""

    @property
    def basis(self) -> str:
        """What a reuse is judged against: ``reads`` or the preceding ``history``."""
        return "reads" if self.match == "reads" else "history"

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(Contract)}


SEQNUM = Contract(
    "seqnum",
    description="Completions under (key, seq, input, action); the first miss for a key "
    "invalidates that key's later entries.",
)
ORDERED = Contract(
    "ordered",
    on_miss="nothing",
    wait=True,
    record_order="with-first-completion",
    description="The accepted per-key order is recorded; an input is reused only at its "
    "recorded position, and out-of-order arrivals wait for their recorded predecessor.",
)
STABLE_ID = Contract(
    "stable-id",
    match="identity",
    on_miss="nothing",
    description="Completions under input identity only, reused at any position (known unsafe).",
)
READ_SET = Contract(
    "read-set",
    match="reads",
    on_miss="nothing",
    description="Completions with the values each action read; reused when the action "
    "reads the same values now.",
)
NO_DIVERGENCE_CHECK = Contract(
    "no-divergence-check",
    on_miss="nothing",
    description="Like seqnum, but a mismatch never invalidates (known unsafe: it masks "
    "genuine divergence).",
)

CONTRACTS: dict[str, Contract] = {
    c.name: c for c in (SEQNUM, ORDERED, STABLE_ID, READ_SET, NO_DIVERGENCE_CHECK)
}


def contract(name: str) -> Contract:
    """The named contract variant, or a deliberately broken one of :mod:`.mutants` (so
    that its counterexamples replay by name); an unknown name is refused with the
    published ones."""
    from .mutants import MUTANTS

    found = CONTRACTS.get(name) or MUTANTS.get(name)
    if found is None:
        known = ", ".join(CONTRACTS)
        raise UnknownContractError(f"unknown contract {name!r} (known: {known})")
    return found


def contracts(names: str) -> list[Contract]:
    """``all`` or a comma-separated list of contract names."""
    if names == "all":
        return list(CONTRACTS.values())
    chosen = [contract(n.strip()) for n in names.split(",") if n.strip()]
    if not chosen:
        raise UnknownContractError(
            f"no contract named in {names!r} (known: {', '.join(CONTRACTS)}, or all)"
        )
    return chosen


def contract_from_json(data: Any, where: str = "contract") -> Contract:
    """A contract stated as JSON: ``{"name": ..., "based_on": "ordered", <rule>: ...}``."""
    if not isinstance(data, dict):
        raise UnknownContractError(f"{where}: expected a JSON object")
    data = dict(data)
    based_on = data.pop("based_on", "seqnum")
    if not isinstance(based_on, str):
        raise UnknownContractError(f"{where}.based_on: expected a contract name")
    try:
        base = contract(based_on)
    except UnknownContractError as exc:
        raise UnknownContractError(f"{where}.based_on: {exc}") from None
    known = {f.name: f for f in fields(Contract)}
    changes: dict[str, Any] = {}
    for name, value in data.items():
        if name not in known:
            rules = ", ".join(n for n in known if n not in ("name", "description"))
            raise UnknownContractError(
                f"{where}.{name}: unknown field (known: name, based_on, description, and "
                f"the rules {rules})"
            )
        if name in _CHOICES and value not in _CHOICES[name]:
            raise UnknownContractError(
                f"{where}.{name}: {value!r} is not one of {', '.join(_CHOICES[name])}"
            )
        if name in (
            "wait",
            "split_order",
            "give_up_on_timeout",
            "durable_invalidation",
        ) and not isinstance(value, bool):
            raise UnknownContractError(f"{where}.{name}: expected true or false")
        if name == "give_up_after" and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            raise UnknownContractError(f"{where}.{name}: expected a non-negative integer")
        if name == "name" and (not isinstance(value, str) or not value.strip() or "\0" in value):
            raise UnknownContractError(f"{where}.name: expected a non-empty text")
        if name == "description" and not isinstance(value, str):
            raise UnknownContractError(f"{where}.description: expected a text")
        changes[name] = value
    changes.setdefault("name", f"{base.name}-changed")
    return evolve(base, **changes)
