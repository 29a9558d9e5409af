"""The bound of a proof: how many inputs, channels, keys, crashes and replay changes.

A bound is written ``inputs=6,channels=2,keys=2,crashes=2``; ``changes`` (how many
records a non-replayable channel may lose or change on re-delivery, default 1),
``timeouts`` (how many ``timeout`` steps a run may have, default 0: the wait bound
passes only where asked, for ``bounded-waiting``) and
``agents`` (which agents of :data:`replay_contract.model.bounded.AGENTS`, separated by
``+``, default all) may be added. Missing dimensions take their default.
"""

from __future__ import annotations

from attrs import evolve, frozen

from replay_contract.model.bounded import AGENTS


class BoundError(ValueError):
    """A bound that cannot be parsed; the message is one line."""


@frozen
class Bound:
    inputs: int = 6
    channels: int = 2
    keys: int = 2
    crashes: int = 2
    changes: int = 1
    agents: tuple[str, ...] = tuple(AGENTS)
    timeouts: int = 0

    def __str__(self) -> str:
        text = (
            f"inputs={self.inputs},channels={self.channels},keys={self.keys},crashes={self.crashes}"
        )
        if self.changes != 1:
            text += f",changes={self.changes}"
        if self.timeouts:
            text += f",timeouts={self.timeouts}"
        if self.agents != tuple(AGENTS):
            text += f",agents={'+'.join(self.agents)}"
        return text

    def to_json(self) -> dict[str, object]:
        return {
            "inputs": self.inputs,
            "channels": self.channels,
            "keys": self.keys,
            "crashes": self.crashes,
            "changes": self.changes,
            "timeouts": self.timeouts,
            "agents": list(self.agents),
        }


#: The bound ``verify`` uses unless told: the one spec/manifest.json records. A larger
#: bound is asked for with ``--bound``; the induction engine's proofs grow with the
#: number of inputs and crashes.
DEFAULT = Bound(inputs=6, channels=2, keys=2, crashes=2)

#: How ``verify`` may prove a property (docs/howto/verify.md), and the one it uses
#: unless told: induction where it has an invariant for the contract, the unrolling for
#: the rest (both over the one machine of :mod:`.encoding`). ``parametric`` is opt-in:
#: the every-bound steps of :mod:`.everybound`, hand-written second models of the
#: machine (spec/everybound/README.md says what they prove and what rests on tests).
ENGINES = ("unrolling", "induction", "parametric")
DEFAULT_ENGINE = "induction"

#: The engine the manifest's verdicts are checked with (``verify --manifest`` unless
#: told, and tests/spec/test_manifest.py): the opt-in every-bound steps where they fit,
#: so that the check of all published verdicts stays within minutes.
MANIFEST_ENGINE = "parametric"

_NUMBERS = ("inputs", "channels", "keys", "crashes", "changes", "timeouts")

#: The largest bound ``verify`` is known to finish (docs/howto/verify.md): the witnesses
#: and the induction engine's proofs of ``seqnum`` at it take minutes on 2 cores. A
#: contract that waits (``ordered``) takes tens of minutes already at :data:`DEFAULT`
#: (the figure :func:`too_large` gives, as the docs do).
LARGEST_KNOWN = Bound(inputs=8, channels=3, keys=2, crashes=2)

#: The most of each dimension ``verify`` accepts. Every engine's formulas, its witness
#: search or its reachability checks grow with the bound; beyond this, each dimension is
#: far past what any engine has been seen to finish, so the bound is refused before any
#: work is done instead of left encoding for hours.
LIMIT = Bound(inputs=12, channels=4, keys=3, crashes=3, changes=2, timeouts=2)


def too_large(bound: Bound) -> str | None:
    """Why ``verify`` refuses ``bound`` (one line: what is too large and what would
    finish), or ``None``."""
    over = [n for n in _NUMBERS if getattr(bound, n) > getattr(LIMIT, n)]
    if not over:
        return None
    name = over[0]
    return (
        f"bound: {name}={getattr(bound, name)} is too large for verify (at most "
        f"{name}={getattr(LIMIT, name)}; the largest bound known to finish is {LARGEST_KNOWN}, "
        f"in minutes on 2 cores for seqnum, while a waiting contract such as ordered takes "
        f"15 to 30 minutes at {DEFAULT}); to judge a long run, record it and use "
        "replay-contract check"
    )


def parse(text: str, base: Bound = DEFAULT) -> Bound:
    """``inputs=N,channels=C,keys=K,crashes=F[,changes=L][,agents=a+b]``."""
    bound = base
    seen: set[str] = set()
    parts = [p.strip() for p in text.split(",")]
    if not any(parts):
        raise BoundError(f"bound: empty (expected {DEFAULT})")
    for part in parts:
        if not part:
            continue
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq:
            raise BoundError(f"bound: {part!r} is not NAME=VALUE")
        if name in seen:
            raise BoundError(f"bound: {name} is given twice")
        seen.add(name)
        if name == "agents":
            agents = tuple(a.strip() for a in value.split("+") if a.strip())
            unknown = [a for a in agents if a not in AGENTS]
            if unknown or not agents:
                raise BoundError(
                    f"bound: agents: unknown agent {unknown[0] if unknown else ''!r}"
                    f" (known: {', '.join(AGENTS)})"
                )
            bound = evolve(bound, agents=agents)
            continue
        if name not in _NUMBERS:
            raise BoundError(
                f"bound: unknown dimension {name!r} (known: {', '.join((*_NUMBERS, 'agents'))})"
            )
        try:
            number = int(value)
        except ValueError:
            raise BoundError(f"bound: {name}: expected an integer, got {value!r}") from None
        low = 0 if name in ("crashes", "changes", "timeouts") else 1
        if number < low:
            raise BoundError(f"bound: {name}: must be at least {low}")
        bound = evolve(bound, **{name: number})  # type: ignore[arg-type]
    return bound
