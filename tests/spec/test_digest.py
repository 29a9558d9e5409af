"""The picture of a state (spec/digest.py) and the check of the step classes built on
it: two micro-steps have equal pictures exactly when their checks have equal formulas."""

from __future__ import annotations

import itertools

import pytest
import z3

from replay_contract.model.contracts import CONTRACTS
from replay_contract.spec import induction
from replay_contract.spec.bound import parse
from replay_contract.spec.digest import Undigestible, digest, same
from replay_contract.spec.encoding import Machine, Slot


def test_terms_are_compared_as_terms() -> None:
    x, y = z3.Int("x"), z3.Int("y")
    assert same(digest([x + 1, {"a": y}]), digest([x + 1, {"a": y}]))
    assert not same(digest([x + 1]), digest([1 + x]))
    assert not same(digest([x]), digest([y]))
    assert not same(digest([1]), digest([True]))
    assert not same(digest([x]), digest([("x",)]))


def test_shared_objects_must_be_shared_alike() -> None:
    a: list[int] = []
    b: list[int] = []
    # the same list twice is not two equal lists: a write to one shows in the other
    assert not same(digest([a, a]), digest([a, b]))
    assert same(digest([a, a]), digest([b, b]))


def test_a_closure_is_pictured_with_what_it_captured() -> None:
    def make(v: int) -> object:
        return lambda: v

    assert same(digest(make(1)), digest(make(1)))
    assert not same(digest(make(1)), digest(make(2)))


def test_the_project_objects_are_pictured_by_their_fields() -> None:
    def slot(position: object) -> Slot:
        return Slot(0, "completion", 0, 0, z3.Int("k"), 0, position=position)

    assert same(digest(slot(z3.Int("p"))), digest(slot(z3.Int("p"))))
    assert not same(digest(slot(z3.Int("p"))), digest(slot(z3.Int("q"))))


def test_an_unknown_kind_of_object_is_an_error() -> None:
    with pytest.raises(Undigestible, match=r"cannot picture a builtins\.bytearray"):
        digest([bytearray(b"x")])
    with pytest.raises(Undigestible, match="set of other than plain values"):
        digest([frozenset([(1, 2)])])


@pytest.mark.parametrize("name", ["seqnum", "ordered"])
def test_equal_pictures_exactly_when_equal_formulas(name: str) -> None:
    """On every pair of micro-steps of a bound: the pictures say "same" exactly when
    the formulas do, and that is when the two are of one class."""
    contract, b = CONTRACTS[name], parse("inputs=2,channels=1,keys=2,crashes=2")
    props = induction.inductive(contract, "chain", induction.INDUCTIVE)
    classes = induction.step_classes(contract, b)
    steps = range(sum(len(induction.members(contract, b, t)) for t in classes))
    formulas = {t: induction.step_formula(contract, "chain", b, t, props) for t in steps}
    pictures = {t: induction.step_digest(contract, "chain", b, t, props) for t in steps}
    for t, u in itertools.combinations(steps, 2):
        f, g = formulas[t], formulas[u]
        formula = len(f) == len(g) and all(x.eq(y) for x, y in zip(f, g, strict=True))
        assert same(pictures[t], pictures[u]) == formula, (t, u)
        one_class = induction.class_of(contract, b, t) == induction.class_of(contract, b, u)
        assert formula == one_class, (t, u)
    # the picture of a class's own step is the one its check was built with
    step = induction.build_step(contract, "chain", b, 1, props)
    assert same(step.digest, pictures[1])


class _Reads:
    """A machine that notes which of its attributes are read."""

    def __init__(self, machine: object, read: set[str]) -> None:
        self._machine = machine
        self._read = read

    def __getattr__(self, name: str) -> object:
        self._read.add(name)
        return getattr(self._machine, name)


@pytest.mark.parametrize("name", ["seqnum", "ordered", "read-set"])
def test_the_facts_read_only_the_state_the_picture_has(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The argument of the class check: the facts about a state are a function of the
    machine's ``__digest__`` (and of the ghosts, which are pictured whole)."""
    read: set[str] = set()
    for fn in ("invariant", "_basic"):
        original = getattr(induction, fn)

        def spy(m: object, *args: object, _original: object = original) -> object:
            return _original(_Reads(m, read), *args)  # type: ignore[operator]

        monkeypatch.setattr(induction, fn, spy)
    contract, b = CONTRACTS[name], parse("inputs=2,channels=2,keys=2,crashes=1")
    for agent in ("stateful", "chain"):
        props = induction.inductive(contract, agent, induction.INDUCTIVE)
        for t in induction.step_classes(contract, b):
            induction.build_step(contract, agent, b, t, props)
    assert read, "the spies saw nothing"
    # epoch_of reads the starts of the epochs, which are state
    assert read <= {*Machine.STATE, "epoch_of"}, read - set(Machine.STATE)
