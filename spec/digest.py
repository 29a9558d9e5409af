"""A comparable picture of a graph of Python objects that holds Z3 terms.

:func:`digest` walks every object reachable from its roots (the fields of objects,
the items of containers, the variables a closure captured, the object a bound method
belongs to) and lists what it finds in a fixed order: a plain value as itself, a Z3
term as the term, a class or a function by its qualified name, an object seen before
by where it was first seen (so two pictures are equal only if the graphs share their
objects alike). :func:`same` compares two pictures, Z3 terms by identity of their
hash-consed ASTs. An object of a kind the walk does not know is an error, never
skipped: two equal pictures mean that a deterministic function of the roots gives the
same result on both graphs. An object of the project may say which of its fields are
its state with a method ``__digest__``, which gives them: then only they are walked,
and the functions the picture stands for must read no other.
"""

from __future__ import annotations

import enum
import itertools
import types
from collections.abc import Callable, Sequence

import z3

#: A picture: tokens, each a plain value, a tuple of them or a Z3 AST.
Digest = list[object]

_PLAIN = (bool, int, float, str, bytes, type(None))


class Undigestible(TypeError):
    """An object of a kind :func:`digest` does not know how to walk."""


def digest(*roots: object) -> Digest:
    """The picture of everything reachable from ``roots`` (see the module's docstring)."""
    out: Digest = []
    seen: dict[int, int] = {}
    keep: list[object] = []  # the objects whose identity ``seen`` relies on

    def shared(x: object) -> bool:
        """Whether ``x`` was seen before (then it is named); if not, it is now."""
        if id(x) in seen:
            out.append(("seen", seen[id(x)]))
            return True
        seen[id(x)] = len(seen)
        keep.append(x)
        return False

    def walk(x: object) -> None:
        if isinstance(x, _PLAIN):
            out.append((type(x).__name__, x))
        elif isinstance(x, z3.AstRef):
            out.append(x)
        elif isinstance(x, enum.Enum):
            out.append(("enum", type(x).__qualname__, x.name))
        elif isinstance(x, type):
            out.append(("type", x.__module__, x.__qualname__))
        elif isinstance(x, types.ModuleType):
            out.append(("module", x.__name__))
        elif isinstance(x, tuple):
            out.append(("tuple", len(x)))
            for item in x:
                walk(item)
        elif isinstance(x, (frozenset, set)):
            if not all(isinstance(i, _PLAIN) for i in x):
                raise Undigestible(f"cannot picture a set of other than plain values: {x!r:.80}")
            if not (isinstance(x, set) and shared(x)):
                out.append((type(x).__name__, tuple(sorted(repr(i) for i in x))))
        elif isinstance(x, list):
            if not shared(x):
                out.append(("list", len(x)))
                for item in x:
                    walk(item)
        elif isinstance(x, dict):
            if not shared(x):
                out.append(("dict", len(x)))
                for key, value in x.items():
                    walk(key)
                    walk(value)
        elif isinstance(x, types.FunctionType):
            if not shared(x):
                out.append(("function", x.__module__, x.__qualname__))
                for cell in x.__closure__ or ():
                    walk(cell.cell_contents)
                walk(x.__defaults__)
                walk(x.__kwdefaults__)
        elif isinstance(x, types.MethodType):
            out.append(("method",))
            walk(x.__func__)
            walk(x.__self__)
        elif isinstance(x, types.BuiltinFunctionType):
            out.append(("builtin", x.__qualname__, getattr(x, "__module__", None)))
            owner = getattr(x, "__self__", None)
            if owner is not None and not isinstance(owner, types.ModuleType):
                walk(owner)
        elif isinstance(x, itertools.count):
            out.append(("count", repr(x)))
        elif type(x).__module__.startswith("replay_contract."):
            if shared(x):
                return
            state = getattr(x, "__digest__", None)
            if state is None:
                _fields(x, out, walk)
            else:  # an object that says which of its fields are its state
                out.append(("state", type(x).__module__, type(x).__qualname__))
                walk(state())
        else:
            raise Undigestible(f"cannot picture a {type(x).__module__}.{type(x).__qualname__}")

    for root in roots:
        walk(root)
    out.append(_Kept(keep))  # the identities stay valid while the picture lives
    return out


class _Kept:
    """The objects a picture names by identity, kept alive with it; equal to any other."""

    __slots__ = ("objects",)

    def __init__(self, objects: list[object]) -> None:
        self.objects = objects

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Kept)

    __hash__ = None  # type: ignore[assignment]


def _fields(x: object, out: Digest, walk: Callable[[object], None]) -> None:
    """An object of the project's own classes: its class, then each field by name."""
    cls = type(x)
    names: list[str] = sorted(vars(x)) if hasattr(x, "__dict__") else []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(x, name):
                names.append(name)
    out.append(("object", cls.__module__, cls.__qualname__, len(names)))
    for name in names:
        out.append(("field", name))
        walk(getattr(x, name))


def same(a: Sequence[object], b: Sequence[object]) -> bool:
    """Whether two pictures are the same, Z3 terms compared as terms."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, z3.AstRef) or isinstance(y, z3.AstRef):
            if not (isinstance(x, z3.AstRef) and isinstance(y, z3.AstRef) and x.eq(y)):
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True


__all__ = ["Digest", "Undigestible", "digest", "same"]
