"""The logic layer: booleans, integers and terms, concrete or symbolic.

The encoding of the operator (:mod:`.encoding`) and the translation of the properties
(:mod:`.monitors`) are written once against these functions. Given only Python values
(``bool``, ``int`` and terms as tuples) every function computes a Python value, so the
encoding runs as a plain interpreter of one scenario, which the tests compare with the
model. Given Z3 expressions it builds the formula that ``verify`` hands to the solver;
constant arguments are folded, so rules of the contract that are fixed (a Python value)
leave no trace in the formula.

A *term* is a value of the key's memory, an output or a history: ``NONE`` or
``node(tag, a, b, c, d)`` with integer ``tag``, ``a``, ``b`` and term ``c``, ``d``. Terms
are equal exactly when they are built the same way: the free interpretation of the
model's hash-based values (an action's write is a function of the action, the input
and what it read, and two different arguments give two different values).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3
from z3 import z3core

Sym = Any  # a Python value or a Z3 expression

NONE: tuple[Any, ...] = ("none",)

#: Integers are mathematical integers (``WIDTH = 0``) or signed bit-vectors of this
#: width. Bit-vectors were measured slower on this encoding; they stay as an option.
WIDTH = 0
INT = z3.BitVecSort(WIDTH) if WIDTH else z3.IntSort()

_TERM = z3.Datatype("Term")
_TERM.declare("none")
_TERM.declare("node", ("tag", INT), ("a", INT), ("b", INT), ("c", _TERM), ("d", _TERM))
Term = _TERM.create()


# The layer builds its formulas through Z3's C interface in the main context: the Python
# operators and ``z3.And``/``z3.If`` check and coerce their arguments on every call, which
# made up most of the time spent building a formula (the C calls build the same terms
# about 3x faster).
_CTX = z3.main_ctx()
_REF = _CTX.ref()
_TRUE = z3.BoolVal(True)
_FALSE = z3.BoolVal(False)
_INTS: dict[int, Any] = {}


def _array(xs: list[Any]) -> Any:
    out = (z3core.Ast * len(xs))()
    for i, x in enumerate(xs):
        out[i] = x.as_ast()
    return out


def _boolean(ast: Any) -> Any:
    return z3.BoolRef(ast, _CTX)


def _compare(make: Any, flipped: Any, x: Any, y: Any) -> Any:
    """``make(x, y)``; with a numeral ``y`` and a non-numeral ``x``, ``flipped(y, x)``:
    the very term Python's operators build (they let the subclass of numerals answer
    with the reflected comparison). The solver's times depend on the exact terms, and
    these are the ones every recorded figure was measured with."""
    numeral = (z3.IntNumRef, z3.BitVecNumRef)
    if isinstance(y, numeral) and not isinstance(x, numeral):
        return _boolean(flipped(_REF, y.as_ast(), x.as_ast()))
    return _boolean(make(_REF, x.as_ast(), y.as_ast()))


def int_var(name: str) -> Any:
    return z3.BitVec(name, WIDTH) if WIDTH else z3.Int(name)


def int_const(x: int) -> Any:
    found = _INTS.get(x)
    if found is None:
        found = _INTS[x] = z3.BitVecVal(x, WIDTH) if WIDTH else z3.IntVal(x)
    return found


def int_value(model: Any, x: Any) -> int:
    """A (signed) integer out of a solver model."""
    v = model.eval(x, model_completion=True)
    return int(v.as_signed_long()) if WIDTH else int(v.as_long())


def is_sym(x: Any) -> bool:
    return isinstance(x, z3.ExprRef)


def node(tag: int, a: Sym, b: Sym, c: Sym = NONE, d: Sym = NONE) -> Sym:
    if any(is_sym(x) for x in (a, b, c, d)):
        return Term.node(int_const(tag), lift_int(a), lift_int(b), lift_term(c), lift_term(d))
    return ("node", tag, a, b, c, d)


def lift_int(x: Sym) -> Any:
    return x if is_sym(x) else int_const(int(x))


def lift_bool(x: Sym) -> Any:
    return x if is_sym(x) else _TRUE if x else _FALSE


_LIFTED: dict[tuple[Any, ...], Any] = {}


def lift_term(x: Sym) -> Any:
    if is_sym(x):
        return x
    found = _LIFTED.get(x)
    if found is None:
        if x == NONE:
            found = Term.none
        else:
            _, tag, a, b, c, d = x
            found = Term.node(
                int_const(tag), int_const(a), int_const(b), lift_term(c), lift_term(d)
            )
        _LIFTED[x] = found
    return found


def _lift_like(x: Sym, other: Sym) -> Any:
    if is_sym(x):
        return x
    if isinstance(x, tuple):
        return lift_term(x)
    if isinstance(x, bool):
        return _TRUE if x else _FALSE
    if isinstance(other, z3.BoolRef):
        return _TRUE if x else _FALSE
    return int_const(int(x))


def _const(x: Sym) -> bool | None:
    """``True``/``False`` when ``x`` is a known boolean, else ``None``."""
    if isinstance(x, bool):
        return x
    return None  # the layer never builds a Z3 constant: constants stay Python values


def same(a: Sym, b: Sym) -> bool:
    if a is b:
        return True
    if is_sym(a) and is_sym(b):
        return bool(a.eq(b))
    if is_sym(a) or is_sym(b):
        return False
    return bool(a == b) and type(a) is type(b)


def and_(*xs: Sym) -> Sym:
    out = []
    for x in xs:
        c = _const(x)
        if c is False:
            return False
        if c is True:
            continue
        out.append(x)
    if not out:
        return True
    if len(out) == 1:
        return out[0]
    return _boolean(z3core.Z3_mk_and(_REF, len(out), _array(out)))


def or_(*xs: Sym) -> Sym:
    out = []
    for x in xs:
        c = _const(x)
        if c is True:
            return True
        if c is False:
            continue
        out.append(x)
    if not out:
        return False
    if len(out) == 1:
        return out[0]
    return _boolean(z3core.Z3_mk_or(_REF, len(out), _array(out)))


def not_(x: Sym) -> Sym:
    c = _const(x)
    if c is not None:
        return not c
    return _boolean(z3core.Z3_mk_not(_REF, x.as_ast()))


def implies(a: Sym, b: Sym) -> Sym:
    return or_(not_(a), b)


def ite(c: Sym, a: Sym, b: Sym) -> Sym:
    k = _const(c)
    if k is True:
        return a
    if k is False:
        return b
    if same(a, b):
        return a
    if isinstance(a, bool) and isinstance(b, bool):
        return and_(c, a) if b is False else or_(not_(c), a) if b is True else c
    then, other = _lift_like(a, b), _lift_like(b, a)
    ast = z3core.Z3_mk_ite(_REF, c.as_ast(), then.as_ast(), other.as_ast())
    # of the same sort as ``then``, but an ite of numerals is no numeral
    kind = z3.ArithRef if isinstance(then, z3.ArithRef) else type(then)
    return (z3.BitVecRef if isinstance(then, z3.BitVecRef) else kind)(ast, _CTX)


def eq(a: Sym, b: Sym) -> Sym:
    if not is_sym(a) and not is_sym(b):
        return bool(a == b)
    if same(a, b):
        return True
    x, y = _lift_like(a, b), _lift_like(b, a)
    return _compare(z3core.Z3_mk_eq, z3core.Z3_mk_eq, x, y)


def ne(a: Sym, b: Sym) -> Sym:
    return not_(eq(a, b))


def lt(a: Sym, b: Sym) -> Sym:
    if not is_sym(a) and not is_sym(b):
        return bool(a < b)
    if WIDTH:
        return lift_int(a) < lift_int(b)
    return _compare(z3core.Z3_mk_lt, z3core.Z3_mk_gt, lift_int(a), lift_int(b))


def le(a: Sym, b: Sym) -> Sym:
    if not is_sym(a) and not is_sym(b):
        return bool(a <= b)
    if WIDTH:
        return lift_int(a) <= lift_int(b)
    return _compare(z3core.Z3_mk_le, z3core.Z3_mk_ge, lift_int(a), lift_int(b))


def add(a: Sym, b: Sym) -> Sym:
    if not is_sym(a) and not is_sym(b):
        return a + b
    if not is_sym(b) and b == 0:
        return a
    if WIDTH:
        return lift_int(a) + lift_int(b)
    both = _array([lift_int(a), lift_int(b)])
    return z3.ArithRef(z3core.Z3_mk_add(_REF, 2, both), _CTX)


# -- aggregates -----------------------------------------------------------------------
#
# The machine's searches over records, positions and store slots (how many hold, the
# least value, the first index, the latest match) are these, each written once; a form
# with a symbolic number of records would change them, not the machine. Their bounded
# form is a chain of ``ite``s, the form Z3 was measured fastest on here.


def count(xs: list[Sym]) -> Sym:
    """How many of the booleans ``xs`` hold."""
    total: Sym = 0
    for x in xs:
        total = add(total, ite(x, 1, 0))
    return total


def select(index: Sym, values: list[Sym], default: Sym = 0) -> Sym:
    """``values[index]``, for a possibly symbolic ``index`` (``default`` out of range)."""
    if not is_sym(index):
        return values[index] if 0 <= index < len(values) else default
    out = default
    for i in range(len(values) - 1, -1, -1):
        out = ite(eq(index, i), values[i], out)
    return out


def minimum(options: list[tuple[Sym, Sym]], default: Sym) -> Sym:
    """The least value among ``(condition, value)`` pairs whose condition holds."""
    out = default
    for cond, value in options:
        out = ite(and_(cond, lt(value, out)), value, out)
    return out


def first(conds: list[Sym], default: Sym) -> Sym:
    """The least index whose condition holds (``default`` if none does)."""
    out = default
    for i in range(len(conds) - 1, -1, -1):
        out = ite(conds[i], i, out)
    return out


def latest(
    options: list[tuple[Sym, tuple[Sym, ...]]], default: tuple[Sym, ...]
) -> tuple[Sym, tuple[Sym, ...]]:
    """Whether some ``(condition, values)`` option's condition holds, and the values of
    the last such option (``default`` if none): the store's latest matching slot."""
    found: Sym = False
    out = default
    for cond, values in options:
        if _const(cond) is False:
            continue
        found = or_(found, cond)
        out = tuple(ite(cond, v, o) for v, o in zip(values, out, strict=True))
    return found, out


class Indices:
    """The indices ``0 .. size - 1`` of the machine's records or positions, as its
    searches range over them.

    Each search takes a *body*, a function of one index, instead of a list: here (the
    bounded form) the body is called at each index in turn and the search is the
    aggregate above, so the formula is the one a list would give. A form with a
    symbolic number of indices calls the body once, at an index bound by a quantifier;
    the machine does not change with it.
    """

    def __init__(self, size: int) -> None:
        self.size = size

    @property
    def end(self) -> Sym:
        """The index after the last."""
        return self.size

    def some(self, body: Callable[[Sym], Sym]) -> Sym:
        """Whether the body holds at some index."""
        return or_(*(body(i) for i in range(self.size)))

    def count(self, body: Callable[[Sym], Sym]) -> Sym:
        """At how many indices the body holds."""
        return count([body(i) for i in range(self.size)])

    def first(self, body: Callable[[Sym], Sym], default: Sym) -> Sym:
        """The least index where the body holds (``default`` if none)."""
        return first([body(i) for i in range(self.size)], default)

    def minimum(self, body: Callable[[Sym], tuple[Sym, Sym]], default: Sym) -> Sym:
        """The least value of the body's ``(condition, value)`` where the condition
        holds (``default`` if it holds nowhere)."""
        return minimum([body(i) for i in range(self.size)], default)

    def each(self, update: Callable[[Sym], None]) -> None:
        """A write at every index (``update`` writes at one)."""
        for i in range(self.size):
            update(i)

    def every(self, body: Callable[[Sym], list[tuple[str, Sym]]]) -> list[tuple[str, Sym]]:
        """The named facts the body states at one index, stated at every index: here
        one fact per index, its name the body's followed by the index (a form with a
        symbolic number of indices states each as one universal)."""
        return [(f"{name} {i}", fact) for i in range(self.size) for name, fact in body(i)]
