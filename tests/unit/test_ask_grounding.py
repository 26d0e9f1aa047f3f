"""Grounded answers: numbered excerpts cited by number, citations attached per line, names
checked against the repository, a bounded question; `ask` end to end with a scripted model
over a real index (Chroma, tree-sitter, ripgrep) and a hashing embedder."""

from __future__ import annotations

import json

import pytest

from codeasst.answer import grounding
from codeasst.answer.ask import ask
from codeasst.backends.fake import HashingEmbedder, ScriptedLLM
from codeasst.console import answer_footer_lines as footer_lines
from codeasst.errors import UsageError
from codeasst.evals.ask import evaluate, report_lines
from codeasst.services import build_services
from tests.conftest import write_tree

SHOP = {
    "billing/tax.py": "def apply_vat(amount, rate=0.2):\n    \"\"\"Add VAT to an amount.\"\"\"\n"
                      "    return amount * (1 + rate)\n",
    "billing/invoice.py": "from billing.tax import apply_vat\n\n\ndef invoice_total(lines):\n"
                          "    \"\"\"The invoice total with tax.\"\"\"\n"
                          "    return apply_vat(sum(line.price * line.qty for line in lines))\n",
    "README.md": "# Shop\n\nAn online shop that sends invoices.\n",
}


def excerpt(number: int, path: str, start: int, end: int, text: str, rank: int = 0) -> grounding.Excerpt:
    return grounding.Excerpt(number, path, start, end, path, text, rank)


def run(stream: grounding.CitingStream, text: str, piece: int = 3) -> str:
    """Feed `text` in small pieces, as a model streams it."""
    out = [stream.feed(text[i:i + piece]) for i in range(0, len(text), piece)]
    return "".join(out) + stream.close()


def test_references_become_places_even_when_split_across_tokens():
    excerpts = [excerpt(1, "a.py", 3, 9, "def load(): ..."), excerpt(2, "b.py", 1, 4, "def save(): ...")]
    attached = []
    stream = grounding.CitingStream(excerpts, lambda e, line: attached.append(e))
    text = run(stream, "It loads the config [1] and saves it [2, 1]. See [Excerpt 2]; a list [x] and [9] stay.\n")
    assert text == ("It loads the config [a.py:3-9] and saves it [b.py:1-4, a.py:3-9]. See [b.py:1-4]; "
                    "a list [x] and [9] stay.\n")
    assert stream.cited_numbers == [1, 2, 1, 2] and attached == []


def test_a_copied_excerpt_header_stops_the_answer():
    excerpts = [excerpt(1, "a.py", 3, 9, "def load(): ...")]
    stream = grounding.CitingStream(excerpts, lambda e, line: None)
    assert run(stream, "[1] is where it loads.\n") == "[a.py:3-9] is where it loads.\n"
    assert not stream.reciting
    stream = grounding.CitingStream(excerpts, lambda e, line: None)
    text = run(stream, "It loads [1].\n[1] a.py:3-9 load\ndef load(): ...\n")
    assert stream.reciting and "a.py:3-9 load" not in text and "def load" not in text


def shop_stream(*more: grounding.Excerpt) -> tuple[grounding.CitingStream, list[str]]:
    """A stream over the shop's two billing excerpts (invoice.py retrieval's best), and the
    paths it attaches, in order."""
    excerpts = [excerpt(1, "billing/tax.py", 1, 3, SHOP["billing/tax.py"], rank=1),
                excerpt(2, "billing/invoice.py", 4, 6, SHOP["billing/invoice.py"], rank=0), *more]
    attached: list[str] = []
    return grounding.CitingStream(excerpts, lambda e, line: attached.append(e.path)), attached


def test_an_uncited_line_gets_its_best_excerpt_attached_and_code_blocks_do_not():
    stream, attached = shop_stream()
    text = run(stream, "The total comes from `invoice_total`, which sums price times qty.\n"
                       "```python\napply_vat(amount, rate=0.2) adds the tax here\n```\n"
                       "Short line.\nThe weather today is sunny and warm outside.\n")
    lines = text.splitlines()
    assert lines[0].endswith(" (see billing/invoice.py:4-6)")
    assert lines[2] == "apply_vat(amount, rate=0.2) adds the tax here"  # inside a code block
    assert lines[4] == "Short line." and lines[5].endswith("outside.")  # too short; matches nothing
    assert attached == ["billing/invoice.py"]


def test_a_line_naming_definitions_of_two_files_cites_both():
    stream, attached = shop_stream(excerpt(3, "README.md", 1, 3, SHOP["README.md"], rank=2))
    text = run(stream, "The `invoice_total` function sums the lines, then `apply_vat` adds the tax to it.\n")
    assert text.endswith(" (see billing/invoice.py:4-6; billing/tax.py:1-3)\n")
    assert attached == ["billing/invoice.py", "billing/tax.py"]


def test_chinese_prose_and_a_short_item_naming_a_file_get_citations():
    stream, attached = shop_stream()
    text = run(stream, "税是在 `apply_vat` 函数里加到金额上的，默认税率是百分之二十。\n\n"
                       "The files:\n- `billing/invoice.py`\n- `tax.py`\n- `notes.txt`\n\n### `tax.py`\n")
    lines = text.splitlines()
    assert lines[0].endswith(" (see billing/tax.py:1-3)")
    assert lines[3] == "- `billing/invoice.py` (see billing/invoice.py:4-6)"
    assert lines[4] == "- `tax.py` (see billing/tax.py:1-3)"
    assert lines[5] == "- `notes.txt`" and lines[7] == "### `tax.py`"  # no such excerpt; a heading
    assert attached == ["billing/tax.py", "billing/invoice.py", "billing/tax.py"]


def test_a_wrapped_bullet_gets_one_citation_at_its_end():
    excerpts = [excerpt(1, "billing/tax.py", 1, 3, SHOP["billing/tax.py"])]
    stream = grounding.CitingStream(excerpts, lambda e, line: None)
    text = run(stream, "1. **VAT**: `apply_vat` adds the rate\n   to the amount given, 0.2 by default\n"
                       "2. **Rounding** is not done anywhere in the shop code that we were shown\n\nDone.")
    assert text == ("1. **VAT**: `apply_vat` adds the rate\n   to the amount given, 0.2 by default"
                    " (see billing/tax.py:1-3)\n2. **Rounding** is not done anywhere in the shop code that we "
                    "were shown\n\nDone.")


def test_names_the_answer_uses_are_found_or_flagged():
    text = ("The class `CodeIndex` has an `index` method; `IgnoreRules.match()` and scan(root) decide, "
            "see codeasst.index.files and `files.py`, e.g. this.\n```python\nnot_checked()\n```")
    names = grounding.named_identifiers(text)
    assert names == ["CodeIndex", "index", "IgnoreRules.match", "scan", "codeasst.index.files"]
    known = frozenset({"IgnoreRules", "match", "scan", "codeasst", "index", "files"})
    assert grounding.ungrounded(names, known) == ["CodeIndex"]


def test_repo_words_come_from_the_files_and_follow_edits(tmp_path):
    write_tree(tmp_path, SHOP)
    files = list(SHOP)
    assert {"apply_vat", "invoice_total", "billing", "tax"} <= grounding.repo_words(tmp_path, files)
    (tmp_path / "billing/tax.py").write_text("def add_vat(x):\n    return x\n")
    assert "apply_vat" in grounding.repo_words(tmp_path, files)  # still used by invoice.py
    assert "add_vat" in grounding.repo_words(tmp_path, files)


def test_a_long_pasted_question_keeps_its_informative_lines():
    noise = [f"INFO step {i} ok" for i in range(2000)]
    pasted = "\n".join(["why does this fail?", *noise[:1000], 'File "app/main.py", line 7, in run',
                        "ValueError: bad config", *noise[1000:], "what should I change?"])
    short = grounding.bound_question(pasted, 2000)
    assert len(short) <= 2000
    kept = short.splitlines()
    assert kept[0] == "why does this fail?" and kept[-1] == "what should I change?"
    assert "ValueError: bad config" in kept and 'File "app/main.py", line 7, in run' in kept
    assert any(line.startswith("[... ") for line in kept)
    one_line = grounding.bound_question("x" * 10_000, 2000)
    assert len(one_line) <= 2000
    assert grounding.bound_question("short?", 2000) == "short?"


def test_excerpts_are_cut_to_the_lines_that_share_the_question_words():
    body = "\n".join([f"    step_{i} = {i}" for i in range(40)] + ["    tax = apply_vat(total)"]
                     + [f"    other_{i} = {i}" for i in range(40)])
    start, end, text = grounding.window("def compute():\n" + body, 10, "where is vat applied to the total?", 300)
    assert "apply_vat(total)" in text and len(text) <= 300
    assert end - start + 1 == len(text.splitlines())


@pytest.fixture
def shop(tmp_path):
    root = tmp_path / "shop"
    write_tree(root, SHOP)
    return root


def test_ask_grounded_resolves_references_attaches_and_flags(shop):
    llm = ScriptedLLM([("The total is computed by `invoice_total` [1].\n"
                        "It then calls `TaxEngine.apply` to add the tax for each invoice total line.\n")])
    services = build_services(shop, embedder=HashingEmbedder(), llm=llm)
    answer, stream = ask(services, "how is the invoice total computed?", system="grounded")
    text = "".join(stream)
    numbers = {e.number: e for e in answer.excerpts}
    assert "[1]" not in text and f"[{numbers[1].place}]" in text
    prompt = llm.history[-1]
    assert "[1] " in prompt and "Question: how is the invoice total computed?" in prompt
    assert any(not c.attached and c.verified for c in answer.citations)
    assert answer.ungrounded == ["TaxEngine.apply"] and "invoice_total" in answer.identifiers
    footer = footer_lines(answer)
    assert footer[-1] == "Not found in the repository (the model may have made these up): `TaxEngine.apply`"
    data = answer.to_json()
    assert data["ungrounded"] == ["TaxEngine.apply"] and data["system"] == "grounded"
    assert data["excerpts"][0]["number"] == 1 and "total_s" in data["timings"]


def test_a_follow_up_carries_the_earlier_turns_to_the_model_and_to_retrieval(shop):
    llm = ScriptedLLM(["It is in `invoice_total` [1].\n"])
    services = build_services(shop, embedder=HashingEmbedder(), llm=llm)
    earlier = [("how is the invoice total computed?", "By `invoice_total`, which adds VAT.")]
    answer, stream = ask(services, "and the tax?", history=earlier, system="grounded")
    "".join(stream)
    prompt = llm.history[-1]
    # system, then the earlier turn as user and assistant messages, then the new question last
    assert prompt.index("how is the invoice total computed?") < prompt.index("By `invoice_total`, which adds VAT.")
    assert prompt.index("By `invoice_total`, which adds VAT.") < prompt.index("Question: and the tax?")
    assert answer.retrieval.question.startswith("how is the invoice total computed?")


def test_ask_says_where_to_look_when_nothing_is_drawn_on(shop):
    llm = ScriptedLLM(["I cannot answer that from these.\n"])
    services = build_services(shop, embedder=HashingEmbedder(), llm=llm)
    answer, stream = ask(services, "how are refunds sent to the bank?", system="grounded")
    text = "".join(stream)
    assert "The excerpts may not answer this fully; look next at: " in text
    assert any(e.path in text.split("look next at:")[1] for e in answer.excerpts)


def test_ask_baseline_keeps_the_old_prompt_and_a_bad_system_is_refused(shop):
    llm = ScriptedLLM(["See billing/invoice.py:4-6 for `invoice_total`.\n"])
    services = build_services(shop, embedder=HashingEmbedder(), llm=llm)
    answer, stream = ask(services, "how is the invoice total computed?", system="baseline")
    "".join(stream)
    assert "[billing/" in llm.history[-1] and "[1] " not in llm.history[-1]
    assert any(c.path == "billing/invoice.py" and c.verified and not c.attached for c in answer.citations)
    with pytest.raises(UsageError, match="no answer system 'smart'"):
        ask(services, "q?", system="smart")


def test_a_very_long_question_reaches_the_model_bounded(shop):
    llm = ScriptedLLM(["It is `invoice_total` [1].\n"])
    services = build_services(shop, embedder=HashingEmbedder(), llm=llm)
    question = "why is the invoice total wrong?\n" + "\n".join(f"DEBUG row {i}" for i in range(20_000))
    answer, stream = ask(services, question, system="grounded")
    "".join(stream)
    assert len(llm.history[-1]) < 6000 and answer.question == question


def test_eval_ask_scores_each_system_on_the_same_rows(shop, tmp_path):
    data = tmp_path / "q.jsonl"
    rows = [{"repo": "shop", "question": "how is the invoice total computed?", "expected": ["billing/invoice.py"],
             "lang": "en", "split": "test"},
            {"repo": "shop", "question": "where is VAT added?", "expected": ["billing/tax.py"], "lang": "en",
             "split": "tune"}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "shop").exists()
    llm = ScriptedLLM(["It is `invoice_total` [1], not `Invoicer`.\n", "No citation here.\n",
                       "VAT is added by `apply_vat` in billing/tax.py:1-3.\n", "Nothing.\n"])
    from codeasst.evals import ask as ask_eval

    real_build = ask_eval.build_services
    ask_eval.build_services = lambda root, model=None: real_build(root, embedder=HashingEmbedder(), llm=llm)
    try:
        report = evaluate([data], systems=["grounded", "baseline"], out=tmp_path / "out.jsonl")
    finally:
        ask_eval.build_services = real_build
    test = report["splits"]["test"]
    assert test["grounded"]["cited"] == 1.0 and test["grounded"]["grounded_identifiers"] == 0.5
    assert test["grounded"]["ungrounded"] == ["Invoicer"]
    assert test["baseline"]["cited"] == 0.0 and test["baseline"]["on_target"] == 0.0
    tune = report["splits"]["tune"]
    assert tune["grounded"]["on_target"] == 1.0 and tune["grounded"]["cited_by_model"] == 1.0
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 4
    assert any("held out" in line for line in report_lines(report))
    with pytest.raises(UsageError, match="unknown gpt"):
        evaluate([data], systems=["gpt"])


def test_on_target_counts_verified_citations_of_claims_never_a_named_path_or_a_non_answer():
    from codeasst.answer.ask import Answer, Citation
    from codeasst.evals.ask import score

    row = {"repo": "shop", "question": "q", "expected": ["billing/tax.py"]}
    off = Answer("q", text="See billing/invoice.py.", citations=[Citation("billing/invoice.py", 4, 6, True, "ok")])
    assert not score(row, "grounded", off).on_target
    unverified = Answer("q", citations=[Citation("billing/tax.py", 1, 3, False, "not shown")])
    assert not score(row, "grounded", unverified).on_target
    assert not score(row, "grounded", unverified).cited
    named = Answer("q", text="VAT is added in billing/tax.py.", citations=off.citations)
    assert not score(row, "grounded", named).on_target
    by_model = Answer("q", text="In `apply_vat`.", citations=[Citation("billing/tax.py", 1, 3, True, "ok")])
    assert score(row, "grounded", by_model).on_target_by_model
    attached = Answer("q", text="In `apply_vat`.", citations=[Citation("billing/tax.py", 1, 3, True, "ok",
                                                                         attached=True)])
    scored = score(row, "grounded", attached)
    assert scored.on_target and scored.on_target_attached and not scored.on_target_by_model


def test_a_non_answer_is_never_on_target_or_correct_even_when_its_pointer_names_the_file():
    """The "look next at" list is codeasst's pointer, not a claim: a non-answer whose list names
    the expected file, and even the key's words, scores as an abstention and nothing else."""
    from codeasst.answer.ask import Answer, Citation
    from codeasst.evals.ask import score, summarise

    row = {"repo": "shop", "question": "q", "expected": ["billing/tax.py"], "facts": [["apply_vat"], ["tax.py"]]}
    note = "\n\nThe excerpts may not answer this fully; look next at: billing/tax.py (apply_vat)"
    non_answer = Answer("q", text="I cannot tell from these." + note, abstained=True, note=note,
                        citations=[Citation("billing/tax.py", 1, 3, True, "ok", attached=True)])
    scored = score(row, "grounded", non_answer)
    assert scored.abstained and not scored.on_target and not scored.correct and scored.stated == []
    figures = summarise([scored])
    assert figures["on_target"] == 0.0 and figures["correct"] == 0.0 and figures["abstained_where_answerable"] == 1.0


def test_facts_are_scored_on_their_forms_and_wrong_statements_spoil_an_answer():
    from codeasst.answer.ask import Answer, Citation
    from codeasst.evals.ask import score, summarise
    from codeasst.evals.facts import found

    assert found(["re:\\brate=0\\.2\\b"], "It takes `rate=0.2` by default.")
    assert found(["apply VAT"], "They  `apply\nvat` here") and not found(["apply_vat"], "apply VAT")
    row = {"repo": "shop", "question": "q", "expected": ["billing/tax.py"],
           "facts": [["apply_vat"], ["re:\\b0\\.2\\b", "20%"]], "wrong": [["TaxEngine"]]}
    cited = [Citation("billing/tax.py", 1, 3, True, "ok")]
    right = score(row, "grounded", Answer("q", text="`apply_vat` adds 20% by default.", citations=cited))
    half = score(row, "grounded", Answer("q", text="`apply_vat` adds the tax.", citations=cited))
    spoiled = score(row, "grounded", Answer("q", text="`apply_vat` of TaxEngine adds 0.2.", citations=cited))
    assert right.correct and not half.correct and not spoiled.correct
    figures = summarise([right, half, spoiled])
    assert figures["correct"] == 0.3333 and figures["fact_recall"] == 0.8333 and figures["wrong_per_answer"] == 0.3333
    no_key = score({"repo": "shop", "question": "q", "expected": []}, "grounded", Answer("q", text="x"))
    assert summarise([no_key])["correct"] is None


def test_a_fact_echoed_from_the_question_or_found_in_a_citation_is_not_stated():
    from codeasst.evals.facts import score_facts

    row = {"question": "are the min and max bounds inclusive by default?", "facts": [["inclusive by default"]]}
    assert score_facts(row, "The bounds are inclusive by default.").stated == [0]
    assert score_facts(row, "It says: are the min and max bounds inclusive by default.").stated == []
    cited = {"question": "where is a schema looked up?", "facts": [["class_registry"]]}
    assert score_facts(cited, "It is looked up by name (see src/class_registry.py:1-27).").stated == []
    assert score_facts(cited, "It is looked up in `class_registry.get_class` [src/fields.py:3-9].").stated == [0]


def test_an_unanswerable_row_counts_its_abstention_apart():
    from codeasst.answer.ask import Answer
    from codeasst.evals.ask import score, summarise

    row = {"repo": "shop", "question": "how are refunds sent?", "expected": [], "answerable": False, "facts": []}
    figures = summarise([score(row, "grounded", Answer("q", text="No.", abstained=True))])
    assert figures["abstained_where_unanswerable"] == 1.0 and figures["correct"] is None
    assert figures["unanswerable"] == 1 and figures["keyed"] == 0
