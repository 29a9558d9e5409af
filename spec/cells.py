"""Named arrays of values with possibly symbolic indexes: the state of the encoding."""

from __future__ import annotations

import z3

from . import logic as lg
from .logic import Sym


def _default(value: Sym) -> Sym:
    """The value an out-of-range read gives, of the same sort as ``value``."""
    if isinstance(value, bool) or (lg.is_sym(value) and value.sort() == z3.BoolSort()):
        return False
    if isinstance(value, tuple) or (lg.is_sym(value) and value.sort() == lg.Term):
        return lg.NONE
    return 0


class Cells:
    """Arrays ``name[i]`` or ``name[i][j]`` of logic values.

    Reading with a symbolic index selects among every cell; writing with one updates
    every cell under the condition that the index is its own.
    """

    def __init__(self) -> None:
        self.values: dict[tuple[object, ...], Sym] = {}
        self.shape: dict[str, tuple[int, ...]] = {}

    def copy(self) -> Cells:
        out = Cells()
        out.values = dict(self.values)
        out.shape = dict(self.shape)
        return out

    def scalar(self, name: str, value: Sym) -> None:
        self.shape[name] = ()
        self.values[(name,)] = value

    def array(self, name: str, size: int, value: Sym) -> None:
        self.shape[name] = (size,)
        for i in range(size):
            self.values[(name, i)] = value

    def matrix(self, name: str, rows: int, columns: int, value: Sym) -> None:
        self.shape[name] = (rows, columns)
        for i in range(rows):
            for j in range(columns):
                self.values[(name, i, j)] = value

    def extend(self, name: str, value: Sym) -> None:
        """Add one cell at the end of a one-dimensional array."""
        (size,) = self.shape[name]
        self.values[(name, size)] = value
        self.shape[name] = (size + 1,)

    def size(self, name: str) -> int:
        return self.shape[name][0]

    # reading
    def __getitem__(self, name: str) -> Sym:
        return self.values[(name,)]

    def at(self, name: str, i: Sym, j: Sym | None = None) -> Sym:
        shape = self.shape[name]
        first = self.values[(name,) + (0,) * len(shape)] if all(shape) else 0
        default: Sym = _default(first)
        if j is None:
            return lg.select(i, [self.values[(name, a)] for a in range(shape[0])], default)
        if not lg.is_sym(i):
            if not 0 <= i < shape[0]:
                return default
            return lg.select(j, [self.values[(name, i, b)] for b in range(shape[1])], default)
        rows = [
            lg.select(j, [self.values[(name, a, b)] for b in range(shape[1])], default)
            for a in range(shape[0])
        ]
        return lg.select(i, rows, default)

    def cell(self, name: str, *index: int) -> Sym:
        return self.values[(name, *index)]

    # writing
    def set(self, name: str, value: Sym, guard: Sym = True) -> None:
        self.values[(name,)] = lg.ite(guard, value, self.values[(name,)])

    def put(self, name: str, i: Sym, value: Sym, guard: Sym = True, j: Sym | None = None) -> None:
        shape = self.shape[name]
        if lg._const(guard) is False:
            return
        rows = range(shape[0]) if lg.is_sym(i) else [i] if 0 <= i < shape[0] else []
        for a in rows:
            ga = lg.and_(guard, lg.eq(i, a))
            if j is None:
                self.values[(name, a)] = lg.ite(ga, value, self.values[(name, a)])
                continue
            columns = range(shape[1]) if lg.is_sym(j) else [j] if 0 <= j < shape[1] else []
            for b in columns:
                gb = lg.and_(ga, lg.eq(j, b))
                self.values[(name, a, b)] = lg.ite(gb, value, self.values[(name, a, b)])

    def assign(self, other: Cells, guard: Sym) -> None:
        """Every cell of ``other`` (same names) where ``guard`` holds."""
        if lg._const(guard) is False:
            return
        for index, value in other.values.items():
            if index in self.values:
                self.values[index] = lg.ite(guard, value, self.values[index])
            else:
                self.values[index] = value
        for name, shape in other.shape.items():
            if name not in self.shape or self.shape[name] < shape:
                self.shape[name] = shape
