"""The canonical JSON text every digest is taken over is that of the standard encoder."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_contract.model.topology import canonical

STANDARD = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


# a loaded machine (or a collector's pass) can make one example slow
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON)
def test_canonical_is_the_standard_encoders_text(value: Any) -> None:
    assert canonical(value) == STANDARD.encode(value)


def test_a_circular_value_is_refused_as_the_standard_encoder_refuses_it() -> None:
    value: list[Any] = []
    value.append(value)
    with pytest.raises(ValueError, match="Circular reference"):
        canonical(value)
    with pytest.raises(TypeError):
        canonical({1j: 1})
