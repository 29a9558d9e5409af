"""Hypothesis strategies for topologies and agents of the reference model."""

from __future__ import annotations

from hypothesis import strategies as st

from replay_contract.model.agent import Action, Agent
from replay_contract.model.topology import Channel, Record, Replay, Topology

AGENTS = {
    "stateful": Agent(
        (Action("respond", reads=("notes",), writes=("notes",), tools=("llm",), output=True),)
    ),
    "chain": Agent(
        (
            Action(
                "answer",
                reads=("choice",),
                writes=("answer",),
                tools=("llm",),
                output=True,
                emits=("answered",),
            ),
            Action("record", trigger="answered", writes=("choice",), tools=("classify",)),
        )
    ),
    "two-actions": Agent(
        (
            Action("plan", reads=("plan",), writes=("plan",), tools=("llm",)),
            Action(
                "act", reads=("plan", "log"), writes=("log",), tools=("search", "mail"), output=True
            ),
        )
    ),
    "stateless": Agent((Action("echo", tools=("llm",), output=True),)),
}

#: Keys that must never be confused: the integer 1 and the string "1", an empty key.
KEYS = ("K", "J", 1, "1", "")


@st.composite
def topologies(draw: st.DrawFn, max_channels: int = 3, max_records: int = 6) -> Topology:
    n_channels = draw(st.sampled_from([2, 2, 3, 1][: max_channels + 1]))
    n_keys = draw(st.sampled_from([1, 1, 2]))
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=n_keys, max_size=n_keys, unique=True))
    total = draw(st.integers(min(3, max_records), max_records))
    owners = [draw(st.integers(0, n_channels - 1)) for _ in range(total)]
    channels = []
    counter = 0
    for c in range(n_channels):
        replayable = draw(st.booleans()) if c > 0 else True
        records = []
        for offset, _ in enumerate(o for o in owners if o == c):
            counter += 1
            replay = None
            if not replayable:
                replay = draw(
                    st.sampled_from([None, Replay(lost=True), Replay(payload=f"changed-{counter}")])
                )
            records.append(
                Record(
                    f"R{counter}",
                    draw(st.sampled_from(keys)),
                    f"p{counter}",
                    f"u{c + 1}",
                    offset,
                    replay,
                )
            )
        channels.append(Channel(f"u{c + 1}", tuple(records), replayable))
    return Topology(tuple(channels))


agents = st.sampled_from(sorted(AGENTS)).map(AGENTS.__getitem__)
