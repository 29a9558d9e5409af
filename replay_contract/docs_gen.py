"""Generated parts of the published contract (the documentation site).

A page of ``docs/`` asks for generated content with a marker on a line of its own::

    <!-- gen: sequence-diagram scenario=reversed-interleaving contract=ordered -->

The mkdocs hook (:mod:`replay_contract.docs_hooks`) replaces each marker with the
Markdown that :func:`expand` returns for it. Every generator reads the sources (the
model, the catalogue, the property definitions, the command line, the manifest of
verdicts) at build time, so no table or diagram in the site is copied by hand.

An unknown marker, or one with a bad argument, raises :class:`GenerationError`, which
fails the build.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
import re
import shlex
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from attrs import fields, frozen

from replay_contract.model import narrate
from replay_contract.model import trace as t
from replay_contract.model.catalogue import all_builtin, builtin
from replay_contract.model.contracts import CONTRACTS, Contract
from replay_contract.model.run import Run, simulate
from replay_contract.model.scenario import Scenario, load
from replay_contract.model.topology import key_text
from replay_contract.spec import properties
from replay_contract.spec.summary import summary

#: A marker: ``<!-- gen: NAME key=value ... -->`` alone on its line.
MARKER = re.compile(r"^<!--\s*gen:\s*(?P<name>[\w-]+)(?P<args>[^\n]*?)\s*-->[ \t]*$", re.M)

#: Where the verify engineer's manifest of verdicts lives, relative to the repository.
MANIFEST = Path("spec") / "manifest.json"


class GenerationError(Exception):
    """A marker that cannot be expanded; the message names the marker."""


# -- markers ----------------------------------------------------------------------------


def expand_markers(markdown: str, root: Path, where: str = "page") -> str:
    """Replace every marker of a page with its generated Markdown."""

    def one(match: re.Match[str]) -> str:
        name = match.group("name")
        try:
            args = dict(_pair(a) for a in shlex.split(match.group("args")))
            return expand(name, args, root).rstrip("\n")
        except GenerationError as exc:
            raise GenerationError(f"{where}: <!-- gen: {name} -->: {exc}") from None

    return MARKER.sub(one, markdown)


def _pair(arg: str) -> tuple[str, str]:
    key, sep, value = arg.partition("=")
    if not sep:
        raise GenerationError(f"argument {arg!r} is not key=value")
    return key, value


def expand(name: str, args: dict[str, str], root: Path) -> str:
    """The Markdown for one marker."""
    generator = GENERATORS.get(name)
    if generator is None:
        raise GenerationError(f"unknown generator (known: {', '.join(sorted(GENERATORS))})")
    allowed = set(inspect.signature(generator).parameters) - {"root"}
    unknown = sorted(set(args) - allowed)
    if unknown:
        raise GenerationError(
            f"unknown argument {unknown[0]!r} (allowed: {', '.join(sorted(allowed)) or 'none'})"
        )
    return generator(root=root, **args)


# -- docstrings -------------------------------------------------------------------------

_ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|exc):`~?\.?([^`]+)`")


def docstring_markdown(doc: str | None) -> str:
    """A docstring in the project's reST subset as Markdown: ``code``, roles, ``::``
    literal blocks and definition lists (a term line followed by an indented body)."""
    text = inspect.cleandoc(doc or "")
    text = _ROLE.sub(lambda m: f"``{m.group(1).split('.')[-1]}``", text)
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::"):
            lead = line.rstrip()[:-2].rstrip()
            if lead:
                out.append(lead + ":")
            block: list[str] = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
                block.append(lines[i])
                i += 1
            body = textwrap.dedent("\n".join(block)).strip("\n")
            out += ["", "```json" if body.lstrip().startswith("{") else "```text", body, "```", ""]
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line and not line.startswith(" ") and nxt.startswith("    ") and out[-1:] in ([], [""]):
            out.append(line)
            i += 1
            body_lines = []
            while i < len(lines) and lines[i].startswith("    "):
                body_lines.append(lines[i].strip())
                i += 1
            out.append(":   " + " ".join(body_lines))
            out.append("")
            continue
        out.append(line)
        i += 1
    return _inline("\n".join(out)).strip() + "\n"


def _inline(text: str) -> str:
    # ``x`` is reST inline code; Markdown wants `x`. Fenced blocks are left alone.
    parts = re.split(r"(```.*?```)", text, flags=re.S)
    return "".join(p if p.startswith("```") else re.sub(r"``(.+?)``", r"`\1`", p) for p in parts)


# -- tables -----------------------------------------------------------------------------


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    def cell(value: str) -> str:
        return value.replace("|", "\\|").replace("\n", " ") or " "

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _code(value: object) -> str:
    return f"`{json.dumps(value) if not isinstance(value, str) else value}`"


# -- contracts --------------------------------------------------------------------------


def gen_contract_rules(root: Path) -> str:
    """The rules a contract is made of, from the contracts module's docstring."""
    from replay_contract.model import contracts

    doc = docstring_markdown(contracts.__doc__)
    # Keep the definition list of rules; the first paragraph is the page's own prose.
    start = doc.find("`match`")
    end = doc.find("The five named variants")
    return doc[start:end].strip() + "\n" if start >= 0 else doc


def gen_contract_variants(root: Path) -> str:
    """Every named contract variant with the value of each of its rules: one row per
    rule, one column per variant (the narrow way round: there are more rules)."""
    rules = [f.name for f in fields(Contract) if f.name not in ("name", "description")]
    rows = [[f"`{r}`", *(_code(getattr(c, r)) for c in CONTRACTS.values())] for r in rules]
    table = md_table(["rule", *(f"`{c}`" for c in CONTRACTS)], rows)
    notes = "\n".join(f"- `{c.name}`: {c.description}" for c in CONTRACTS.values())
    return table + "\n" + notes + "\n"


# -- the catalogue ----------------------------------------------------------------------


def gen_catalogue_list(root: Path) -> str:
    """The built-in scenarios with their descriptions."""
    return md_table(
        ["scenario", "what it shows"], [[f"`{s.name}`", s.description] for s in all_builtin()]
    )


def _cell(summary: dict[str, Any]) -> str:
    text = (
        f"{summary['repeated_tool_calls']}/{summary['tool_calls']} repeated, "
        f"{summary['reused']} reused"
    )
    broke = summary["violations"]
    return text + ("<br>**breaks** " + ", ".join(broke) if broke else "")


def gen_catalogue_matrix(root: Path) -> str:
    """Every built-in scenario simulated under every contract, at build time."""
    rows = []
    for scenario in all_builtin():
        rows.append(
            [
                f"`{scenario.name}`",
                *(_cell(summary(simulate(scenario, c))) for c in CONTRACTS.values()),
            ]
        )
    return md_table(["scenario", *(f"`{c}`" for c in CONTRACTS)], rows)


def _contract(name: str) -> Contract:
    if name not in CONTRACTS:
        raise GenerationError(f"unknown contract {name!r} (known: {', '.join(CONTRACTS)})")
    return CONTRACTS[name]


def _scenario(name: str, root: Path) -> Scenario:
    path = root / name
    if name.endswith(".json") and path.exists():
        return load(path)
    try:
        return builtin(name)
    except ValueError as exc:
        raise GenerationError(str(exc)) from None


def run_table(run: Run, witnesses: dict[str, Sequence[int]] | None = None) -> str:
    """A run as a Markdown table: who was accepted where, what was reused, what ran
    again, and which property each row shows broken."""
    header = ["step", "key", "pos", "input", "decision", "tools", "broke"]
    return md_table(header, (r.cells() for r in narrate.rows(run.trace, witnesses)))


def _witnesses(run: Run) -> dict[str, Sequence[int]]:
    return {v.property: v.witness for v in properties.check_all(run.trace) if not v.holds}


def gen_run_table(root: Path, scenario: str, contract: str) -> str:
    """One scenario under one contract: the run table and the figures of the run."""
    run = simulate(_scenario(scenario, root), _contract(contract))
    figures = summary(run)
    broke = ", ".join(f"`{v}`" for v in figures["violations"]) or "none"
    return (
        run_table(run, _witnesses(run))
        + f"\n{figures['tool_calls']} tool calls, {figures['repeated_tool_calls']} of "
        f"them repeated; {figures['reused']} completions reused. Properties broken: "
        f"{broke}.\n"
    )


# -- sequence diagrams ------------------------------------------------------------------


def _label(text: str) -> str:
    # Mermaid ends a message at ';' and reads '#' as an entity; keep labels plain.
    return text.replace(";", ",").replace("#", "no. ").replace(":", " -")


def sequence_diagram(run: Run) -> str:
    """A Mermaid sequence diagram of a run of the model (see :func:`sequence_diagram_of`)."""
    return sequence_diagram_of(run.scenario, run.world.events)


def sequence_diagram_of(scenario: Scenario, events: Sequence[t.Event]) -> str:
    """A Mermaid sequence diagram of a scenario's trace (the model's or an
    implementation's), one arrow or note per trace event; what happens after a restore
    is shaded."""
    channels = [c.name for c in scenario.topology.channels]
    ids = {name: f"U{i}" for i, name in enumerate(channels)}
    keys = ", ".join(key_text(k) for k in scenario.topology.keys)
    lines = ["sequenceDiagram"]
    lines += [f"    participant {ids[c]} as {_label(c)}" for c in channels]
    lines += [
        f"    participant Op as operator (key {_label(keys)})",
        "    participant S as action state store",
        "    participant T as tools",
    ]
    span = f"{ids[channels[0]]},T"
    recovering = False  # after a restore, the recovery is shaded
    for e in events:
        if isinstance(e, t.Deliver):
            lines.append(f"    {ids[e.channel]}->>Op: {_label(e.identity)}")
        elif isinstance(e, t.Accept):
            lines.append(f"    Note over Op: accept {_label(e.identity)} at position {e.position}")
        elif isinstance(e, t.Wait):
            awaiting = f" for {e.awaiting}" if e.awaiting else ""
            lines.append(f"    Note over Op: {_label(e.identity)} waits{_label(awaiting)}")
        elif isinstance(e, t.Tool):
            lines.append(f"    Op->>T: {_label(e.tool)} for {_label(e.identity)}")
        elif isinstance(e, t.Save):
            extra = " with its position" if e.order else ""
            lines.append(f"    Op->>S: save {_label(e.identity)} at {e.position}{extra}")
        elif isinstance(e, t.Order):
            lines.append(f"    Op->>S: record {_label(e.identity)} at {e.position}")
        elif isinstance(e, t.Reuse):
            lines.append(f"    S-->>Op: reuse {_label(e.identity)} saved at {e.position}")
        elif isinstance(e, t.Invalidate):
            where = "" if e.durable else ", in memory only"
            lines.append(
                f"    Op->>S: invalidate key {_label(key_text(e.key))} from "
                f"{e.position} ({len(e.completions)} saved{where})"
            )
        elif isinstance(e, t.GiveUp):
            lines.append(f"    Note over Op: give up {_label(e.identity)} at {e.position}")
        elif isinstance(e, t.Checkpoint):
            lines.append(f"    Note over {span}: checkpoint {e.checkpoint}")
        elif isinstance(e, t.Crash):
            lines.append(f"    Note over {span}: crash")
        elif isinstance(e, t.Restore):
            if recovering:
                lines.append("    end")
            lines.append(f"    Note over {span}: restore checkpoint {e.checkpoint}")
            lines.append("    rect rgba(255, 196, 0, 0.12)")
            recovering = True
    if recovering:
        lines.append("    end")
    return "\n".join(lines) + "\n"


def gen_sequence_diagram(root: Path, scenario: str, contract: str) -> str:
    """A Mermaid diagram of one scenario under one contract, from the model's trace."""
    run = simulate(_scenario(scenario, root), _contract(contract))
    return "```mermaid\n" + sequence_diagram(run) + "```\n"


# -- properties and verdicts ------------------------------------------------------------


@frozen
class Verdict:
    """One (contract, property) verdict as the manifest or ``verify --json`` gives it."""

    contract: str
    property: str
    verdict: str
    bound: str = ""
    seconds: float | None = None
    counterexample: str = ""
    explanation: str = ""


def load_manifest(root: Path) -> list[Verdict] | None:
    """The verdicts of ``spec/manifest.json``, or ``None`` while there is none.

    Accepted shapes: a list of verdict objects, or an object holding one under
    ``verdicts``, ``results`` or ``entries``; each object has at least ``contract``,
    ``property`` and ``verdict`` (or ``expected``).
    """
    path = root / MANIFEST
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    if isinstance(data, dict):
        data = next(
            (data[k] for k in ("verdicts", "results", "entries", "expected") if k in data), None
        )
    if not isinstance(data, list):
        raise GenerationError(f"{MANIFEST}: expected a list of verdicts")
    out = []
    for item in data:
        bound = item.get("bound", "")
        if isinstance(bound, dict):
            bound = ",".join(f"{k}={v}" for k, v in bound.items())
        out.append(
            Verdict(
                item["contract"],
                item["property"],
                item.get("verdict", item.get("expected", "")),
                str(bound),
                item.get("seconds", item.get("budget")),
                item.get("counterexample", "") or item.get("scenario", "") or "",
                item.get("explanation", "") or "",
            )
        )
    return out


def _catalogue_breaks(prop: str) -> dict[str, tuple[Scenario, Run] | None]:
    """Per contract: the first built-in scenario that breaks ``prop``, if any."""
    found: dict[str, tuple[Scenario, Run] | None] = {}
    # The worked example first: it is the counterexample the contract page explains.
    scenarios = sorted(all_builtin(), key=lambda s: s.name != "reversed-interleaving")
    for c in CONTRACTS.values():
        found[c.name] = None
        for scenario in scenarios:
            run = simulate(scenario, c)
            if not properties.check(prop, run.trace).holds:
                found[c.name] = (scenario, run)
                break
    return found


def gen_property(root: Path, name: str) -> str:
    """One property: its definition (the predicate's docstring), the contracts that
    satisfy it, and a counterexample table for each contract that does not."""
    check = properties.CHECKS.get(name)
    if check is None:
        raise GenerationError(
            f"unknown property {name!r} (known: {', '.join(properties.PROPERTIES)})"
        )
    out = [
        docstring_markdown(check.__doc__),
        f"Defined by `{check.__module__}.{check.__name__}`.\n",
    ]
    manifest = load_manifest(root)
    if manifest is not None:
        out.append(_property_from_manifest(root, name, manifest))
    else:
        out.append(_property_from_catalogue(name))
    return "\n".join(out)


def _property_from_manifest(root: Path, name: str, manifest: list[Verdict]) -> str:
    rows, examples = [], []
    for v in manifest:
        if v.property != name:
            continue
        rows.append(
            [
                f"`{v.contract}`",
                f"**{v.verdict}**",
                proof_scope(v),
                f"`{v.bound}`" if v.bound else "",
                f"{v.seconds:g} s" if isinstance(v.seconds, int | float) else "",
            ]
        )
        if v.verdict == "counterexample" and v.contract in CONTRACTS:
            examples.append(_counterexample(root, name, v))
    text = (
        "Verdicts of `replay-contract verify`, recorded in the manifest. *Holds for* says "
        "whether a proof covers only the runs of the bound or every bound (an opt-in "
        "parametric step, which the manifest's check uses, see "
        "[Engines](internals/engines.md)); the *time budget* is the most "
        "the manifest's check allows the verdict to take, not a measured time.\n\n"
    )
    text += md_table(["contract", "verdict", "holds for", "bound", "time budget"], rows)
    return text + "".join("\n" + e for e in examples)


def proof_scope(v: Verdict) -> str:
    """What a manifest verdict covers: a counterexample is one run; a proof holds at its
    bound, or for every bound when the opt-in parametric steps prove the property for
    that contract (for ``ordered``'s ``complete-reuse``: every bound of at most
    ``give_up_after`` inputs)."""
    if v.verdict != "proved":
        return "one run" if v.verdict == "counterexample" else ""
    if v.contract not in CONTRACTS or not v.bound:
        return "the bound"
    from replay_contract.spec import bound as bounds
    from replay_contract.spec.everybound.parametric_engine import plan

    contract = CONTRACTS[v.contract]
    at = bounds.parse(v.bound)
    if not any(
        v.property == p for pairs in plan(contract, at, [v.property]).values() for _, p in pairs
    ):
        return "the bound"
    if v.property == "complete-reuse" and contract.wait:
        return f"every bound up to {contract.give_up_after} inputs"
    return "every bound"


def _counterexample(root: Path, name: str, v: Verdict) -> str:
    """The counterexample of a verdict as a run table: its scenario file replayed
    through the model, or, when the file is not in the repository, the first built-in
    scenario that shows the same violation."""
    contract = CONTRACTS[v.contract]
    head = f"**Counterexample for `{v.contract}`**"
    if v.counterexample and (root / v.counterexample).is_file():
        run = simulate(load(root / v.counterexample), contract)
        verdict = properties.check(name, run.trace)
        return (
            f"{head} (`{v.counterexample}`, replayed through the model). "
            f"{verdict.explanation}.\n\n" + run_table(run, {name: verdict.witness})
        )
    found = _catalogue_breaks(name).get(v.contract)
    if found is None:
        return f"{head}: {v.explanation or 'see replay-contract verify'}.\n"
    scenario, run = found
    verdict = properties.check(name, run.trace)
    return (
        f"{head}: the built-in scenario `{scenario.name}` shows the same violation. "
        f"{verdict.explanation}.\n\n" + run_table(run, {name: verdict.witness})
    )


def _property_from_catalogue(name: str) -> str:
    breaks = _catalogue_breaks(name)
    rows = [
        [
            f"`{c}`",
            "holds on every built-in scenario"
            if found is None
            else f"**broken** by `{found[0].name}`",
        ]
        for c, found in breaks.items()
    ]
    text = (
        '!!! note "Until the proofs land"\n    The bounded proofs of `verify` are not '
        "published yet. This table is the model's verdict on the built-in scenarios, "
        "computed at build time: it finds counterexamples, but it proves nothing.\n\n"
    )
    text += md_table(["contract", "on the built-in catalogue"], rows)
    for c, found in breaks.items():
        if found is None:
            continue
        scenario, run = found
        verdict = properties.check(name, run.trace)
        text += (
            f"\n**Counterexample for `{c}`**: scenario `{scenario.name}`. "
            f"{verdict.explanation}.\n\n" + run_table(run, {name: verdict.witness})
        )
    return text


def gen_verdict_matrix(root: Path) -> str:
    """Property by contract: the verdicts of the manifest, or the catalogue's."""
    manifest = load_manifest(root)
    rows = []
    for prop in properties.PROPERTIES:
        cells = []
        for c in CONTRACTS:
            if manifest is not None:
                v = next((v for v in manifest if v.contract == c and v.property == prop), None)
                scope = proof_scope(v) if v is not None else ""
                if v is None:
                    cells.append("")
                elif v.verdict == "proved":
                    where = "at the bound" if scope == "the bound" else f"for {scope}"
                    cells.append(f"proved {where}")
                else:
                    cells.append(v.verdict)
            else:
                broken = any(
                    not properties.check(prop, simulate(s, CONTRACTS[c]).trace).holds
                    for s in all_builtin()
                )
                cells.append("broken" if broken else "holds")
        rows.append([f"[`{prop}`](#{prop})", *cells])
    table = md_table(["property", *(f"`{c}`" for c in CONTRACTS)], rows)
    if manifest is None:
        return (
            "On the built-in scenarios, simulated when this site was built (the bounded "
            "proofs of `verify` are not published yet): *broken* means some built-in "
            "scenario breaks the property, *holds* only that none does.\n\n" + table
        )
    return (
        "Verdicts of `replay-contract verify`, recorded in the manifest with their bound. "
        "A proof *at the bound* covers every run within the bound; a proof *for every "
        "bound* is an opt-in parametric step ([Engines](internals/engines.md)) and covers "
        "runs of any size.\n\n" + table
    )


# -- the command line -------------------------------------------------------------------


@contextlib.contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    """``$name`` is ``value`` within the block, and what it was after."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


def _help(parser: Any) -> str:
    with _environment("COLUMNS", "80"):
        return str(parser.format_help())


def gen_cli_reference(root: Path) -> str:
    """Every subcommand's ``--help``, from :func:`replay_contract.cli.build_parser`."""
    import argparse

    from replay_contract.cli import build_parser

    parser = build_parser()
    out = ["```text\n" + _help(parser).rstrip() + "\n```\n"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append(f"## `{name}`\n\n```text\n{_help(sub).rstrip()}\n```\n")
                nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
                for group in nested:
                    for subname, subsub in group.choices.items():
                        out.append(
                            f"### `{name} {subname}`\n\n```text\n{_help(subsub).rstrip()}\n```\n"
                        )
    return "\n".join(out)


def gen_exit_codes(root: Path) -> str:
    """The exit status of every command, from :data:`replay_contract.exits.TABLE`."""
    from replay_contract.exits import TABLE

    return md_table(("status", "meaning"), [(str(code), meaning) for code, meaning in TABLE])


def available_commands() -> list[str]:
    """The subcommands the command line has now."""
    import argparse

    from replay_contract.cli import build_parser

    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


def run_command(argv: Sequence[str]) -> tuple[int, str]:
    """Run ``replay-contract ARGV`` in this process; its status and what it printed:
    its standard output, or its standard error when it printed nothing else (progress
    lines on standard error are left out)."""
    from replay_contract.cli import main

    out, err = io.StringIO(), io.StringIO()
    # the times a verdict shows are of checks made now, not read from the proof cache
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        _environment("REPLAY_CONTRACT_PROOF_CACHE", "off"),
    ):
        try:
            status = main(list(argv))
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
    return status, out.getvalue() or err.getvalue()


def gen_command(root: Path, run: str, status: str = "0", cwd: str = ".") -> str:
    """A console block: ``$ replay-contract ...`` and what it prints, run at build time
    in ``cwd`` (relative to the repository) and expected to exit with ``status``.

    While the subcommand is not part of the command line yet, a note says so instead.
    """
    argv = shlex.split(run)
    if not argv or argv[0] != "replay-contract":
        raise GenerationError("run= must start with replay-contract")
    if len(argv) > 1 and not argv[1].startswith("-") and argv[1] not in available_commands():
        return (
            f'```console\n$ {run}\n```\n\n!!! note "Not available yet"\n    The '
            f"`{argv[1]}` command is not part of this build of `replay-contract` yet; "
            "its output will appear here when it is.\n"
        )
    old = Path.cwd()
    os.chdir(root / cwd)
    try:
        code, output = run_command(argv[1:])
    finally:
        os.chdir(old)
    if str(code) != status:
        raise GenerationError(f"{run!r} exited with {code}, expected {status}:\n{output}")
    return f"```console\n$ {run}\n{output.rstrip()}\n```\n"


# -- the scenario format and the trace --------------------------------------------------


def gen_scenario_format(root: Path) -> str:
    """The scenario format, from the scenario module's docstring."""
    from replay_contract.model import scenario

    return docstring_markdown(scenario.__doc__)


def gen_trace_events(root: Path) -> str:
    """Every trace event with its fields and meaning."""
    rows = []
    for kind, cls in t.EVENT_TYPES.items():
        doc = inspect.getdoc(cls) or ""
        if doc.startswith(cls.__name__ + "("):  # attrs' generated signature, no docstring
            doc = ""
        names = ", ".join(f"`{f.name}`" for f in fields(cls))
        effect = "yes" if cls in t.EFFECTS else ""
        rows.append([f"`{kind}`", names, effect, _inline(" ".join(doc.split()))])
    return md_table(["event", "fields", "effect", "meaning"], rows)


def gen_scenario_json(root: Path, scenario: str) -> str:
    """A built-in scenario's JSON, as the catalogue ships it."""
    text = json.dumps(_scenario(scenario, root).to_json(), indent=2, ensure_ascii=False)
    return f"```json\n{text}\n```\n"


def gen_file(root: Path, path: str) -> str:
    """A file of the repository, verbatim, as a code block."""
    source = root / path
    if not source.is_file():
        raise GenerationError(f"no file {path!r}")
    lang = {".json": "json", ".py": "python", ".toml": "toml", ".yml": "yaml"}.get(
        source.suffix, "text"
    )
    return f"```{lang}\n{source.read_text().rstrip()}\n```\n"


# -- the model's code, pulled by dotted name --------------------------------------------


def _resolve(name: str) -> Any:
    """The object a dotted name denotes: the longest importable module prefix, then
    attributes (a class's method, a module's function)."""
    import importlib

    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            try:
                obj = inspect.getattr_static(obj, attr)
            except AttributeError:
                raise GenerationError(
                    f"{name!r}: {'.'.join(parts[:cut])} has no {attr!r} (renamed or moved?)"
                ) from None
            obj = getattr(obj, "fget", None) or getattr(obj, "__func__", None) or obj
        return obj
    raise GenerationError(f"{name!r}: no module of that name")


def gen_source(root: Path, name: str, unfold: str = "no") -> str:
    """The source of a function, method or class of the package, by dotted name (for
    example ``replay_contract.model.operator.end``), in a folded block titled with the
    file and lines it sits at (``unfold=yes`` unfolds it). A name that no longer exists
    fails the build, so a page cannot keep a stale copy of the code."""
    if unfold not in ("yes", "no"):
        raise GenerationError(f"unfold={unfold!r}: expected yes or no")
    obj = _resolve(name)
    try:
        source, first = inspect.getsourcelines(obj)
        path = Path(inspect.getsourcefile(obj) or "").resolve()
    except (TypeError, OSError):
        raise GenerationError(f"{name!r} is not a function, method or class") from None
    top = root.resolve()
    where = path.relative_to(top).as_posix() if path.is_relative_to(top) else path.name
    short = name.removeprefix("replay_contract.")
    title = f"`{short}` ({where}, lines {first}-{first + len(source) - 1})"
    body = textwrap.indent(textwrap.dedent("".join(source)).rstrip(), "    ")
    fold = "???+" if unfold == "yes" else "???"
    return f'{fold} quote "{title}"\n\n    ```python\n{body}\n    ```\n'


# -- the Python API ---------------------------------------------------------------------


def _signature(name: str, obj: Any, returns: bool = True) -> str:
    """``name(a: T, b: U = 1) -> R`` with the annotations as written in the source."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return f"{name}(...)"

    def text(annotation: Any) -> str:
        return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)

    params: list[str] = []
    starred = False
    for p in sig.parameters.values():
        if p.name == "self":
            continue
        if p.kind is p.KEYWORD_ONLY and not starred:
            params.append("*")
        starred = starred or p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)
        item = "*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else ""
        item += p.name
        if p.annotation is not p.empty:
            item += f": {text(p.annotation)}"
        if p.default is not p.empty:
            item += f" = {p.default!r}"
        params.append(item)
    tail = ""
    if returns and sig.return_annotation is not sig.empty:
        tail = f" -> {text(sig.return_annotation)}"
    return f"{name}({', '.join(params)}){tail}"


def _defined_in(module: Any, obj: Any) -> bool:
    return getattr(obj, "__module__", None) == module.__name__ and (
        inspect.isclass(obj) or inspect.isfunction(obj)
    )


def _line(obj: Any) -> int:
    try:
        return inspect.getsourcelines(obj)[1]
    except (TypeError, OSError):
        return 0


def _class_members(cls: type) -> list[str]:
    out = []
    if hasattr(cls, "__attrs_attrs__"):
        names = ", ".join(f"`{f.name}`" for f in fields(cls) if not f.name.startswith("_"))
        if names:
            out.append(f"Fields: {names}.\n")
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            head, doc = f"`{name}` (property)", member.__doc__
        elif isinstance(member, staticmethod | classmethod):
            head, doc = f"`{_signature(name, member.__func__)}`", member.__func__.__doc__
        elif inspect.isfunction(member):
            head, doc = f"`{_signature(name, member)}`", member.__doc__
        else:
            continue
        body = docstring_markdown(doc).strip()
        out.append(f"{head}\n:   " + textwrap.indent(body or "(no description)", "    ").lstrip())
    return out


def gen_api(root: Path, module: str, members: str = "") -> str:
    """A module of the package as a reference section: its docstring under a heading of
    its own, then each public class and function defined in it (or only ``members``,
    comma-separated), in source order, with its signature and docstring. Headings carry
    the dotted name as their anchor (``#replay_contract.model.run.simulate``)."""
    import importlib

    try:
        mod = importlib.import_module(module)
    except ImportError:
        raise GenerationError(f"no module {module!r}") from None
    if members:
        chosen = [m.strip() for m in members.split(",") if m.strip()]
        missing = [m for m in chosen if not hasattr(mod, m)]
        if missing:
            raise GenerationError(f"{module} has no {missing[0]!r} (renamed or moved?)")
        objs = [(m, getattr(mod, m)) for m in chosen]
    else:
        objs = sorted(
            ((n, o) for n, o in vars(mod).items() if not n.startswith("_") and _defined_in(mod, o)),
            key=lambda pair: _line(pair[1]),
        )
    out = [f"### `{module}` {{#{module}}}\n", docstring_markdown(mod.__doc__)]
    for name, obj in objs:
        anchor = f"{module}.{name}"
        if inspect.isclass(obj):
            out.append(f"#### class `{name}` {{#{anchor}}}\n")
            out.append(f"```python\nclass {_signature(name, obj, returns=False)}\n```\n")
            out.append(docstring_markdown(inspect.getdoc(obj) if obj.__doc__ else ""))
            out.extend(_class_members(obj))
        else:
            out.append(f"#### `{name}` {{#{anchor}}}\n")
            out.append(f"```python\n{_signature(name, obj)}\n```\n")
            out.append(docstring_markdown(obj.__doc__))
    return "\n".join(part.rstrip() + "\n" for part in out if part.strip())


# -- the real Flink Agents runtime ------------------------------------------------------


def gen_flink_agents_report(root: Path, part: str) -> str:
    """A part of the page on the real Flink Agents runtime, from its recorded run
    (``conformance/flink-agents/findings.json``, written by ``replay-contract findings``):
    ``title``, ``runs`` or ``findings``."""
    from replay_contract.conformance import findings

    path = root / "conformance" / "flink-agents" / "findings.json"
    if not path.is_file():
        raise GenerationError(f"{path}: no recorded run; run `replay-contract findings`")
    doc = findings.load(path)
    if part == "title":
        return f"# {doc['implementation']} against the replay contract\n"
    if part == "runs":
        return _findings_runs(doc)
    if part == "findings":
        return "\n".join(_finding(f) for f in doc["findings"])
    raise GenerationError(f"part={part!r}: expected title, runs or findings")


def _findings_runs(doc: dict[str, Any]) -> str:
    from replay_contract.conformance.findings import KINDS, servers

    served = doc.get("servers") or servers()
    lines = [
        f"Recorded on {doc['recorded']} with `replay-contract findings` (seed {doc['seed']}, "
        f"{doc['cores']} cores, {doc['seconds'] / 60:.0f} minutes in all). Servers: "
        + "; ".join(served.values())
        + ".",
        "",
    ]
    rows: list[tuple[str, ...]] = []
    kinds: list[str] = []
    for r in doc["runs"]:
        what = "catalogue" + (", sweeps" if r["sweep"] else "")
        what += f", {r['examples']} generated" if r["examples"] else ""
        rows.append(
            (
                f"`{r['target']}` `{r['contract']}`",
                what,
                f"{r['passed']} / {r['failed']} / {r['skipped']}",
                f"{r['seconds']:.0f} s ({r['seconds_per_scenario']} s each)",
            )
        )
        found = ", ".join(f"{KINDS[k].title.lower()} ({n})" for k, n in r["kinds"].items())
        kinds.append(f"- `{r['target']}` under `{r['contract']}`: {found or 'none'}")
    header = ("target and contract", "scenarios", "passed / failed / skipped", "wall time")
    table = md_table(header, rows)
    return "\n".join(lines) + "\n" + table + "\nThe failures by kind:\n\n" + "\n".join(kinds) + "\n"


def _finding(f: dict[str, Any]) -> str:
    replay = (
        f"replay-contract conform --target {f['target']} --contract {f['contract']} "
        f"--scenario conformance/flink-agents/{f['scenario_file']} --examples 0 --no-sweep"
    )
    calls = f["tool_calls"]
    repeated = f["repeated_tool_calls"]
    broken = f" It breaks `{f['property']}`." if f["property"] else ""
    seen = ""
    if not f.get("reproduced", True):
        seen = (
            "**Intermittent:** its scenario did not fail this way when it ran again; "
            "what the run that found it saw is shown. "
        )
    if f.get("errors"):
        seen += "The runtime's errors: " + "; ".join(f"`{e}`" for e in f["errors"]) + "."
    return "\n".join(
        [
            f"### {f['title']}",
            "",
            f"**What a user sees:** {f['impact']}{broken}",
            "",
            f"Kind `{f['kind']}`, seen in: {', '.join(f['seen_in'])}. Tool calls in the "
            f"smallest scenario: {calls['actual']} (the model: {calls['expected']}), "
            f"{repeated['actual']} of them repeated (the model: {repeated['expected']}).",
            "",
            f"First difference: {f['difference']}",
            "",
            seen,
            "",
            '<!-- docs-test: skip="tests/conformance/test_flink_agents.py replays it" -->',
            "```console",
            f"$ {replay}",
            "```",
            "",
            '??? example "The scenario\'s tables"',
            "",
            textwrap.indent("```text\n" + f["report"].rstrip() + "\n```", "    "),
            "",
            "```mermaid",
            f["diagram"].rstrip(),
            "```",
            "",
        ]
    )


GENERATORS: dict[str, Callable[..., str]] = {
    "contract-rules": gen_contract_rules,
    "contract-variants": gen_contract_variants,
    "catalogue-list": gen_catalogue_list,
    "catalogue-matrix": gen_catalogue_matrix,
    "run-table": gen_run_table,
    "sequence-diagram": gen_sequence_diagram,
    "property": gen_property,
    "verdict-matrix": gen_verdict_matrix,
    "cli-reference": gen_cli_reference,
    "exit-codes": gen_exit_codes,
    "command": gen_command,
    "scenario-format": gen_scenario_format,
    "trace-events": gen_trace_events,
    "scenario-json": gen_scenario_json,
    "file": gen_file,
    "source": gen_source,
    "api": gen_api,
    "flink-agents-report": gen_flink_agents_report,
}
