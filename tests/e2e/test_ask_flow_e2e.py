"""`ask` over the code graph, through the CLI, with the real model, embedder, Chroma and
tree-sitter: a "how does" question gets the chain of calls as its lead and the model reads the
chain's definitions in call order; a "where is X used" question gets the callers; every relation
a shown sentence states is one the code has."""

from __future__ import annotations

import re

import pytest

from codeasst.answer.relations import RelationCheck, stated
from codeasst.index.graphdb import CodeGraph
from codeasst.services import build_services
from tests.e2e.conftest import run_json
from tests.unit.test_flow_relations import TREE


@pytest.mark.slow
def test_a_how_question_leads_with_the_flow_and_keeps_only_true_relations(make_repo):
    root = make_repo(TREE)
    answer = run_json("ask", "How does placing an order apply the discount?", "-C", str(root))
    text = answer["answer"]
    flow = text[text.index("How it flows (from the code graph):"):]
    assert "1. `place_order` at shop/orders.py:6: Place an order for a cart." in flow
    assert "2. calls (at line 9) `total_price` at shop/pricing.py:1" in flow
    assert "3. calls (at line 3) `apply_discount` at shop/pricing.py:6: Ten percent off large amounts." in flow
    paths = [e["path"] for e in answer["excerpts"]]
    assert paths[:2] == ["shop/orders.py", "shop/pricing.py"], paths  # the chain first, in call order

    # the lead's definition comes with its outline: lines of the file as it is, numbered, in the text
    assert answer["outlines"], text
    for outline in answer["outlines"]:
        lines = (root / outline["path"]).read_text().splitlines()
        for line in outline["lines"]:
            assert lines[line["line"] - 1] == line["text"]
            numbered = {f"{line['line']:>6}  {line['text']}", f"{'…' + str(line['line']):>6}  {line['text']}"}
            assert any(shown in text for shown in numbered) or line["kind"] == "first"  # …N: after a fold

    services = build_services(root, {})
    graph = CodeGraph(services.repo.index_dir / "graph.sqlite")
    check = RelationCheck(graph, root)
    body = flow.split("\n\n", 1)[1]  # the model's sentences, after the lead
    for sentence in body.replace("\n", " ").split(". "):
        if stated(sentence):
            assert check.why_wrong(sentence) is None, (sentence, text)
    for dropped in answer["left_out"]:
        if dropped["why"].startswith(("backwards", "the code shows no")):
            assert stated(dropped["text"]), dropped


@pytest.mark.slow
def test_a_where_used_question_lists_the_callers_without_the_model(make_repo):
    root = make_repo(TREE)
    # ask.model = none: the lead alone, no model asked, and a full answer
    answer = run_json("ask", "Where is place_order used?", "-C", str(root), env={"CODEASST_ASK__MODEL": "none"})
    assert "Called by: `checkout` (shop/api.py:5)" in answer["answer"], answer["answer"]
    assert answer["generated_tokens"] == 0 and answer["prompt_tokens"] is None and not answer["abstained"]
    cited = {(c["path"], c["start_line"]) for c in answer["citations"] if c["verified"]}
    assert ("shop/api.py", 5) in cited, answer["citations"]  # what the flow shows is cited as the lead's sources


@pytest.mark.slow
def test_the_chain_passes_utilities_by_and_each_model_sentence_is_held_to_a_line(make_repo):
    from tests.unit.test_flow_relations import JOBS

    root = make_repo(JOBS)
    answer = run_json("ask", "How does run_job deal with too many retries?", "-C", str(root))
    text = answer["answer"]
    # the chain ends at the definition whose outline holds the answer, not at the utility the entry calls first
    flow = text[text.index("How it flows (from the code graph):"):]
    assert "2. calls (at line 7) `schedule` at app/jobs.py:10" in flow, text
    assert "quote" not in flow
    assert any(o["path"] == "app/jobs.py" and any("too many retries" in line["text"] for line in o["lines"])
               for o in answer["outlines"]) or "too many retries" in text
    # at most three sentences of the model's, each citing the one line that backs it; their code names
    # are on that line, beside it, or on its definition's first line
    model = flow.split("\n\n", 1)[1] if "\n\n" in flow else ""
    cited = re.findall(r"([^\[\]\n]*?)\[([\w/.]+):(\d+)\]", model)
    assert len(cited) <= 3, model
    for sentence, path, line in cited:
        lines = (root / path).read_text().splitlines()
        n = int(line)
        head = next((lines[i] for i in range(n - 1, -1, -1) if lines[i].lstrip().startswith("def ")), "")
        near = "\n".join(lines[max(0, n - 3):n + 2] + [head])
        for name in re.findall(r"`([A-Za-z_][\w.]*)`", sentence):
            assert all(part in near for part in name.split(".")), (sentence, near)
    held = [c for c in answer["citations"] if c["reason"] == "the line this sentence was checked against"]
    assert len(held) == len({(p, int(n)) for _, p, n in cited}), (answer["citations"], model)
