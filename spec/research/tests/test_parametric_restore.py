"""The sketch of ``ordered``'s restore scan (:mod:`research.parametric_restore`)."""

from __future__ import annotations

from spec.research import parametric_restore as restore


def test_the_restore_scan_of_ordered() -> None:
    assert {g: r for g, (r, _) in restore.check_scan().items()} == {
        "expected-end is the ghost end": "unsat",
        "expected is the ghost order": "unsat",
    }
    broken = restore.check_scan(variant="no-end-fact")
    assert broken["expected-end is the ghost end"][0] == "sat"
