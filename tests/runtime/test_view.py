"""The runtime's indexed view answers what the model's StoreView answers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replay_contract.model.store import (
    Completion,
    Entry,
    Invalidation,
    Lookup,
    OrderEntry,
    StoreView,
)
from replay_contract.runtime.view import LiveView

KEYS = st.sampled_from(["K", "1", 1, "", "é|x"])
POSITIONS = st.integers(0, 3)
INPUTS = st.sampled_from([("A", "a"), ("B", "b"), ("A", "a2")])
PATHS = st.sampled_from([("p",), ("q",), ("p", "e", "q")])
READS = st.sampled_from([(), (None,), ("x",)])


@st.composite
def entries(draw: st.DrawFn) -> Entry:
    key, position, (identity, digest) = draw(KEYS), draw(POSITIONS), draw(INPUTS)
    kind = draw(st.sampled_from(["completion", "completion", "order", "invalidation"]))
    if kind == "completion":
        return Completion(
            key,
            position,
            identity,
            digest,
            draw(PATHS),
            draw(READS),
            (("f", identity),),
            (),
            draw(st.booleans()),
            "c",
            position,
        )
    if kind == "order":
        return OrderEntry(key, position, identity, digest, "c", position)
    keep = draw(st.sampled_from([None, (identity, digest)]))
    return Invalidation(key, position, keep)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(entries(), max_size=25),
    st.lists(st.tuples(st.integers(0, 25), entries()), max_size=3),
    st.integers(0, 10),
)
def test_live_view_equals_store_view(
    log: list[Entry], volatile: list[tuple[int, Entry]], marker: int
) -> None:
    vol = [(i, e) for i, e in volatile if isinstance(e, Invalidation)]
    in_view = [(i, e) for i, e in enumerate(log) if i >= marker]
    model = StoreView(
        tuple(sorted([*in_view, *vol], key=lambda p: (p[0], not isinstance(p[1], Invalidation))))
    )
    built = LiveView.build(in_view, vol)
    incremental = LiveView()
    for i, e in in_view:
        incremental.add(i, e)
    views = [built] if vol else [built, incremental]
    for view in views:
        for start in range(4):

            def next_position(key: object, start: int = start) -> int:
                return start + (1 if key == "K" else 0)

            assert view.needed(next_position) == min(  # type: ignore[arg-type]
                (i for i, e in model.valid() if e.position >= next_position(e.key)), default=None
            )
        assert [repr(k) for k in view.keys()] == [repr(k) for k in model.keys()]  # noqa: SIM118
        for key in ["K", "1", 1, "", "é|x"]:
            for position in range(5):
                assert view.recorded_order(key, position) == model.recorded_order(key, position)
                for keep in (None, ("A", "a")):
                    inv = Invalidation(key, position, keep)
                    assert view.voided_by(inv) == model.voided_by(inv)
                for path in [("p",), ("q",), ("p", "e", "q")]:
                    for identity, digest in [("A", "a"), ("B", "b"), ("A", "a2")]:
                        for pos in (None, position):
                            for reads in (None, (), ("x",)):
                                lookup = Lookup(path, identity, digest, pos, reads)
                                assert view.find(key, lookup) == model.find(key, lookup)
