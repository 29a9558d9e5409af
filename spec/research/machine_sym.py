"""The machine of :mod:`replay_contract.spec.encoding` itself, run over a symbolic number
of records: stage 2 of the plan in ``spec/notes/deepen-bench.md``, second step.

The thirty-second session wrote a fragment of the waiting contracts' machine by hand.
Here the fragment is the machine's own code: its searches over records and a key's
positions go through ``Machine.records`` and ``Machine.positions``
(:class:`replay_contract.spec.logic.Indices`), so a domain whose size is a term
(:class:`SymIndices`) makes each search one witness defined by quantified facts (the
aggregates of :mod:`.aggregates_sym`), calling the machine's body once, at a bound
index. The state's arrays over records (and each key's row over positions) are Z3
arrays (:class:`SymCells`), the records' keys, channels and replay modes Z3 functions,
each read out of range giving what the bounded machine gives; keys and channels stay
concrete, as the plan keeps them. A count is either each state's own (an exact count
by a bijection that exists in every state, :meth:`SymIndices.count`) or kept through
the writes (:class:`Kept`), which is what relates the counts of two states.

Three steps of the machine, on ``ordered`` (with or without ``split_order``) giving up
after one waiting input: ``arrive`` (a channel's next record, ``Machine.next_record``,
joins the waiting inputs, ``Machine.arrive_waiting``), ``take`` (the advance loop takes
its key's earliest waiting input, ``Machine.waiting_of`` and
``Machine.earliest_waiting``) and ``finish`` (the end of the advance loop, which
compares the key's waiting inputs with ``give_up_after``, ``Machine.finish``). What the
machine writes outside those methods (the channel's offset after a delivery, the taken
input's flag) is written here as ``Machine.micro_step`` writes it. :func:`agree`
proves, at each concrete number of records, that a step leaves the state the bounded
machine leaves from every state; :func:`waiting_step` proves that it keeps the invariant
of the waiting inputs and the kept counts for every number of records.

The store (the last section) is a family of slots per entry and epoch whose fields are
arrays over records; the machine's searches over slots (``Machine.written`` and the
sets made from it) run on it unchanged, and :func:`store_agree` compares a save, an
invalidation and the store's searches with the bounded store.

A body runs at an index bound by a quantifier (:meth:`SymIndices._bound`), and may
search itself: the restore's scan (``Machine.expect_recorded``) ends at the first
position without a recorded input, a search over the store at each position, and
writes every position of a key's row (``positions.each``) with what such a search finds
there. What the inner search makes then depends on the bound index: its witnesses and
functions become functions of it, its facts universals over it (one witness per
index, as a Skolem function gives). And the scan searches the store twice at each
position (for the end and for the row): two witnesses of one search are two symbols
E-matching does not relate, so a search is made once and shared, as the bounded form
shares it by hash-consing (:meth:`SymIndices.shared`). :func:`scan_agree` compares the
scan with the bounded machine's; :func:`scan_step` proves, for every number of records,
that it expects records of the key from its next position to the order's end.

The whole machine (:func:`whole_machine`: every cell symbolic, the store as families)
runs ``Machine.micro_step`` unchanged: :func:`micro_step_agree` compares it with the
bounded machine, :func:`restore_agree` the restore by itself, and
:func:`whole_families_step` proves, for every number of records, that the micro-step
keeps the induction's facts about records and the advance loop's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import attrs
import z3
from attrs import frozen

from replay_contract.model.bounded import AGENTS
from replay_contract.model.contracts import ORDERED, Contract
from replay_contract.spec import induction as ind
from replay_contract.spec import logic as lg
from replay_contract.spec.agentterms import Plan
from replay_contract.spec.bound import Bound
from replay_contract.spec.cells import Cells
from replay_contract.spec.encoding import (
    ABSENT,
    ADVANCE,
    AFTER_ARRIVAL,
    AFTER_END,
    AFTER_NOTHING,
    AFTER_RESTORE,
    DONE,
    IDLE,
    Machine,
    Shape,
    Slot,
    Slots,
    symbolic_env,
)
from replay_contract.spec.everybound.parametric_ordered_refine import applications
from replay_contract.spec.logic import Sym
from replay_contract.spec.monitors import Monitors
from replay_contract.spec.research import aggregates_sym as agg

_fresh = itertools.count()


def _name(what: str) -> str:
    # a counter of its own (one shared with :mod:`.aggregates_sym` renames the
    # symbols, and the store's check went from ``unsat`` in 14 s to ``unknown`` at
    # 120 s: E-matching's answers depend on names); registered like that module's
    name = f"{what}!{next(_fresh)}"
    for names in agg.NAMES:
        names.add(name)
    return name


def _applied(d: z3.FuncDeclRef, lifted: z3.FuncDeclRef, q: z3.ArithRef) -> tuple[Any, Any]:
    """The substitution of symbol ``d`` by its function ``lifted`` of index ``q``."""
    domain = [d.domain(i) for i in range(d.arity())]
    return d, lifted(q, *(z3.Var(i, x) for i, x in enumerate(domain)))


#: the ``each`` being built, innermost last: its index and the writes its body made
_EACH: list[tuple[z3.ArithRef, list[tuple[SymCells, tuple[object, ...], Any, Any]]]] = []


def _symbols(exprs: list[Any], names: set[str]) -> list[z3.FuncDeclRef]:
    """The uninterpreted symbols named in ``names`` that occur in ``exprs``."""
    found = {a.decl().name(): a.decl() for a in applications(exprs, names)}
    return list(found.values())


class SymIndices(lg.Indices):
    """The indices ``0 .. size - 1`` with ``size`` a term. Each search is a witness;
    the facts that define it collect in ``facts``. ``broken`` names a fault for the
    checks that must then fail: ``first`` (a first without its universal, so any index
    where the body holds)."""

    def __init__(self, size: z3.ArithRef, facts: list[z3.BoolRef], broken: str = "") -> None:
        super().__init__(0)
        self.term = size
        self.facts = facts
        self.broken = broken
        #: each body defined so far, as a function and as the body
        self.bodies: list[tuple[z3.FuncDeclRef, Callable[[Any], Any]]] = []
        #: the indices bound now, innermost last (:meth:`_bound`)
        self.binders: list[z3.ArithRef] = []
        #: each symbol lifted so far, by name: its function of the bound index
        self.lifted: dict[str, z3.FuncDeclRef] = {}
        #: the searches made so far (:meth:`shared`)
        self.searches: dict[tuple[int, ...], tuple[Any, list[Any], list[Any]]] = {}

    def _bound(self, q: z3.ArithRef, build: Callable[[], list[Any]]) -> Callable[[Any], Any]:
        """Runs ``build`` with ``q`` an index bound by a quantifier, as the body of a
        search or of an ``each`` is run. A search in the body depends on ``q``: each
        symbol it makes (a witness, a body's function) becomes a function of ``q`` and
        each fact it adds a universal over ``q`` (a witness for every index). Gives the
        map that lifts a term of the body; ``build`` returns the terms whose symbols it
        must see. ``broken`` ``nested``: they stay as they are (one witness, whose facts
        name the bound index as a free constant)."""
        names: set[str] = set()
        start = len(self.facts)
        agg.NAMES.append(names)
        self.binders.append(q)
        try:
            terms = build()
        finally:
            agg.NAMES.pop()
            self.binders.pop()
        made = self.facts[start:]
        if self.broken == "nested" or not made:
            return lambda e: e
        del self.facts[start:]
        subs = []
        for d in _symbols([*made, *terms], names):
            domain = [d.domain(i) for i in range(d.arity())]
            lifted = z3.Function(f"{d.name()}@", z3.IntSort(), *domain, d.range())
            self.lifted[d.name()] = lifted
            subs.append(_applied(d, lifted, q))

        def lift(e: Any) -> Any:
            return z3.substitute_funs(e, *subs)

        self.facts += [z3.ForAll([q], lift(fact)) for fact in made]
        return lift

    def shared(self, key: list[Any], make: Callable[[], list[Any]]) -> list[Any]:
        """The terms of a search that ``make`` makes, made once: ``key`` says what is
        searched (terms of the body, the index bound now written as one constant). The
        same search again under another bound index (a body that searches at each
        position, run for two searches over positions) reuses the first one's
        witnesses, as functions of this index: two witnesses of one search are two
        symbols E-matching does not relate (the bounded form shares the search by
        hash-consing). ``broken`` ``unshared``: each search is made anew."""
        q = self.binders[-1] if self.binders else None
        canonical = [_term(k) if q is None else z3.substitute(_term(k), (q, _BOUND)) for k in key]
        ident = tuple(k.get_id() for k in canonical)
        if self.broken == "unshared" or ident not in self.searches:
            terms = make()
            # the key's terms are kept: an identifier is the term's while it lives
            self.searches[ident] = (q, terms, canonical)
            return terms
        first, terms, _ = self.searches[ident]
        if first is None or q is None or first.eq(q):
            return terms
        exprs = [_term(t) for t in terms]
        if _symbols(exprs, agg.NAMES[-1] if agg.NAMES else set()):
            return make()  # the first search's bound index is still open
        subs = [_applied(d, self.lifted[d.name()], q) for d in _symbols(exprs, set(self.lifted))]
        return [
            z3.substitute(z3.substitute_funs(_term(t), *subs), (first, q)) if z3.is_expr(t) else t
            for t in terms
        ]

    def _defined(self, body: Callable[[Sym], Sym], sort: z3.SortRef) -> z3.FuncDeclRef:
        """A function of the index equal to the body everywhere: the aggregates'
        patterns are on its applications."""
        value = lg.lift_bool if sort == z3.BoolSort() else lg.lift_int
        i = z3.Int(_name("i"))
        term: list[Any] = []

        def build() -> list[Any]:
            term.append(value(body(i)))
            return term

        lift = self._bound(i, build)
        f = z3.Function(_name("body"), z3.IntSort(), sort)
        self.facts.append(z3.ForAll([i], f(i) == lift(term[0]), patterns=[f(i)]))
        self.bodies.append((f, lambda j: value(body(j))))
        return f

    def each(self, update: Callable[[Sym], None]) -> None:
        """A write at every index: ``update`` runs once, at a bound index ``q``
        (:meth:`_bound`), and its writes at ``q`` to arrays over records become lambdas
        over ``q`` (:meth:`SymCells._write` keeps them until the body is done)."""
        q = z3.Int(_name("each"))
        writes: list[tuple[SymCells, tuple[object, ...], Any, Any]] = []
        _EACH.append((q, writes))

        def build() -> list[Any]:
            update(q)
            return [x for w in writes for x in w[2:]]

        try:
            lift = self._bound(q, build)
        finally:
            _EACH.pop()
        for cells, where, value, guard in writes:
            old = cells.values[where]
            new = z3.Const(_name(str(where[0])), old.sort())
            cells.facts.append(new == z3.Lambda([q], z3.If(lift(guard), lift(value), old[q])))
            cells.values[where] = new

    @property
    def end(self) -> Sym:
        return self.term

    def every(self, body: Callable[[Sym], list[tuple[str, Sym]]]) -> list[tuple[str, Sym]]:
        """Each fact the body states at one index, as one universal over the indices
        (named after the body's, with ``every`` for the index): the body runs once, at
        a bound index (:meth:`_bound`)."""
        q = z3.Int(_name("every"))
        made: list[tuple[str, Sym]] = []

        def build() -> list[Any]:
            made.extend(body(q))
            return [lg.lift_bool(fact) for _, fact in made]

        lift = self._bound(q, build)
        out = []
        for name, fact in made:
            lifted = lift(lg.lift_bool(fact))
            # instances at the records whose cells the fact reads (chosen by Z3 alone,
            # the patterns include a record's key or channel, which every record term
            # has: the instances chain without end over a whole micro-step)
            patterns = _reads_at(lifted, q)
            universal = z3.ForAll(
                [q], z3.Implies(agg._below(q, self.term), lifted), patterns=patterns
            )
            out.append((f"{name} every", universal))
        return out

    def ground(self, size: int) -> list[z3.BoolRef]:
        """Each body's definition at each index below ``size``: instances of facts given
        already, which put the bodies' applications at those indices among the terms
        E-matching looks at (a check at a concrete size needs them)."""
        return [f(i) == body(z3.IntVal(i)) for f, body in self.bodies for i in range(size)]

    def first(self, body: Callable[[Sym], Sym], default: Sym) -> Sym:
        cond = self._defined(body, z3.BoolSort())
        if self.broken == "first":
            w = z3.Int(_name("any"))
            self.facts.append(z3.Or(z3.And(agg._below(w, self.term), cond(w)), w == default))
            return w
        w, facts = agg.first(cond, self.term, default)
        self.facts.extend(facts)
        return w

    def some(self, body: Callable[[Sym], Sym]) -> Sym:
        return lg.le(0, self.first(body, -1))

    def minimum(self, body: Callable[[Sym], tuple[Sym, Sym]], default: Sym) -> Sym:
        cond = self._defined(lambda i: body(i)[0], z3.BoolSort())
        value = self._defined(lambda i: body(i)[1], z3.IntSort())
        m, facts = agg.minimum(cond, value, self.term, default)
        self.facts.extend(facts)
        return m

    def count(self, body: Callable[[Sym], Sym]) -> Sym:
        """A fresh count with a fresh bijection between the indices where the body
        holds and ``0 .. count - 1`` (``index`` and its inverse ``holder``): a finite
        set has a count, so the facts lose no state, and they make it exact."""
        cond = self._defined(body, z3.BoolSort())
        c = z3.Int(_name("count"))
        index = z3.Function(_name("index"), z3.IntSort(), z3.IntSort())
        holder = z3.Function(_name("holder"), z3.IntSort(), z3.IntSort())
        i, j = z3.Int(_name("i")), z3.Int(_name("j"))
        self.facts += [
            c >= 0,
            c <= self.term,  # a count of indices below the size (no instance shows it)
            z3.ForAll(
                [i],
                z3.Implies(
                    z3.And(agg._below(i, self.term), cond(i)),
                    z3.And(agg._below(index(i), c), holder(index(i)) == i),
                ),
                patterns=[cond(i)],
            ),
            z3.ForAll(
                [j],
                z3.Implies(
                    agg._below(j, c),
                    z3.And(
                        agg._below(holder(j), self.term), cond(holder(j)), index(holder(j)) == j
                    ),
                ),
                patterns=[holder(j)],
            ),
        ]
        return c


@frozen
class Kept:
    """A count kept by the writes to the array ``reads``: of the records where ``body``
    holds (a function of the cells and one record that reads ``reads`` at that record
    only), with a ghost bijection between them and ``0 .. count - 1`` (``index`` and
    its inverse ``holder``). A write at a record can change the body there only: the
    record joins (it takes the next index) or leaves (the last index's holder moves into
    the gap) or neither."""

    reads: str
    body: Callable[[SymCells, Sym], Sym]
    index: Any
    holder: Any
    count: Any

    def facts(self, cells: SymCells) -> list[z3.BoolRef]:
        """The bijection: the count is exact."""
        n, r, j = cells.n, z3.Int(_name("r")), z3.Int(_name("j"))
        array, held = cells.values[(self.reads,)], self.holder[j]
        return [
            self.count >= 0,
            z3.ForAll(
                [r],
                z3.Implies(
                    z3.And(agg._below(r, n), lg.lift_bool(self.body(cells, r))),
                    z3.And(agg._below(self.index[r], self.count), self.holder[self.index[r]] == r),
                ),
                patterns=[array[r]],
            ),
            z3.ForAll(
                [j],
                z3.Implies(
                    agg._below(j, self.count),
                    z3.And(
                        agg._below(held, n),
                        lg.lift_bool(self.body(cells, held)),
                        self.index[held] == j,
                    ),
                ),
                patterns=[held],
            ),
        ]

    def after(self, before: SymCells, after: SymCells, i: Sym, facts: list[z3.BoolRef]) -> Kept:
        """The ghost after a write at ``i`` took ``before`` to ``after``."""
        inside = agg._below(lg.lift_int(i), after.n)
        was, now = lg.lift_bool(self.body(before, i)), lg.lift_bool(self.body(after, i))
        joins, leaves = z3.And(inside, z3.Not(was), now), z3.And(inside, was, z3.Not(now))
        i = lg.lift_int(i)
        gap, last = self.index[i], self.holder[self.count - 1]
        if after.broken == "keep":  # a leaving record's gap is not filled
            gap, last = self.count - 1, self.holder[self.count - 1]
        index = z3.If(
            joins,
            z3.Store(self.index, i, self.count),
            z3.If(leaves, z3.Store(self.index, last, gap), self.index),
        )
        holder = z3.If(
            joins,
            z3.Store(self.holder, self.count, i),
            z3.If(leaves, z3.Store(self.holder, gap, last), self.holder),
        )
        count = z3.If(joins, self.count + 1, z3.If(leaves, self.count - 1, self.count))
        named = []
        for what, value in (("index", index), ("holder", holder), ("count", count)):
            ghost = z3.Const(_name(what), value.sort())
            facts.append(ghost == value)
            named.append(ghost)
        return Kept(self.reads, self.body, *named)


class SymCells(Cells):
    """Cells whose arrays over records (and, per row, over positions) are Z3 arrays of
    a symbolic size; the other cells are as in :class:`Cells`. A write names the array
    after it (a fresh constant, defined in ``facts``): a pattern cannot hold an ``if``.
    ``kept`` holds the counts the writes keep (:class:`Kept`), by name."""

    def __init__(self, size: z3.ArithRef, facts: list[z3.BoolRef]) -> None:
        super().__init__()
        self.n = size
        self.facts = facts
        self.symbolic: set[str] = set()
        self.kept: dict[str, Kept] = {}
        #: the matrices over records and a few columns (:meth:`columns`)
        self.by_column: set[str] = set()
        #: ``keep``: the kept counts lose track of a leaving record (a fault for tests)
        self.broken = ""

    def copy(self) -> SymCells:
        out = SymCells(self.n, self.facts)
        out.broken = self.broken
        out.values = dict(self.values)
        out.shape = dict(self.shape)
        out.symbolic = set(self.symbolic)
        out.kept = dict(self.kept)
        out.by_column = set(self.by_column)
        return out

    def keep(self, label: str, reads: str, body: Callable[[SymCells, Sym], Sym]) -> Kept:
        """A kept count from now on, with fresh ghosts (its facts are the caller's)."""
        index = z3.Array(_name("index"), z3.IntSort(), z3.IntSort())
        holder = z3.Array(_name("holder"), z3.IntSort(), z3.IntSort())
        kept = self.kept[label] = Kept(reads, body, index, holder, z3.Int(_name("count")))
        return kept

    def records(self, name: str, sort: z3.SortRef, rows: int = 0) -> None:
        """A fresh array over records (or ``rows`` of them, over positions)."""
        self.symbolic.add(name)
        if rows:
            self.shape[name] = (rows, 0)
            for a in range(rows):
                self.values[(name, a)] = z3.Array(_name(f"{name}{a}"), z3.IntSort(), sort)
        else:
            self.shape[name] = (0,)
            self.values[(name,)] = z3.Array(_name(name), z3.IntSort(), sort)

    def columns(self, name: str, sort: z3.SortRef, count: int) -> None:
        """A fresh matrix over records and ``count`` columns: an array over records
        for each column."""
        self.symbolic.add(name)
        self.by_column.add(name)
        self.shape[name] = (0, count)
        for b in range(count):
            self.values[(name, b)] = z3.Array(_name(f"{name}{b}"), z3.IntSort(), sort)

    def array_of(self, name: str) -> Any:
        """The Z3 array of ``name`` over records."""
        return self.values[(name,)]

    def cell(self, name: str, *index: Any) -> Sym:
        if name not in self.symbolic:
            return super().cell(name, *index)
        if len(index) == 1:
            return self.values[(name,)][lg.lift_int(index[0])]
        row, column = index
        if name in self.by_column:
            return self.values[(name, column)][lg.lift_int(row)]
        return self.values[(name, row)][lg.lift_int(column)]

    def at(self, name: str, i: Sym, j: Sym | None = None) -> Sym:
        """As :meth:`Cells.at`: a read out of range gives the default."""
        if name not in self.symbolic:
            return super().at(name, i, j)
        if name in self.by_column:
            columns = [self.values[(name, b)] for b in range(self.shape[name][1])]
            sort = columns[0].range()
            read = lg.select(j, [a[lg.lift_int(i)] for a in columns], _zero(sort))
            inside = agg._below(lg.lift_int(i), self.n)
            return z3.If(inside, _lift(read, sort), _zero(sort))
        if j is None:
            array, index = self.values[(name,)], i
        else:
            rows = [self.values[(name, a)] for a in range(self.shape[name][0])]
            array, index = lg.select(i, rows, z3.K(z3.IntSort(), _zero(rows[0].range()))), j
        inside = agg._below(lg.lift_int(index), self.n)
        return z3.If(inside, array[lg.lift_int(index)], _zero(array.range()))

    def _write(self, where: tuple[object, ...], i: Sym, value: Sym, guard: Sym) -> None:
        if _EACH and z3.is_expr(i) and i.eq(_EACH[-1][0]):
            # a write at every index (:meth:`SymIndices.each`), made when the body is done
            assert all((k.reads,) != where for k in self.kept.values()), "a kept count"
            value = _lift(value, self.values[where].sort().range())
            _EACH[-1][1].append((self, where, value, lg.lift_bool(guard)))
            return
        before = self.copy()
        old = self.values[where]
        new = z3.Const(_name(str(where[0])), old.sort())
        stored = z3.Store(old, lg.lift_int(i), _lift(value, old.sort().range()))
        self.facts.append(new == z3.If(lg.lift_bool(guard), stored, old))
        self.values[where] = new
        for label, kept in before.kept.items():
            if (kept.reads,) == where:
                self.kept[label] = kept.after(before, self, i, self.facts)

    def put(self, name: str, i: Sym, value: Sym, guard: Sym = True, j: Sym | None = None) -> None:
        if name not in self.symbolic:
            super().put(name, i, value, guard, j)
            return
        if lg._const(guard) is False:
            return
        if j is None:
            self._write((name,), i, value, guard)
            return
        if name in self.by_column:
            for b in range(self.shape[name][1]):
                here = lg.and_(guard, lg.eq(j, b))
                if lg._const(here) is not False:
                    self._write((name, b), i, value, here)
            return
        for a in range(self.shape[name][0]):
            self._write((name, a), j, value, lg.and_(guard, lg.eq(i, a)))


#: the index bound now and a slot's record, as :meth:`SymIndices.shared` writes them in
#: a search's key
_BOUND, _RECORD = z3.Int("bound index"), z3.Int("slot record")


def _reads_at(e: Any, q: z3.ArithRef) -> list[Any]:
    """The reads of arrays (named, not written in place) at ``q`` in ``e``."""
    out: list[Any] = []
    seen: set[int] = set()
    todo = [e]
    while todo:
        x = todo.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if z3.is_select(x) and x.arg(1).eq(q) and z3.is_const(x.arg(0)):
            out.append(x)
        todo += x.children()
    return out


def _term(x: Sym) -> Any:
    """``x`` as a Z3 term."""
    if z3.is_expr(x):
        return x
    if isinstance(x, tuple):  # a concrete term
        return lg.lift_term(x)
    return z3.BoolVal(x) if isinstance(x, bool) else z3.IntVal(x)


def _zero(sort: z3.SortRef) -> Any:
    """The default of a read out of range (as :mod:`.cells` has it)."""
    return z3.BoolVal(False) if sort == z3.BoolSort() else z3.IntVal(0)


def _lift(value: Sym, sort: z3.SortRef) -> Any:
    return lg.lift_bool(value) if sort == z3.BoolSort() else lg.lift_int(value)


class _Records:
    """A record's field as a Z3 function, indexed like the bounded shape's lists."""

    def __init__(self, name: str) -> None:
        self.function = z3.Function(_name(name), z3.IntSort(), z3.IntSort())

    def __getitem__(self, r: Sym) -> Sym:
        return self.function(lg.lift_int(r))


class SymMachine(Machine):
    """The machine with a symbolic number of records: only the record's accessors
    differ (a bounded shape selects from a list; out of range, 0)."""

    size: z3.ArithRef

    def _field(self, values: Any, record: Sym) -> Sym:
        inside = agg._below(lg.lift_int(record), self.size)
        return z3.If(inside, values[record], z3.IntVal(0))

    def key_of(self, record: Sym) -> Sym:
        return self._field(self.shape.key, record)

    def channel_of(self, record: Sym) -> Sym:
        return self._field(self.shape.channel, record)

    def mode_of(self, record: Sym) -> Sym:
        return self._field(self.shape.mode, record)

    def waiting_count(self, key: Sym) -> Sym:
        """The kept count of ``key``'s waiting inputs, if :func:`machine` keeps them."""
        op = self.op
        assert isinstance(op, SymCells)
        if not op.kept:
            return super().waiting_count(key)
        return lg.select(key, [op.kept[f"waiting {k}"].count for k in range(self.k)], 0)


#: how many waiting inputs of a key the fragment's contract lets wait before it gives up
#: (``ordered`` lets 64; one makes the count matter with few records)
GIVE_UP_AFTER = 1


def contract(split: bool) -> Contract:
    """``ordered`` giving up after :data:`GIVE_UP_AFTER` waiting inputs, with (``split``)
    or without ``split_order``'s give-up."""
    return attrs.evolve(
        ORDERED, name="ordered-fragment", split_order=split, give_up_after=GIVE_UP_AFTER
    )


def machine(
    facts: list[z3.BoolRef],
    split: bool = False,
    keys: int = 2,
    channels: int = 2,
    time: int = 10,
    broken: str = "",
    kept: bool = True,
    agent: str = "stateful",
    cls: type[SymMachine] = SymMachine,
) -> tuple[SymMachine, z3.ArithRef]:
    """The machine in an arbitrary state of a recovering epoch, with ``n`` records;
    ``kept``: with a kept count of each key's waiting inputs (else each state's count
    is its own, :meth:`SymIndices.count`)."""
    n = z3.Int(_name("n"))
    bound = Bound(inputs=1, channels=channels, keys=keys, crashes=1)
    shape = Shape(_Records("channel"), _Records("key"), _Records("mode"))  # type: ignore[arg-type]
    m = cls(contract(split), agent, bound, shape, symbolic_env, epoch=4)
    m.size = n
    m.records = m.positions = SymIndices(n, facts, broken)
    m.current, m.time = 1, time
    op = SymCells(n, facts)
    op.broken = broken if broken == "keep" else ""
    for name, sort in (("waiting", z3.BoolSort()), ("waiting-since", z3.IntSort())):
        op.records(name, sort)
    op.records("waiting-version", z3.IntSort())
    op.records("expected", z3.IntSort(), rows=keys)
    op.records("expected-version", z3.IntSort(), rows=keys)
    for name in ("next", "expected-end", "diverge-at"):
        op.array(name, keys, 0)
        for k in range(keys):
            op.values[(name, k)] = z3.Int(_name(f"{name}{k}"))
    op.array("offset", channels, 0)
    for ch in range(channels):
        op.values[("offset", ch)] = z3.Int(_name(f"offset{ch}"))
    m.op = op
    key_of = shape.key.function  # type: ignore[attr-defined]

    def waiting_of(k: int) -> Callable[[SymCells, Sym], Sym]:
        return lambda cells, r: lg.and_(cells.cell("waiting", r), lg.eq(key_of(r), k))

    for k in range(keys if kept else 0):
        facts += op.keep(f"waiting {k}", "waiting", waiting_of(k)).facts(op)
    for ch in range(channels):
        m.world.values[("high", ch)] = z3.Int(_name(f"high{ch}"))
    r = z3.Int(_name("r"))
    channel = shape.channel.function  # type: ignore[attr-defined]
    facts += [
        n >= 0,
        z3.ForAll([r], z3.And(key_of(r) >= 0, key_of(r) < keys), patterns=[key_of(r)]),
        z3.ForAll([r], z3.And(channel(r) >= 0, channel(r) < channels), patterns=[channel(r)]),
    ]
    return m, n


def invariant(m: SymMachine, n: z3.ArithRef) -> list[z3.BoolRef]:
    """The invariant of the waiting inputs, over every record: one waits since a tick
    not after now, lies below its channel's offset, and no two wait since one tick."""
    op = m.op
    assert isinstance(op, SymCells)
    waiting, since = op.array_of("waiting"), op.array_of("waiting-since")
    offset = [op.cell("offset", ch) for ch in range(m.c)]
    r, q = z3.Int(_name("r")), z3.Int(_name("q"))
    rec = agg._below(r, n)
    return [
        z3.ForAll(
            [r], z3.Implies(z3.And(rec, waiting[r]), since[r] <= m.time), patterns=[waiting[r]]
        ),
        z3.ForAll(
            [r],
            z3.Implies(
                z3.And(rec, waiting[r]), r < lg.lift_int(lg.select(m.channel_of(r), offset))
            ),
            patterns=[waiting[r]],
        ),
        z3.ForAll(
            [r, q],
            z3.Implies(
                z3.And(rec, agg._below(q, n), waiting[r], waiting[q], r != q),
                since[r] != since[q],
            ),
            patterns=[z3.MultiPattern(waiting[r], waiting[q])],
        ),
    ]


def step(m: Machine, kind: str, broken: str = "", around: bool = False) -> Sym:
    """The machine's step of ``kind``, as :func:`waiting_step` says, on ``m`` (bounded
    or symbolic alike): the record delivered, or the waiting input taken. ``around``:
    with what the micro-step does around it as well: a delivered record waits only if
    its key is recovering and the monitors mark it delivered (``Monitors.deliver``); a
    taken input is marked accepted (the flag ``Monitors.accept`` writes; not with
    ``broken`` ``unaccepted``)."""
    if kind == "arrive":
        record = m.next_record(0)
        m.assume(lg.le(0, record))
        if around:
            m.assume(m.recovering(m.key_of(record)))
        if broken != "offset":
            m.op.put("offset", 0, lg.add(record, 1))
        if around:
            m.monitors.deliver(True, record)
        m.arrive_waiting(True, record, 0)
        return record
    if kind == "take":
        candidates = m.waiting_of(m.world["key"])
        m.assume(m.records.some(candidates))
        taken = m.earliest_waiting(candidates)
        m.op.put("waiting", taken, False)
        if around and broken != "unaccepted":
            m.op.put("accepted", taken, True)
        m.tick()
        return taken
    if kind == "finish":
        active = lg.eq(m.world["phase"], ADVANCE)
        diverges, done = m.finish(m.loop_state(active))
        return lg.ite(diverges, 1, lg.ite(done, 2, 0))
    raise ValueError(f"unknown step {kind!r}: arrive, take or finish")


def waiting_step(
    kind: str,
    split: bool = False,
    broken: str = "",
    premises: bool = False,
    timeout_ms: int = 30_000,
    keys: int = 2,
    channels: int = 2,
) -> z3.CheckSatResult:
    """``unsat`` when the machine's step of ``kind`` keeps :func:`invariant` for every
    number of records: ``arrive`` (channel 0 delivers its next record, which waits),
    ``take`` (the advance loop takes its key's earliest waiting input; the goal also
    says it is the earliest) or ``finish``. ``broken``: ``first`` (a search that may
    answer any index where its body holds), ``keep`` (a leaving record's gap in a kept
    count not filled), ``offset`` (the delivery leaves the offset where it was); the
    check should then not be ``unsat``. ``premises``: whether the step's premises
    can hold (``sat``, with at most three records). ``keys`` and ``channels``: how
    many, concrete."""
    if broken not in ("", "first", "keep", "offset"):
        raise ValueError(f"unknown fault {broken!r}: first, keep or offset")
    facts: list[z3.BoolRef] = []
    m, n = machine(facts, split, keys, channels, broken=broken if broken != "offset" else "")
    facts += invariant(m, n)
    before = m.op.copy()
    candidates = m.waiting_of(m.world["key"])
    done = step(m, kind, broken)
    facts += [lg.lift_bool(a) for a in m.assumptions]
    goals: list[z3.BoolRef] = []
    if kind == "take":
        since = before.cell("waiting-since", done)
        r = z3.Int(_name("r"))
        goals.append(
            z3.And(
                lg.lift_bool(candidates(done)),
                z3.ForAll(
                    [r],
                    z3.Implies(
                        z3.And(agg._below(r, n), lg.lift_bool(candidates(r))),
                        since <= before.cell("waiting-since", r),
                    ),
                ),
            )
        )
    goals += invariant(m, n)
    op = m.op
    assert isinstance(op, SymCells)
    for kept in op.kept.values():
        goals += kept.facts(op)
    solver = z3.Solver()
    solver.set("mbqi", premises, "timeout", timeout_ms)
    solver.add(*facts)
    if premises:
        solver.add(n <= 3)
    else:
        solver.add(z3.Not(z3.And(*goals)))
    return solver.check()


#: the cells of the fragment's state, by how they are indexed
_BY_RECORD = ("waiting", "waiting-since", "waiting-version")
_BY_KEY = ("next", "expected-end", "diverge-at")
_WORLD = ("phase", "key", "after", "after-arg", "order", "order-in")


def bounded_twin(sym: SymMachine, size: int, agent: str) -> Machine:
    """The bounded machine of ``spec/encoding.py`` with ``size`` records, their fields
    those of the symbolic machine ``sym``, in its epoch and at its tick."""
    shape = sym.shape
    fields = [[f[r] for r in range(size)] for f in (shape.channel, shape.key, shape.mode)]
    bound = Bound(inputs=size, channels=sym.c, keys=sym.k, crashes=sym.f)
    m = Machine(sym.contract, agent, bound, Shape(*fields), symbolic_env, epoch=4)
    m.current, m.time = sym.current, sym.time
    return m


def agree(
    kind: str, size: int, split: bool = False, broken: str = "", timeout_ms: int = 30_000
) -> z3.CheckSatResult:
    """``unsat`` when, with ``size`` records, the step of ``kind`` on the symbolic
    machine leaves the same state as on the bounded machine of ``spec/encoding.py``,
    from every state: the symbolic domain and cells mean what the bounded ones do.
    ``broken``: as for :func:`waiting_step`, on the symbolic machine only."""
    facts: list[z3.BoolRef] = []
    # the kept counts only where the step reads them: their facts, needed nowhere
    # else, slowed the search down (``unknown`` at 30 s with three records)
    count = kind == "finish"
    sym, n = machine(facts, split, broken=broken if broken != "offset" else "", kept=count)
    facts.append(n == size)
    m = bounded_twin(sym, size, "stateful")
    for name in _BY_RECORD:
        for r in range(size):
            m.op.values[(name, r)] = sym.op.cell(name, r)
    for name in ("expected", "expected-version"):
        for k in range(sym.k):
            for q in range(size):
                m.op.values[(name, k, q)] = sym.op.cell(name, k, q)
    for name in _BY_KEY:
        for k in range(sym.k):
            m.op.values[(name, k)] = sym.op.cell(name, k)
    for ch in range(sym.c):
        m.op.values[("offset", ch)] = sym.op.cell("offset", ch)
        m.world.values[("high", ch)] = sym.world.cell("high", ch)
    for w in _WORLD:
        for k in range(sym.k if w in ("order", "order-in") else 1):
            where = (w, k) if w in ("order", "order-in") else (w,)
            sort = z3.BoolSort() if w == "order-in" else z3.IntSort()
            sym.world.values[where] = m.world.values[where] = z3.Const(_name(w), sort)
    key = sym.world["key"]
    facts += [key >= 0, key < sym.k]
    same = [lg.eq(step(sym, kind, broken), step(m, kind))]
    facts += [lg.lift_bool(a) for a in sym.assumptions + m.assumptions]
    for name in _BY_RECORD:
        same += [lg.eq(sym.op.cell(name, r), m.op.cell(name, r)) for r in range(size)]
    for name in _BY_KEY:
        same += [lg.eq(sym.op.cell(name, k), m.op.cell(name, k)) for k in range(sym.k)]
    same += [lg.eq(sym.op.cell("offset", ch), m.op.cell("offset", ch)) for ch in range(sym.c)]
    same += [
        lg.eq(value, m.world.values[w])
        for w, value in sym.world.values.items()
        if w in m.world.values
    ]
    solver = z3.Solver()
    solver.set("mbqi", False, "timeout", timeout_ms)
    solver.add(*facts, z3.Not(lg.lift_bool(lg.and_(*same))))
    return solver.check()


def count_across_take(timeout_ms: int = 20_000) -> z3.CheckSatResult:
    """Whether the counts of the taking key's waiting inputs, each defined in its own
    state (``Indices.count`` over a symbolic size), are shown to differ by one across
    the take: ``unsat`` would say so; E-matching alone gives ``unknown``, which is why
    the machine keeps a count through its writes (:class:`Kept`) instead."""
    facts: list[z3.BoolRef] = []
    m, n = machine(facts, split=True)
    facts += invariant(m, n)
    key = m.world["key"]
    before = m.records.count(m.waiting_of(key))
    step(m, "take")
    after = m.records.count(m.waiting_of(key))
    facts += [lg.lift_bool(a) for a in m.assumptions]
    solver = z3.Solver()
    solver.set("mbqi", False, "timeout", timeout_ms)
    solver.add(*facts, after != before - 1)
    return solver.check()


# -- the induction's facts over a symbolic number of records ---------------------------
#
# The invariant of ``spec/induction.py`` states its facts about one record as a body
# (``induction.delivered``, ``induction.waiting``, and ``induction.loop_facts``'s about
# the advance loop), stated at every record through ``Machine.records``: over the
# bounded records one fact per record, over :class:`SymIndices` one universal.


def families(
    m: SymMachine, epoch: int, now: Sym, views: tuple[tuple[str, Cells, Sym], ...] = ()
) -> list[tuple[str, z3.BoolRef]]:
    """The induction's facts about records, as it states them about each of ``views``
    (name, cells, whether live; by default the live view ``op`` of a running operator)
    in ``epoch``: what was delivered (accepted, waiting), the waiting inputs (every
    tick so far below ``now``); and the advance loop's."""
    made: list[tuple[str, Sym]] = []
    for name, view, guard in views or (("op", m.op, True),):
        made += m.records.every(ind.delivered(m, name, view, guard))
        made += m.records.every(ind.waiting(m, name, view, guard, epoch, now))
    made += ind.loop_facts(m, epoch)
    return [(name, lg.lift_bool(fact)) for name, fact in made]


def families_step(
    kind: str,
    split: bool = False,
    broken: str = "",
    mbqi: bool = True,
    premises: int = 0,
    timeout_ms: int = 10_000,
) -> dict[str, z3.CheckSatResult]:
    """Whether the step of ``kind`` keeps each of the induction's facts of
    :func:`families`, for every number of records: ``unsat`` for a fact that it keeps.
    ``finish`` is asked only the facts over records (the advance loop's others lean on
    the rest of the micro-step and on the invariant's facts per key). The steps are
    :func:`step`'s with what the micro-step does around them (``around``).
    ``broken``: ``offset`` (the delivery leaves the offset where it was) or
    ``unaccepted`` (the taken input is not marked accepted). ``mbqi``: with model-based
    instantiation (else E-matching alone). ``premises``: instead, whether the premises
    can hold with that many records (``sat``; the only answer, named ``premises``)."""
    if broken not in ("", "offset", "unaccepted"):
        raise ValueError(f"unknown fault {broken!r}: offset or unaccepted")
    if kind not in ("arrive", "take", "finish"):
        raise ValueError(f"unknown step {kind!r}: arrive, take or finish")
    facts: list[z3.BoolRef] = []
    m, n = machine(facts, split)
    op, w = m.op, m.world
    assert isinstance(op, SymCells)
    for name in ("accepted", "delivered"):
        op.records(name, z3.BoolSort())
    op.array("inserted", m.k, 0)
    for k in range(m.k):
        op.values[("inserted", k)] = z3.Int(_name(f"inserted{k}"))
        # the induction's "recovering key inserted" (stated per key, with the expected
        # order's ghosts): a key that is recovering has a rank
        recovering = lg.or_(
            lg.lt(op.cell("next", k), op.cell("expected-end", k)),
            lg.le(0, op.cell("diverge-at", k)),
        )
        facts.append(lg.lift_bool(lg.implies(recovering, lg.lt(op.cell("inserted", k), ABSENT))))
    for name in ("phase", "key", "after", "after-arg"):
        w.values[(name,)] = z3.Int(_name(name))
    for j in range(m.k):
        w.values[("order", j)] = z3.Int(_name("order"))
        w.values[("order-in", j)] = z3.Bool(_name("order-in"))
    key = w["key"]
    facts += [key >= 0, key < m.k]
    # the induction's "offset" (per channel): none beyond what the channel delivered
    facts += [lg.lift_bool(lg.le(op.cell("offset", ch), w.cell("high", ch))) for ch in range(m.c)]
    epoch = 1
    facts += [fact for _, fact in families(m, epoch, m.time)]
    m.monitors.op = op
    step(m, kind, broken, around=True)
    facts += [lg.lift_bool(a) for a in m.assumptions]
    goals = families(m, epoch, m.time + 1)
    if kind == "finish":
        goals = [(name, goal) for name, goal in goals if name.endswith(" every")]
    solver = z3.Solver()
    solver.set("mbqi", mbqi or premises > 0, "timeout", timeout_ms)
    solver.add(*facts)
    if premises:
        solver.add(n == premises)
        return {"premises": solver.check()}
    out: dict[str, z3.CheckSatResult] = {}
    for name, goal in goals:
        solver.push()
        solver.add(z3.Not(goal))
        out[name] = solver.check()
        solver.pop()
    return out


# -- the store over a symbolic number of records -----------------------------------------
#
# The bounded store has a slot per record, entry (or order entry) and epoch; here a
# *family* per entry and epoch holds each field of its slots as an array over records,
# and a slot of it is a :class:`Slot` whose fields are reads of those arrays at one
# record. The machine's searches over slots (``Machine.written`` and the sets made from
# it, :class:`replay_contract.spec.encoding.Slots`) become :class:`SymSlots`: each body is
# called on the slot at a bound record, and a write to each slot (``Slots.each``) on the
# slot at a fresh record, its new fields made into arrays by a lambda.

#: the fields of a slot that are arrays over records, with the sort of their cells
_SLOT_FIELDS = (
    ("present", "bool"),
    ("position", "int"),
    ("version", "int"),
    ("output", "term"),
    ("order", "bool"),
    ("voided", "bool"),
    ("prefix", "term"),
    ("time", "int"),
)
_SORTS = {"bool": z3.BoolSort(), "int": z3.IntSort(), "term": lg.Term}


class Family:
    """The slots of one kind, entry and epoch, one per record: each field an array."""

    def __init__(self, kind: str, entry: int, epoch: int, reads: int, writes: tuple[int, ...]):
        self.kind, self.entry, self.epoch = kind, entry, epoch

        def fresh(what: str, sort: str) -> Any:
            return z3.Array(_name(f"{kind}{entry}.{epoch}.{what}"), z3.IntSort(), _SORTS[sort])

        self.fields: dict[str, Any] = {name: fresh(name, sort) for name, sort in _SLOT_FIELDS}
        self.reads = [fresh(f"read{i}", "term") for i in range(reads)]
        self.writes = {f: fresh(f"write{f}", "term") for f in writes}

    def slot(self, m: SymMachine, r: Sym) -> Slot:
        """The slot of record ``r`` (a term)."""
        s = Slot(0, self.kind, r, self.epoch, m.shape.key[r], self.entry)
        for name, array in self.fields.items():
            setattr(s, name, array[r])
        s.reads = tuple(a[r] for a in self.reads)
        s.writes = {f: a[r] for f, a in self.writes.items()}
        return s

    def store(self, s: Slot, r: z3.ArithRef, facts: list[z3.BoolRef]) -> None:
        """The fields of ``s``, a slot at the fresh record ``r``, as the new arrays."""

        def named(old: Any, value: Sym) -> Any:
            value = _lift(value, old.range()) if old.range() != lg.Term else lg.lift_term(value)
            new = z3.Const(_name("slots"), old.sort())
            facts.append(new == z3.Lambda([r], value))
            return new

        for name in self.fields:
            self.fields[name] = named(self.fields[name], getattr(s, name))
        self.reads = [named(a, v) for a, v in zip(self.reads, s.reads, strict=True)]
        self.writes = {f: named(self.writes[f], s.writes[f]) for f in self.writes}


class SymSlots(Slots):
    """A set of slots made of whole families, in the bounded order: epoch, then record,
    then entry (the order entry last)."""

    def __init__(self, m: SymMachine, families: list[Family]) -> None:
        super().__init__([])
        self.m, self.families = m, families

    def where(self, keep: Callable[[Slot], bool]) -> SymSlots:
        # a set depends on kind, entry and epoch only: any record shows them
        return SymSlots(self.m, [f for f in self.families if keep(f.slot(self.m, 0))])

    def _records(self) -> SymIndices:
        records = self.m.records
        assert isinstance(records, SymIndices)
        return records

    def _at(self, f: Family, body: Callable[[Slot], Any]) -> Callable[[Sym], Any]:
        """The body as a function of the record, on family ``f``'s slots."""
        return lambda r: body(f.slot(self.m, r))

    def some(self, body: Callable[[Slot], Sym]) -> Sym:
        return lg.or_(*(self._records().some(self._at(f, body)) for f in self.families))

    def minimum(self, body: Callable[[Slot], tuple[Sym, Sym]], default: Sym) -> Sym:
        out = default
        for f in self.families:
            out = self._records().minimum(self._at(f, body), out)
        return out

    def latest(
        self, body: Callable[[Slot], tuple[Sym, tuple[Sym, ...]]], default: tuple[Sym, ...]
    ) -> tuple[Sym, tuple[Sym, ...]]:
        """Per family, the last record where the body's condition holds (a witness); then
        the last of those in the bounded order. Made once for each search
        (:meth:`SymIndices.shared`)."""
        key: list[Any] = list(default)
        for f in self.families:
            cond, values = body(f.slot(self.m, _RECORD))
            key += [cond, *values]

        def make() -> list[Any]:
            found, out = self._latest(body, default)
            return [found, *out]

        terms = self._records().shared(key, make)
        return terms[0], tuple(terms[1:])

    def _latest(
        self, body: Callable[[Slot], tuple[Sym, tuple[Sym, ...]]], default: tuple[Sym, ...]
    ) -> tuple[Sym, tuple[Sym, ...]]:
        records = self._records()
        found: Sym = False
        at: Sym = -1
        epoch: Sym = -1
        out = default
        for f in self.families:
            cond = records._defined(self._at(f, lambda s: body(s)[0]), z3.BoolSort())
            w, hit = z3.Int(_name("latest")), z3.Bool(_name("found"))
            i = z3.Int(_name("i"))
            below = agg._below(i, records.term)
            none_after = z3.ForAll(
                [i], z3.Implies(z3.And(w < i, below), z3.Not(cond(i))), patterns=[cond(i)]
            )
            none = z3.ForAll([i], z3.Implies(below, z3.Not(cond(i))), patterns=[cond(i)])
            records.facts.append(
                z3.If(hit, z3.And(agg._below(w, records.term), cond(w), none_after), none)
            )
            values = body(f.slot(self.m, w))[1]
            later = lg.or_(lg.not_(found), lg.lt(epoch, f.epoch), lg.le(at, w))
            if records.broken == "latest":  # the first family that holds, not the last
                later = lg.not_(found)
            take = lg.and_(hit, later)
            found = lg.or_(found, hit)
            at, epoch = lg.ite(take, w, at), lg.ite(take, f.epoch, epoch)
            out = tuple(lg.ite(take, v, o) for v, o in zip(values, out, strict=True))
        return found, out

    def each(self, update: Callable[[Slot], None]) -> None:
        records = self._records()
        for f in self.families:
            r = z3.Int(_name("r"))
            s = f.slot(self.m, r)
            update(s)
            f.store(s, r, records.facts)


def _families(m: Machine) -> list[Family]:
    """The store's families: one per entry (and the order entry) and epoch."""
    out = []
    for epoch in range(m.f + 1):
        out += [
            Family("completion", e.index, epoch, len(e.reads), e.writes) for e in m.plan.entries
        ]
        out.append(Family("order", -1, epoch, 0, ()))
    return out


class SymStoreMachine(SymMachine):
    """The symbolic machine with its store: ``families`` instead of ``slots``."""

    families: list[Family]

    def written(self, kind: str = "") -> Slots:
        return SymSlots(self, self.families).where(
            lambda s: s.epoch <= self.current and (not kind or s.kind == kind)
        )


def store_machine(facts: list[z3.BoolRef], broken: str = "") -> tuple[SymStoreMachine, Any]:
    """The machine of the ``chain`` agent (two entries) with its store, in the second of
    two epochs: a family per entry (and the order entry) and epoch. The invalidation
    that does not last (``durable_invalidation`` false) is not in it: every slot reads
    the volatile flag of slot 0, which ``ordered`` never sets."""
    m, n = machine(facts, split=True, broken=broken, kept=False, agent="chain", cls=SymStoreMachine)
    assert isinstance(m, SymStoreMachine)
    m.families = _families(m)
    m.op.scalar("marker", z3.Int(_name("marker")))
    m.op.array("volatile-voided", 1, False)
    m.op.array("volatile-rank", m.k, 0)
    m.op.array("history", m.k, lg.NONE)
    for k in range(m.k):
        m.op.values[("volatile-rank", k)] = z3.Int(_name("rank"))
        m.op.values[("history", k)] = z3.Const(_name("history"), lg.Term)
    return m, n


def store_twin(sym: SymStoreMachine, size: int) -> Machine:
    """The bounded machine with ``size`` records whose store and per-key cells are
    those of ``sym`` (each slot a view of its family at its record)."""
    m = bounded_twin(sym, size, "chain")
    for name in ("next", "expected-end", "diverge-at", "volatile-rank", "history"):
        for k in range(sym.k):
            m.op.values[(name, k)] = sym.op.cell(name, k)
    for name in ("expected", "expected-version"):
        for k in range(sym.k):
            for q in range(size):
                m.op.values[(name, k, q)] = sym.op.cell(name, k, q)
    m.op.values[("marker",)] = sym.op["marker"]
    _take_slots(m, sym)
    return m


def _slot_views(b: Machine, s: SymStoreMachine) -> list[tuple[Slot, Slot]]:
    """Each slot of the bounded machine ``b`` with the symbolic machine's slot at the
    same place: its family's at its record."""
    families = {(f.kind, f.entry, f.epoch): f for f in s.families}
    return [
        (slot, families[(slot.kind, slot.entry, slot.epoch)].slot(s, slot.record))
        for slot in b.slots
    ]


def _take_slots(b: Machine, s: SymStoreMachine) -> None:
    """The bounded machine's slots become views of the symbolic machine's families."""
    for slot, view in _slot_views(b, s):
        for name, _ in _SLOT_FIELDS:
            setattr(slot, name, getattr(view, name))
        slot.reads, slot.writes = view.reads, dict(view.writes)


def store_step(m: Machine, values: dict[str, Any]) -> list[Sym]:
    """A write to the store, an invalidation, then the searches (a lookup, the keys'
    ranks, whether an invalidation would void a slot, the order recorded at position
    0): what they give."""
    v = values
    m.write_record(
        v["saved"],
        v["record"],
        "completion",
        0,
        position=v["position"],
        version=v["version"],
        reads=(v["read"],),
        writes={},
        output=v["output"],
        order=v["order"],
        prefix=v["prefix"],
        time=m.tick(),
    )
    m.diverge(v["diverges"], v["key"])
    found = m.find(v["key"], 1, v["record2"], v["version"], v["position2"], ())
    return [
        found.any,
        *found.writes.values(),
        found.output,
        found.prefix,
        found.time,
        *m.view_ranks(),
        m.voids_some(v["key"], v["position2"], None),
        # the input recorded at each key's first position (:func:`scan_agree` has the
        # recorded order at every position)
        *(x for k in range(m.k) for x in m.recorded_order(k)(0)),
    ]


def store_agree(size: int, broken: str = "", timeout_ms: int = 30_000) -> z3.CheckSatResult:
    """``unsat`` when, with ``size`` records, :func:`store_step` gives the same on the
    symbolic store as on the bounded one, and leaves the same slots, from every store."""
    facts: list[z3.BoolRef] = []
    sym, n = store_machine(facts, broken)
    assert isinstance(sym, SymStoreMachine)
    facts.append(n == size)
    m = store_twin(sym, size)
    families = {(f.kind, f.entry, f.epoch): f for f in sym.families}
    ints = ("record", "record2", "position", "position2", "version", "key")
    values: dict[str, Any] = {name: z3.Int(_name(name)) for name in ints}
    values.update(
        saved=z3.Bool(_name("saved")),
        diverges=z3.Bool(_name("diverges")),
        order=z3.Bool(_name("order")),
        read=z3.Const(_name("read"), lg.Term),
        output=z3.Const(_name("output"), lg.Term),
        prefix=z3.Const(_name("prefix"), lg.Term),
    )
    facts += [values["key"] >= 0, values["key"] < sym.k]
    same = [
        lg.eq(a, b) for a, b in zip(store_step(sym, values), store_step(m, values), strict=True)
    ]
    for s in m.slots:
        view = families[(s.kind, s.entry, s.epoch)].slot(sym, s.record)
        same += [lg.eq(getattr(view, name), getattr(s, name)) for name, _ in _SLOT_FIELDS]
        same += [lg.eq(a, b) for a, b in zip(view.reads, s.reads, strict=True)]
    return _agree(sym, m, size, facts, same, timeout_ms)


def _agree(
    sym: SymMachine, m: Machine, size: int, facts: list[z3.BoolRef], same: list[Sym], ms: int
) -> z3.CheckSatResult:
    """Whether some state with ``size`` records makes the two machines differ on
    ``same`` (with each body's definition at each index below ``size``)."""
    facts += [lg.lift_bool(a) for a in sym.assumptions + m.assumptions]
    assert isinstance(sym.records, SymIndices)
    facts += sym.records.ground(size)
    solver = z3.Solver()
    solver.set("mbqi", False, "timeout", ms)
    solver.add(*facts, z3.Not(lg.lift_bool(lg.and_(*same))))
    return solver.check()


def scan_agree(size: int, broken: str = "", timeout_ms: int = 60_000) -> z3.CheckSatResult:
    """``unsat`` when, with ``size`` records, the restore's scan of each key
    (``Machine.expect_recorded``: its expected order, the order's end and its
    divergence, from the store's recorded order) leaves the same cells on the symbolic
    store as on the bounded one, from every store and state. The scan's searches
    have searches in their bodies: its end is the first position without a recorded
    input (a search over the store at each position), and it writes every position of
    a key's row (``positions.each``) with what a search over the store finds there.
    ``broken`` ``nested``: a search in a body has one witness for every index
    (:meth:`SymIndices._bound`)."""
    if broken not in ("", "nested"):
        raise ValueError(f"unknown fault {broken!r}: nested")
    facts: list[z3.BoolRef] = []
    sym, n = store_machine(facts, broken)
    facts.append(n == size)
    m = store_twin(sym, size)
    for k in range(sym.k):
        included = z3.Bool(_name("included"))
        sym.expect_recorded(k, included)
        m.expect_recorded(k, included)
    same = []
    for k in range(sym.k):
        same += [lg.eq(sym.op.cell(x, k), m.op.cell(x, k)) for x in ("expected-end", "diverge-at")]
        for x in ("expected", "expected-version"):
            same += [lg.eq(sym.op.cell(x, k, q), m.op.cell(x, k, q)) for q in range(size)]
    return _agree(sym, m, size, facts, same, timeout_ms)


def scan_step(broken: str = "", timeout_ms: int = 30_000) -> z3.CheckSatResult:
    """``unsat`` when, for every number of records, the restore's scan of each key
    leaves in its expected order, at each position from its next one to the order's
    end, a record of that key (a record of the store's: below their number), from
    every store and state. ``broken``: ``end`` (the goal asked at the end as well,
    where no record is expected), ``unshared`` (the store searched anew for the end
    and for the row, :meth:`SymIndices.shared`); the check should then not be
    ``unsat``."""
    if broken not in ("", "end", "unshared"):
        raise ValueError(f"unknown fault {broken!r}: end or unshared")
    facts: list[z3.BoolRef] = []
    sym, n = store_machine(facts, broken if broken == "unshared" else "")
    before = sym.op.copy()
    key_of = sym.shape.key.function  # type: ignore[attr-defined]
    goals = []
    for k in range(sym.k):
        included = z3.Bool(_name("included"))
        sym.expect_recorded(k, included)
        q = z3.Int(_name("q"))
        start = lg.lift_int(before.cell("next", k))
        end = lg.lift_int(sym.op.cell("expected-end", k))
        expected = sym.op.values[("expected", k)][q]
        upto = q <= end if broken == "end" else q < end
        inside = z3.And(start <= q, upto, agg._below(q, n))
        holds = z3.And(agg._below(expected, n), key_of(expected) == k)
        goals.append(z3.Implies(included, z3.ForAll([q], z3.Implies(inside, holds))))
    facts += [lg.lift_bool(a) for a in sym.assumptions]
    solver = z3.Solver()
    solver.set("mbqi", False, "timeout", timeout_ms)
    solver.add(*facts, z3.Not(z3.And(*goals)))
    return solver.check()


# -- the micro-step over a symbolic number of records -----------------------------------
#
# The whole machine: built as the bounded one with :data:`_MARK` records, then every
# cell made symbolic by its shape (an array over records, a key's row over positions, a
# record's columns: Z3 arrays; any other cell a fresh constant), its store the families
# of :class:`SymSlots`. ``Machine.micro_step`` runs on it unchanged.

#: how many records the machine is first built with: a size no other dimension has, so
#: that the cells over records can be told by their shape
_MARK = 7


def whole_machine(
    facts: list[z3.BoolRef],
    contract: Contract = ORDERED,
    agent: str = "chain",
    keys: int = 2,
    channels: int = 2,
    broken: str = "",
) -> tuple[SymStoreMachine, z3.ArithRef]:
    """The machine of ``contract`` and ``agent`` with ``n`` records, every cell of its
    state (the operator's, the checkpoint's, the world's and the monitors') a fresh
    symbol or array, its store the families of each entry (and the order entry) and
    epoch; two crashes, epochs of four micro-steps. ``broken``: as for
    :class:`SymIndices`."""
    n = z3.Int(_name("n"))
    bound = Bound(inputs=_MARK, channels=channels, keys=keys, crashes=2)
    shape = Shape(_Records("channel"), _Records("key"), _Records("mode"))  # type: ignore[arg-type]
    m = SymStoreMachine(contract, agent, bound, shape, symbolic_env, epoch=4)
    others = {keys, channels, 2 * max(len(m.plan.entries), 1)}
    assert _MARK not in others, f"a dimension of {_MARK} besides the records: {others}"
    m.size = n
    m.records = m.positions = m.monitors.records = SymIndices(n, facts, broken)

    def symbolic(cells: Cells, label: str) -> SymCells:
        out = SymCells(n, facts)
        for name, dims in cells.shape.items():
            if _MARK not in dims:
                out.shape[name] = dims
                continue
            sort = _term(cells.values[(name,) + (0,) * len(dims)]).sort()
            if dims == (_MARK,):
                out.records(name, sort)
            elif dims[1] == _MARK:
                out.records(name, sort, rows=dims[0])
            else:
                out.columns(name, sort, dims[1])
        for index, value in cells.values.items():
            if index[0] not in out.symbolic:
                out.values[index] = z3.Const(_name(f"{label}{index}"), _term(value).sort())
        return out

    m.op, m.world, m.saved = (
        symbolic(m.op, "op"),
        symbolic(m.world, "world"),
        symbolic(m.saved, "saved"),
    )
    m.monitors.op, m.monitors.world = m.op, m.world
    m.families = _families(m)
    m.time = 100
    m.decode.append({"padding": z3.Bool(_name("padding"))})
    r = z3.Int(_name("r"))
    facts.append(n >= 0)
    for field, top in (("key", keys - 1), ("channel", channels - 1), ("mode", 2)):
        f = getattr(shape, field).function
        facts.append(z3.ForAll([r], z3.And(f(r) >= 0, f(r) <= top), patterns=[f(r)]))
    return m, n


def _places(b: Machine, s: SymStoreMachine) -> list[tuple[Cells, tuple[object, ...], Sym]]:
    """Each cell of the bounded machine ``b``'s state (its cells and index) with the
    symbolic machine's value at the same place."""
    out: list[tuple[Cells, tuple[object, ...], Sym]] = []
    for bc, sc in ((b.op, s.op), (b.world, s.world), (b.saved, s.saved)):
        assert isinstance(sc, SymCells)
        for index in bc.values:
            name = index[0]
            if name == "volatile-voided":  # every slot of a family reads slot 0's
                out.append((bc, index, sc.values[(name, 0)]))
            elif name in sc.symbolic:
                out.append((bc, index, sc.cell(name, *index[1:])))
            else:
                out.append((bc, index, sc.values[index]))
    return out


def _cells(b: Machine, s: SymStoreMachine) -> list[tuple[Sym, Sym]]:
    """Each cell of the bounded machine ``b`` with the symbolic machine's at the same
    place: every cell of the state, every field of every slot, every mark."""
    out = [(bc.values[index], value) for bc, index, value in _places(b, s)]
    for slot, view in _slot_views(b, s):
        out += [(getattr(slot, name), getattr(view, name)) for name, _ in _SLOT_FIELDS]
        out += list(zip(slot.reads, view.reads, strict=True))
        out += [(slot.writes[f], view.writes[f]) for f in slot.writes]
    assert len(b.marks) == len(s.marks), "the machines made different numbers of marks"
    for x, y in zip(b.marks, s.marks, strict=True):
        out += [(x.present, y.present), (x.key, y.key), (x.time, y.time)]
    return out


def whole_twin(s: SymStoreMachine, size: int, agent: str) -> Machine:
    """The bounded machine with ``size`` records whose every cell, slot and mark is the
    symbolic machine ``s``'s at the same place, at its tick."""
    b = bounded_twin(s, size, agent)
    b.decode = list(s.decode)
    for bc, index, value in _places(b, s):
        bc.values[index] = value
    _take_slots(b, s)
    return b


def micro_step_agree(
    t: int, size: int, broken: str = "", timeout_ms: int = 60_000, cases: bool = False
) -> z3.CheckSatResult:
    """``unsat`` when, with ``size`` records, ``Machine.micro_step(t)`` of ``ordered``
    and the ``chain`` agent on the symbolic machine (:func:`whole_machine`) makes the
    same assumptions as on the bounded machine of ``spec/encoding.py`` and, where they
    hold, leaves the same state: every cell, every slot, every mark, from every state.
    Micro-steps 4 and 8 begin an epoch (a restore may come); the others do not.
    ``broken``: as for :class:`SymIndices`; the check should then not be ``unsat``.
    ``cases``: asked case by case of :func:`_cases`, one solver each."""
    return _whole_agree(lambda m: m.micro_step(t), size, broken, timeout_ms, cases)


def restore_agree(size: int, broken: str = "", timeout_ms: int = 60_000) -> z3.CheckSatResult:
    """``unsat`` when, with ``size`` records, ``Machine.restore`` (the checkpoint's
    state back, the keys' ranks from the store, each key's scan of its recorded order,
    the keys ordered and the first loop begun) leaves the same state on the symbolic
    machine as on the bounded one, from every state. ``broken``: as for
    :class:`SymIndices`, or ``unrestored`` (the bounded machine restores when a
    condition of its own holds); the check should then not be ``unsat``."""
    if broken not in ("", "first", "nested", "unshared", "unrestored"):
        raise ValueError(f"unknown fault {broken!r}: first, nested, unshared or unrestored")
    happens = z3.Bool(_name("restores"))
    other = z3.Bool(_name("restores")) if broken == "unrestored" else happens
    fault = "" if broken == "unrestored" else broken

    def restore(m: Machine) -> None:
        m.restore(happens if isinstance(m, SymMachine) else other)

    return _whole_agree(restore, size, fault, timeout_ms, False)


def _whole_agree(
    run: Callable[[Machine], None], size: int, broken: str, timeout_ms: int, cases: bool
) -> z3.CheckSatResult:
    """Whether ``run`` on the whole machine and on its bounded twin with ``size``
    records makes the same assumptions and leaves the same state (``unsat``)."""
    if broken not in ("", "first", "nested", "unshared"):
        raise ValueError(f"unknown fault {broken!r}: first, nested or unshared")
    facts: list[z3.BoolRef] = []
    s, n = whole_machine(facts, broken=broken)
    b = whole_twin(s, size, "chain")
    split = _cases(s) if cases else [("every state", z3.BoolVal(True))]
    run(s)
    run(b)
    assert b.time == s.time
    same = [lg.eq(x, y) for x, y in _cells(b, s)]
    records = s.records
    assert isinstance(records, SymIndices)
    ran = lg.lift_bool(lg.and_(*s.assumptions)), lg.lift_bool(lg.and_(*b.assumptions))
    differs = z3.Or(ran[0] != ran[1], z3.And(ran[0], z3.Not(lg.lift_bool(lg.and_(*same)))))
    answer = z3.unsat
    for _, case in split:
        solver = z3.Solver()
        solver.set("mbqi", False, "timeout", timeout_ms)
        solver.add(*facts, *records.ground(size), n == size, case, differs)
        answer = solver.check()
        if answer != z3.unsat:
            break
    return answer


# -- the monitors over a symbolic number of records --------------------------------------

#: the monitors' arrays over records that their restore reads (the operator's state and
#: the checkpoint's) and writes (the world's), with the sort of their cells
_MONITORED_OP = (("accepted", z3.BoolSort()), ("accepted-version", z3.IntSort()))
_MONITORED_WORLD = (("outstanding", z3.BoolSort()), ("outstanding-version", z3.IntSort()))


def monitors_agree(size: int, broken: str = "", timeout_ms: int = 30_000) -> z3.CheckSatResult:
    """``unsat`` when, with ``size`` records, the monitors' restore (each input accepted
    since the checkpoint is outstanding, ``records.each``) leaves the same outstanding
    inputs over a symbolic number of records as over the bounded ones, from every
    state. ``broken`` ``unwritten``: the bounded monitors miss the restore, so the check
    must fail."""
    if broken not in ("", "unwritten"):
        raise ValueError(f"unknown fault {broken!r}: unwritten")
    facts: list[z3.BoolRef] = []
    n = z3.Int(_name("n"))
    plan = Plan.of(AGENTS["stateful"])
    op, world, saved = SymCells(n, facts), SymCells(n, facts), SymCells(n, facts)
    sym = Monitors(plan, 0, 2, "history", op, world)
    sym.records = SymIndices(n, facts)
    for cells, fields in ((op, _MONITORED_OP), (saved, _MONITORED_OP), (world, _MONITORED_WORLD)):
        for name, sort in fields:
            cells.records(name, sort)
    bop, bworld, bsaved = Cells(), Cells(), Cells()
    bounded = Monitors(plan, size, 2, "history", bop, bworld)
    bsaved.array("accepted", size, False)
    copied: list[tuple[Cells, SymCells, str]] = [
        *((bop, op, name) for name, _ in _MONITORED_OP),
        (bsaved, saved, "accepted"),
        *((bworld, world, name) for name, _ in _MONITORED_WORLD),
    ]
    for into, of, name in copied:
        for r in range(size):
            into.values[(name, r)] = of.cell(name, r)
    happens = z3.Bool(_name("happens"))
    sym.restore(happens, saved)
    if broken != "unwritten":
        bounded.restore(happens, bsaved)
    same = [
        lg.eq(world.cell(name, r), bworld.cell(name, r))
        for name, _ in _MONITORED_WORLD
        for r in range(size)
    ]
    solver = z3.Solver()
    solver.set("mbqi", False, "timeout", timeout_ms)
    solver.add(*facts, n == size, z3.Not(lg.lift_bool(lg.and_(*same))))
    return solver.check()


# -- the whole micro-step keeps the induction's facts about records ----------------------
#
# On the whole machine (every cell symbolic), the induction's facts about one record
# (``induction.delivered`` and ``induction.waiting`` for both views) and the advance
# loop's (``induction.loop_facts``), each a universal through ``Machine.records``, are
# assumed, with the facts the induction states per key or channel that they lean on,
# and asked after ``Machine.micro_step`` itself. The step is asked case by case of the
# phase it starts in (and, in an advance loop, of what follows the loop): over the
# whole step at once the instances do not settle within minutes.


def whole_families(m: SymMachine, epoch: int, now: Sym) -> list[tuple[str, z3.BoolRef]]:
    """:func:`families` of both views, the live one while the operator is up."""
    return families(m, epoch, now, (("op", m.op, m.world["up"]), ("saved", m.saved, True)))


def _keyed_premises(m: SymMachine, n: z3.ArithRef, now: Sym) -> list[z3.BoolRef]:
    """The induction's facts per key and channel that :func:`whole_families` leans on
    (stated there with the ghosts or the store; here as they read the state)."""
    op, w = m.op, m.world
    facts: list[Sym] = []
    for view in (op, m.saved):
        for c in range(m.c):
            facts.append(
                lg.and_(
                    lg.le(0, view.cell("offset", c)),
                    lg.le(view.cell("offset", c), w.cell("high", c)),
                )
            )
        for k in range(m.k):
            rank = view.cell("inserted", k)
            facts.append(lg.or_(lg.eq(rank, ABSENT), lg.and_(lg.le(0, rank), lg.lt(rank, now))))
            facts += [
                lg.implies(lg.lt(rank, ABSENT), lg.ne(rank, view.cell("inserted", other)))
                for other in range(k + 1, m.k)
            ]
            facts.append(lg.eq(view.cell("volatile-rank", k), ABSENT))
            end, at = view.cell("expected-end", k), view.cell("diverge-at", k)
            facts.append(lg.and_(lg.le(0, end), lg.le(end, n)))
            pending = lg.or_(
                lg.eq(at, -1), lg.and_(lg.eq(at, end), lg.le(view.cell("next", k), at))
            )
            facts.append(lg.implies(w["up"] if view is op else True, pending))
    for c in range(m.c):
        facts.append(lg.le(w.cell("high", c), n))
    for k in range(m.k):
        recovering = lg.or_(
            lg.lt(op.cell("next", k), op.cell("expected-end", k)),
            lg.le(0, op.cell("diverge-at", k)),
        )
        facts.append(
            lg.implies(lg.and_(w["up"], recovering), lg.lt(op.cell("inserted", k), ABSENT))
        )
    return [lg.lift_bool(f) for f in facts]


def _cases(m: SymMachine) -> list[tuple[str, z3.BoolRef]]:
    """The phases a micro-step may start in, an advance loop by what follows it, and
    the rest (which the premises leave out); together every state."""
    w = m.world
    phase, after = lg.lift_int(w["phase"]), lg.lift_int(w["after"])
    named = [("idle", phase == IDLE), ("done", phase == DONE)]
    named += [
        (f"advance, after {a}", z3.And(phase == ADVANCE, after == a))
        for a in (AFTER_ARRIVAL, AFTER_RESTORE, AFTER_END, AFTER_NOTHING)
    ]
    return [*named, ("other", z3.Not(z3.Or(*(case for _, case in named))))]


def whole_families_step(
    t: int, broken: str = "", only: tuple[str, ...] = (), timeout_ms: int = 30_000
) -> dict[str, z3.CheckSatResult]:
    """Whether ``Machine.micro_step(t)`` on the whole machine (:func:`whole_machine`)
    keeps each fact of :func:`whole_families` (with ``induction._basic``), for every
    number of records: ``unsat`` for a fact kept in every case of :func:`_cases`, else
    the first other answer. ``only``: the facts whose names start so. E-matching alone,
    on the reads of the universals' records (:meth:`SymIndices.every`). ``broken``: as
    for :class:`SymIndices`; a fact that leans on the search should then not be
    ``unsat``."""
    if broken not in ("", "first"):
        raise ValueError(f"unknown fault {broken!r}: first")
    facts: list[z3.BoolRef] = []
    m, n = whole_machine(facts, broken=broken)
    before, epoch = m.epoch_of(t - 1), m.epoch_of(t)
    facts += [lg.lift_bool(f) for f in ind._basic(m, before)]
    facts += [fact for _, fact in whole_families(m, before, m.time)]
    facts += _keyed_premises(m, n, m.time)
    cases = _cases(m)
    m.micro_step(t)
    facts += [lg.lift_bool(a) for a in m.assumptions]
    goals = whole_families(m, epoch, m.time)
    goals += [(f"basic {i}", lg.lift_bool(f)) for i, f in enumerate(ind._basic(m, epoch))]
    asked = [(name, goal) for name, goal in goals if not only or name.startswith(only)]
    out = dict.fromkeys((name for name, _ in asked), z3.unsat)
    for name, goal in asked:
        for _, case in cases:
            # one solver a query, nothing in a scope: Z3 preprocesses (and Skolemizes)
            # only what a solver without push and pop is given; in a scope the same
            # queries ran to the time limit
            solver = z3.Solver()
            solver.set("mbqi", False, "timeout", timeout_ms)
            solver.add(*facts, case, z3.Not(goal))
            out[name] = solver.check()
            if out[name] != z3.unsat:
                break
    return out
