"""The model's indexed store view answers what the scanning StoreView answers, for every
recovery marker, also when the run's log is extended step by step, cut by a crash or
left for another branch."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replay_contract.model.store import (
    Completion,
    Entry,
    IndexedView,
    Invalidation,
    Lookup,
    OrderEntry,
    Recorded,
    RecordedOrder,
    StoreView,
    view_of,
)

KEY_VALUES: list[object] = ["K", "1", 1, ""]
KEYS = st.sampled_from(KEY_VALUES)
INPUTS = st.sampled_from([("A", "a"), ("B", "b"), ("A", "a2")])
PATHS = [("p",), ("p", "e", "q")]


@st.composite
def entries(draw: st.DrawFn) -> Entry:
    key, position, (identity, digest) = draw(KEYS), draw(st.integers(0, 3)), draw(INPUTS)
    kind = draw(st.sampled_from(["completion", "completion", "order", "invalidation"]))
    if kind == "completion":
        reads = draw(st.sampled_from([(), ("x",)]))
        path = draw(st.sampled_from(PATHS))
        order = draw(st.booleans())
        return Completion(key, position, identity, digest, path, reads, (), (), order, "c", 0)
    if kind == "order":
        return OrderEntry(key, position, identity, digest, "c", position)
    return Invalidation(key, position, draw(st.sampled_from([None, (identity, digest)])))


def same_answers(view: IndexedView, model: StoreView) -> None:
    for start in range(3):

        def next_position(key: object, start: int = start) -> int:
            return start + (1 if key == "K" else 0)

        assert view.needed(next_position) == model.needed(next_position)  # type: ignore[arg-type]
    assert [repr(k) for k in view.keys()] == [repr(k) for k in model.keys()]  # noqa: SIM118
    for key in KEY_VALUES:
        for position in range(5):
            assert view.recorded_order(key, position) == model.recorded_order(key, position)  # type: ignore[arg-type]
            for keep in (None, ("A", "a")):
                inv = Invalidation(key, position, keep)  # type: ignore[arg-type]
                assert view.voided_by(inv) == model.voided_by(inv)
            for path in PATHS:
                for identity, digest in [("A", "a"), ("B", "b")]:
                    for pos, reads in [(None, None), (position, None), (None, ("x",))]:
                        lookup = Lookup(path, identity, digest, pos, reads)
                        assert view.find(key, lookup) == model.find(key, lookup)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.lists(entries(), max_size=20), st.integers(0, 8), st.lists(st.integers(0, 4)))
def test_indexed_view_equals_store_view(log: list[Entry], marker: int, cuts: list[int]) -> None:
    # a run: each step views the log so far plus its own writes, then commits them (all,
    # or the first few when a crash cuts the step); sometimes a step starts over from an
    # earlier log (another branch)
    store: tuple[Entry, ...] = ()
    logs = [store]
    rest = list(log)
    for cut in cuts or [len(rest)]:
        writes = rest[:3]
        rest = rest[3:]
        for n in range(len(writes) + 1):
            view = view_of(store, writes[:n], marker)
            assert isinstance(view, IndexedView)
            same_answers(view, StoreView.of((*store, *writes[:n]), marker))
        store = store + tuple(writes[: cut if cut < 3 else 3])
        logs.append(store)
        if cut == 4:
            store = logs[len(logs) // 2]
    view = view_of(store, [], marker)
    assert isinstance(view, IndexedView)
    same_answers(view, StoreView.of(store, marker))


@st.composite
def orders(draw: st.DrawFn) -> list[Recorded]:
    channels = draw(st.lists(st.sampled_from(["c1", "c2"]), max_size=12))
    offsets: dict[str, int] = {}
    out = []
    for position, channel in enumerate(channels):
        step = draw(st.integers(-1, 2))  # mostly in order; sometimes not
        offsets[channel] = offsets.get(channel, 0) + step
        out.append(Recorded(position, f"r{position}", "d", channel, offsets[channel]))
    return out


@settings(max_examples=300, deadline=None)
@given(orders(), st.integers(0, 12), st.integers(0, 12), st.sets(st.integers(0, 11)))
def test_a_recorded_order_answers_the_split_order_question_as_a_scan(
    items: list[Recorded], drop: int, keep: int, arrived_at: set[int]
) -> None:
    # the slices a recovery makes: the head dropped, a tail given up
    order = RecordedOrder(items)[drop:].before(keep)
    plain = [r for r in items[drop:] if r.position < keep]
    assert list(order) == plain and order == tuple(plain) and len(order) == len(plain)
    arrived = {f"r{i}" for i in arrived_at}
    for channel in ("c1", "c2", "c3"):
        for offset in range(-2, 8):
            expected = next(
                (
                    r
                    for r in plain
                    if r.channel == channel and r.offset < offset and r.identity not in arrived
                ),
                None,
            )
            assert order.first_missing(channel, offset, arrived) == expected
