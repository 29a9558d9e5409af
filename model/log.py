"""An append-only sequence that a run's successive worlds share.

A world is frozen, and each step makes a new one whose trace and store log are the old
ones with a few entries appended. Copying a tuple for that costs the length of the run
at every step; a :class:`Log` instead shares one list with the log it extends and
remembers its own length, so appending costs what is appended. The list only grows past
the lengths of the logs that share it, never changes below them, so every log keeps
exactly the entries it had: appending to a log that is no longer the longest on its list
(another branch of an exploration) copies it first.

A log compares equal to a tuple or another log with the same entries, and its slices are
tuples.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")


class Log(Sequence[T], Generic[T]):
    __slots__ = ("_items", "_length")

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._items: list[T] = list(items)
        self._length = len(self._items)

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._length)
            return tuple(self._items[start:stop:step])
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("log index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        return islice(self._items, self._length)

    def __reversed__(self) -> Iterator[T]:
        items = self._items
        return (items[i] for i in range(self._length - 1, -1, -1))

    def __add__(self, more: Iterable[T]) -> Log[T]:
        extra = list(more)
        if not extra:
            return self
        items = self._items
        if len(items) != self._length:
            items = items[: self._length]
        items.extend(extra)
        log: Log[T] = Log.__new__(Log)
        log._items, log._length = items, len(items)
        return log

    def appended(self, item: T) -> Log[T]:
        """This log with ``item`` at its end."""
        return self.__add__((item,))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Log):
            other = other._items[: other._length]
        elif isinstance(other, tuple):
            other = list(other)
        else:
            return NotImplemented
        return len(other) == self._length and self._items[: self._length] == other

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Log({list(self)!r})"

    def __getstate__(self) -> Any:
        return self._items[: self._length]

    def __setstate__(self, state: Any) -> None:
        self._items, self._length = list(state), len(state)
