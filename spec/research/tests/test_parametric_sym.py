"""The symbolic refinement check of :mod:`replay_contract.spec.parametric_sym`: every
micro-step of seqnum's machine is a step of the parametric model at a small bound, and
the check fails when the model or the machine is a broken variant."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import z3

from replay_contract.model.contracts import NO_DIVERGENCE_CHECK, SEQNUM
from replay_contract.spec.bound import parse
from spec.research import parametric_sym as sym

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 120_000
#: the bound of the tests and its classes of micro-steps (the last one is the first
#: that can reuse a completion: after a restore)
SMALL = parse("inputs=3,channels=2,keys=2,crashes=1")
AFTER_RESTORE = 5


def failing(out: sym.Outcome) -> list[str]:
    """The queries of the classes that did not come out as they should."""
    return [
        name
        for *_, rows in out.classes
        for name, res, _ in rows
        if res != ("sat" if name == "premises" else "unsat")
    ]


def test_the_refinement_holds_for_seqnum() -> None:
    o = sym.options("stateful", safeguard=True)
    out = sym.refine(SEQNUM, "stateful", SMALL, o, TIMEOUT_MS, same_classes=True, premises=True)
    assert [r[1] for r in out.initial] == ["sat", "unsat", "unsat"]
    assert [r[1] for r in out.lemmas] == ["unsat", "unsat"]
    assert [t for t, *_ in out.classes] == [0, 1, 4, 5]
    assert failing(out) == []
    assert out.holds


def test_the_refinement_holds_for_chain() -> None:
    o = sym.options("chain", safeguard=False)
    out = sym.refine(SEQNUM, "chain", SMALL, o, TIMEOUT_MS, classes=[1, AFTER_RESTORE])
    assert failing(out) == []


@pytest.mark.parametrize("variant", ["stable-id", "no-divergence-check"])
def test_a_broken_model_cannot_follow_the_machine(variant: str) -> None:
    o = sym.options("stateful", safeguard=False, variant=variant)
    out = sym.refine(SEQNUM, "stateful", SMALL, o, TIMEOUT_MS, classes=[AFTER_RESTORE])
    bad = failing(out)
    assert bad and not out.holds
    assert not any(name.startswith(("premises", "basic")) for name in bad)


def test_another_contracts_machine_is_not_a_seqnum_model_run() -> None:
    o = sym.options("stateful", safeguard=False)
    out = sym.refine(NO_DIVERGENCE_CHECK, "stateful", SMALL, o, TIMEOUT_MS, classes=[AFTER_RESTORE])
    assert any(name.startswith(("views", "other slots")) for name in failing(out))


def test_the_history_lemmas_hold_and_need_their_hypotheses() -> None:
    assert [r[1] for r in sym.check_lemmas(4, TIMEOUT_MS)] == ["unsat", "unsat"]
    # without well-formed histories, equal arrays do not make equal terms
    x, y, n = z3.Const("x", sym.T), z3.Const("y", sym.T), z3.Int("n")
    lemma = sym.extensional(x, y, n, 4)
    solver = z3.Solver()
    solver.add(z3.Not(lemma.arg(1)))
    assert solver.check() == z3.sat


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "research.parametric_sym", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--bound", "inputs=x"), "bound: inputs: expected an integer"),
        (("--agent", "nobody"), "unknown agent 'nobody'"),
        (("--contract", "nothing"), "unknown contract 'nothing'"),
        (("--contract", "ordered"), "ordered waits"),
        (("--variant", "other"), "invalid choice"),
        (("--timeout", "0"), "expected a whole number above 0"),
    ],
)
def test_bad_input_is_one_line(args: tuple[str, ...], says: str) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr


def test_the_command_line_at_a_tiny_bound() -> None:
    done = run("--bound", "inputs=2,channels=1,keys=1,crashes=1", "--agent", "stateful")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "refinement holds" in done.stdout
    assert "parametric step: 14/14 facts kept" in done.stdout
