"""The site builds with ``mkdocs build --strict`` and its generated parts come from the
sources."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from replay_contract.docs_gen import (
    GenerationError,
    available_commands,
    docstring_markdown,
    expand_markers,
    sequence_diagram,
)
from replay_contract.model.catalogue import builtin
from replay_contract.model.contracts import CONTRACTS
from replay_contract.model.run import simulate
from replay_contract.spec.properties import CHECKS, PROPERTIES
from replay_contract.spec.summary import summary

from .conftest import DOCS, ROOT


def _text(site: Path, page: str) -> str:
    return (site / page / "index.html").read_text()


def test_strict_build_passes(built_site: Path) -> None:
    assert (built_site / "index.html").exists()
    assert (built_site / "assets/javascripts/mermaid.min.js").stat().st_size > 1_000_000


def test_every_page_is_built(built_site: Path) -> None:
    for md in DOCS.rglob("*.md"):
        rel = md.relative_to(DOCS).with_suffix("")
        page = built_site / ("" if rel.name == "index" else rel) / "index.html"
        assert page.exists(), f"{md.relative_to(ROOT)} was not built"
    assert (built_site / "protocol/index.html").exists()


def test_no_marker_is_left(built_site: Path) -> None:
    for page in built_site.rglob("*.html"):
        assert "gen:" not in re.sub(r"<pre.*?</pre>", "", page.read_text(), flags=re.S), page


def test_contract_page_has_both_diagrams_from_the_model(built_site: Path) -> None:
    text = _text(built_site, "contract")
    assert text.count('<pre class="mermaid">') == 2
    for name in ("seqnum", "ordered"):
        run = simulate(builtin("reversed-interleaving"), CONTRACTS[name])
        first_arrow = sequence_diagram(run).splitlines()[6].strip()
        assert first_arrow.replace(">", "&gt;") in text


def test_ordered_diagram_shows_the_wait_and_the_reuse() -> None:
    diagram = sequence_diagram(simulate(builtin("reversed-interleaving"), CONTRACTS["ordered"]))
    assert "Note over Op: B waits for A" in diagram
    assert diagram.count("S-->>Op: reuse") == 4
    seqnum = sequence_diagram(simulate(builtin("reversed-interleaving"), CONTRACTS["seqnum"]))
    assert "invalidate key K from 0" in seqnum
    assert "reuse" not in seqnum


def test_properties_page_carries_each_definition(built_site: Path) -> None:
    text = _text(built_site, "properties")
    for name in PROPERTIES:
        assert f'id="{name}"' in text
        first_words = " ".join((CHECKS[name].__doc__ or "").split()[:4]).replace("``", "")
        assert first_words.split()[0] in text


def test_cli_reference_lists_every_command(built_site: Path) -> None:
    text = _text(built_site, "reference/cli")
    for command in available_commands():
        assert f'id="{command}"' in text, command


def test_api_reference_is_generated(built_site: Path) -> None:
    text = _text(built_site, "reference/api")
    for name in (
        "model.run.simulate",
        "model.contracts.Contract",
        "spec.properties.no_stale_reuse",
        "conformance.interface.Implementation",
        "model.trace.Trace",
    ):
        assert f'id="replay_contract.{name}"' in text, name


def test_an_unknown_marker_fails_the_build() -> None:
    with pytest.raises(GenerationError, match="unknown generator"):
        expand_markers("<!-- gen: no-such-table -->\n", ROOT, "page.md")
    with pytest.raises(GenerationError, match="unknown argument"):
        expand_markers("<!-- gen: catalogue-list colour=red -->\n", ROOT, "page.md")
    with pytest.raises(GenerationError, match="unknown contract"):
        expand_markers(
            "<!-- gen: run-table scenario=reversed-interleaving contract=nope -->\n", ROOT, "p"
        )


def test_docstrings_become_markdown() -> None:
    text = docstring_markdown(
        """One ``x`` and :func:`~.run.simulate`.

        ``term``
            its meaning,
            on two lines.

        A block::

            {"a": 1}
        """
    )
    assert "One `x` and `simulate`." in text
    assert "`term`\n:   its meaning, on two lines." in text
    assert '```json\n{"a": 1}\n```' in text


def test_properties_come_from_the_manifest_once_it_exists(tmp_path: Path) -> None:
    from replay_contract.docs_gen import MANIFEST, gen_property, gen_verdict_matrix

    builtin("reversed-interleaving").write(tmp_path / "cx" / "seqnum-complete-reuse.json")
    (tmp_path / MANIFEST).parent.mkdir(parents=True)
    (tmp_path / MANIFEST).write_text(
        """[{"contract": "seqnum", "property": "complete-reuse", "verdict": "counterexample",
             "bound": "inputs=6,channels=2,keys=2,crashes=2", "seconds": 1.5,
             "counterexample": "cx/seqnum-complete-reuse.json"},
            {"contract": "ordered", "property": "complete-reuse", "verdict": "proved",
             "bound": "inputs=6,channels=2,keys=2,crashes=2", "seconds": 4}]"""
    )
    text = gen_property(tmp_path, "complete-reuse")
    assert (
        "| `ordered` | **proved** | every bound up to 64 inputs "
        "| `inputs=6,channels=2,keys=2,crashes=2` | 4 s |"
    ) in text
    assert "| `seqnum` | **counterexample** | one run |" in text
    assert "`cx/seqnum-complete-reuse.json`, replayed through the model" in text
    assert "| 23 | K | 0 | B | re-executed | 1 | complete-reuse |" in text
    assert "Until the proofs land" not in text
    matrix = gen_verdict_matrix(tmp_path)
    assert (
        "| [`complete-reuse`](#complete-reuse) | counterexample "
        "| proved for every bound up to 64 inputs |"
    ) in matrix


def test_without_a_manifest_the_catalogue_stands_in(tmp_path: Path) -> None:
    from replay_contract.docs_gen import gen_property

    text = gen_property(tmp_path, "complete-reuse")
    assert "Until the proofs land" in text
    assert "**broken** by `reversed-interleaving`" in text


def test_source_is_pulled_by_dotted_name_and_a_rename_fails() -> None:
    from replay_contract.docs_gen import gen_source
    from replay_contract.model import operator

    text = gen_source(ROOT, "replay_contract.model.operator.end")
    first = operator.end.__code__.co_firstlineno
    assert f"`model.operator.end` (model/operator.py, lines {first}-" in text
    assert "    def end(world: World) -> World:" in text
    with pytest.raises(GenerationError, match="has no 'no_such_rule'"):
        expand_markers(
            "<!-- gen: source name=replay_contract.model.operator.no_such_rule -->\n", ROOT, "p"
        )


def test_every_rule_of_the_contract_page_shows_model_code(built_site: Path) -> None:
    source = (DOCS / "contract.md").read_text()
    rules = re.findall(r"^### (R\d+)\. .*$", source, re.M)
    assert rules == [f"R{i}" for i in range(1, 12)]
    text = _text(built_site, "contract")
    for rule in rules:
        assert f'id="{rule.lower()}"' in text
    # every rule's code, pulled from the modules of the rules (model/reuse.py, ...)
    assert len(re.findall(r"model/\w+\.py, lines", text)) >= 10
    assert "MUST" in text and "SHOULD" in text


def test_c_back_at_its_old_position_is_worked_through() -> None:
    from replay_contract.model.scenario import load

    scenario = load(DOCS / "examples" / "c-at-its-old-position.json")
    runs = {name: summary(simulate(scenario, CONTRACTS[name])) for name in CONTRACTS}
    assert runs["no-divergence-check"]["violations"][:1] == ["no-stale-reuse"]
    assert runs["ordered"]["violations"] == [] and runs["ordered"]["repeated_tool_calls"] == 0
    assert runs["seqnum"]["reused"] == 0 and "no-stale-reuse" not in runs["seqnum"]["violations"]


def test_proofs_for_every_bound_are_told_apart(built_site: Path) -> None:
    from replay_contract.docs_gen import Verdict, proof_scope

    bound = "inputs=6,channels=2,keys=2,crashes=2"
    assert proof_scope(Verdict("ordered", "no-stale-reuse", "proved", bound)) == "every bound"
    assert proof_scope(Verdict("read-set", "no-stale-reuse", "proved", bound)) == "the bound"
    assert proof_scope(Verdict("ordered", "complete-reuse", "proved", bound)).startswith(
        "every bound up to"
    )
    text = _text(built_site, "properties")
    assert "time budget" in text and "proved at the bound" in text
    assert "proved for every bound" in text


def test_api_page_renders_roles_and_module_headings(built_site: Path) -> None:
    text = _text(built_site, "reference/api")
    assert not re.search(r":(func|class|mod|meth|data|attr|exc):", text)
    assert "<p>::</p>" not in text
    for module in ("model.run", "model.scenario", "conformance.interface"):
        assert f'id="replay_contract.{module}"' in text


def test_topologies_page_has_a_job_graph_per_topology(built_site: Path) -> None:
    text = _text(built_site, "topologies")
    assert text.count('<pre class="mermaid">') == 5
    for link in (
        "https://github.com/apache/flink-agents/issues/1302",
        "https://nightlies.apache.org/flink/",
    ):
        assert link in text
