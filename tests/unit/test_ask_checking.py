"""The checked answer: the definitions that answer first, built without the model; each
sentence the model writes held to the excerpts it cites; repeats and dangling openers left out."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from codeasst.answer import checking, grounding
from codeasst.answer.ask import ask
from codeasst.backends.fake import HashingEmbedder, ScriptedLLM
from codeasst.console import answer_footer_lines as footer_lines
from codeasst.services import build_services
from tests.conftest import write_tree
from tests.unit.test_ask_grounding import SHOP

METHOD = '''    def invoke(self, cli, args=None, input=None,
               catch_exceptions=True):
        """Invokes a command in an isolated environment. The arguments go
        to the command."""
        return self._run(cli, args)
'''
GO = '''// Lookup returns the Flag structure of the named flag, returning nil if none exists.
func (f *FlagSet) Lookup(name string) *Flag {
	return f.lookup(f.normalizeFlagName(name))
}
'''


def excerpt(number, path, start, text, name, rank=0):
    return grounding.Excerpt(number, path, start, start + len(text.splitlines()) - 1, name, text, rank)


def test_the_errors_a_definition_raises_are_listed_with_their_messages():
    python = ['    if bad:', '        raise ValueError(', '            "The data_key argument collides "', '        )',
              '    raise TypeError(x)']
    assert checking.errors_of(python) == ('`ValueError` ("The data_key argument collides")', "`TypeError`")
    go = ['\tmsg := fmt.Sprintf("unable to redefine %q shorthand", c)', '\tpanic(msg)',
          '\treturn fmt.Errorf("flag %q must be set", name)', '\t// panic("not this")']
    assert checking.errors_of(go) == ('`panic` ("unable to redefine %q shorthand")', '`error` ("flag %q must be set")')


def test_a_definition_is_listed_with_its_line_signature_and_docstring():
    found = checking.definition_of(excerpt(1, "src/testing.py", 40, METHOD, "CliRunner.invoke"), "method", "q")
    assert (found.name, found.line) == ("CliRunner.invoke", 40)
    assert found.signature == "def invoke(self, cli, args=None, input=None, catch_exceptions=True)"
    assert found.doc == "Invokes a command in an isolated environment."
    go = checking.definition_of(excerpt(1, "flag.go", 10, GO, "FlagSet.Lookup"), "method", "q")
    assert go.line == 11 and go.signature == "func (f *FlagSet) Lookup(name string) *Flag"
    assert go.doc.startswith("Lookup returns the Flag structure")


def test_in_a_whole_file_the_definition_named_like_the_question_is_chosen():
    text = SHOP["billing/invoice.py"]
    whole = excerpt(1, "billing/invoice.py", 1, text, "billing.invoice")
    found = checking.definition_of(whole, "file", "how is the invoice total computed?")
    assert (found.name, found.line, found.doc) == ("invoice_total", 4, "The invoice total with tax.")
    assert checking.definition_of(whole, "file", "where are refunds sent?") is None
    module = excerpt(1, "shop/files.py", 1, '"""Which files get indexed: the rules."""\n\nimport os\n', "shop.files")
    assert checking.definition_of(module, "module", "q").doc == "Which files get indexed: the rules."


def test_no_lead_when_the_best_hit_is_no_definition_or_of_a_role_that_does_not_answer():
    readme = excerpt(1, "README.md", 1, "# Shop\n\nHow totals work.\n", "README", rank=0)
    method = excerpt(2, "src/testing.py", 40, METHOD, "CliRunner.invoke", rank=1)
    docs, impl, test = (SimpleNamespace(kind=k, role=r) for k, r in (("section", "docs"), ("method", "implementation"),
                                                                     ("method", "test")))
    assert checking.lead([readme, method], [docs, impl], "q") == []
    method_first = excerpt(2, "src/testing.py", 40, METHOD, "CliRunner.invoke", rank=0)
    assert [d.name for d in checking.lead([method_first], [impl], "q")] == ["CliRunner.invoke"]
    assert checking.lead([method_first], [test], "q") == []
    assert checking.lead([method_first], [test], "how is it tested?", {"test", "fixture"})
    other_file = excerpt(3, "flag.go", 10, GO, "FlagSet.Lookup", rank=1)
    # another file's definition follows the first (shown as one line, without its outline: ask.py)
    assert [d.name for d in checking.lead([method_first, other_file], [impl, impl], "q")] == [
        "CliRunner.invoke", "FlagSet.Lookup"]


def test_a_later_piece_of_a_long_definition_leads_with_the_definition_read_from_its_file(tmp_path):
    # The chunker cuts a long function into windows that keep its name; BM25 over chunks often
    # ranks the piece that holds the docstring's middle first. The lead still shows the function.
    lines = ["import os", "", "", "def edit(text=None, editor=None):",
             '    """Edit the given text in the defined editor.', "",
             "    The editor is found from VISUAL or EDITOR, else a guess per platform.",
             '    """'] + [f"    step_{n} = {n}" for n in range(40)] + ["    if not editor:",
                                                                     "        raise UsageError('no editor found')"]
    (tmp_path / "termui.py").write_text("\n".join(lines) + "\n")
    start = 7  # the piece starts in the docstring's middle
    piece = excerpt(1, "termui.py", start, "\n".join(lines[start - 1:]), "termui.edit")
    impl = SimpleNamespace(kind="function", role="implementation")
    assert checking.lead([piece], [impl], "how is the editor chosen?") == []  # the piece alone shows no signature
    [found] = checking.lead([piece], [impl], "how is the editor chosen?", root=tmp_path)
    assert (found.name, found.line, found.end_line) == ("termui.edit", 4, len(lines))
    assert found.signature == "def edit(text=None, editor=None)"
    assert found.doc == "Edit the given text in the defined editor."
    assert found.errors == ('`UsageError` ("no editor found")',)
    # A file that no longer shows the definition above the piece gives no lead rather than a wrong one.
    (tmp_path / "termui.py").write_text("\n".join(["def helper():", *lines[1:3], "    x = 1", *lines[4:]]) + "\n")
    assert checking.lead([piece], [impl], "how is the editor chosen?", root=tmp_path) == []


def run(checker: checking.LineChecker, text: str, piece: int = 5) -> str:
    out = [checker.feed(text[i:i + piece]) for i in range(0, len(text), piece)]
    return "".join(out) + checker.close()


@pytest.fixture
def excerpts():
    return [excerpt(1, "billing/tax.py", 1, SHOP["billing/tax.py"], "billing.tax"),
            excerpt(2, "billing/invoice.py", 1, SHOP["billing/invoice.py"], "billing.invoice", rank=1)]


def test_a_sentence_naming_what_its_excerpt_does_not_show_is_left_out(excerpts):
    checker = checking.LineChecker(excerpts, "how is VAT added?")
    text = ("`apply_vat` multiplies the amount by 1 plus `rate` [billing/tax.py:1-3]. "
            "The default rate is 0.25 [billing/tax.py:1-3].\n"
            "It raises `TaxError` for a negative amount.\n"
            "The default rate is 0.2, and `invoice_total` is not in it [billing/tax.py:1-3].\n")
    shown = run(checker, text)
    # held to the line that backs it, which becomes its citation
    assert shown.splitlines()[0] == "`apply_vat` multiplies the amount by 1 plus `rate` [billing/tax.py:1]."
    assert "TaxError" not in shown and "0.25" not in shown
    # a name from another excerpt does not back a sentence that cites this one
    assert "invoice_total" not in shown
    whys = [why for _, why in checker.dropped]
    assert any("0.25" in why for why in whys) and any("TaxError" in why for why in whys)
    assert any("invoice_total" in why for why in whys)


def test_repeats_and_an_opener_with_nothing_after_it_are_left_out(excerpts):
    checker = checking.LineChecker(excerpts, "how is VAT added?")
    shown = run(checker, "1. `apply_vat` adds VAT [billing/tax.py:1-3].\n2. `apply_vat` adds VAT [billing/tax.py:1-3].\n"
                         "\nThe steps are as follows:\n")
    assert shown.count("adds VAT") == 1 and "steps" not in shown
    assert checker.dropped[0][1] == "repeats an earlier sentence"
    assert len(checker.dropped) == 2  # the opener says nothing a line holds
    held = checking.LineChecker(excerpts, "q")
    assert run(held, "`apply_vat` adds VAT to an amount as follows:\n\n") == ""
    assert held.dropped[-1][1] == "an opening line with nothing after it"
    kept = checking.LineChecker(excerpts, "q")
    assert "`apply_vat` adds VAT to an amount as follows [billing/tax.py:1]:" in run(
        kept, "`apply_vat` adds VAT to an amount as follows:\n- `apply_vat` adds VAT to the amount.\n")


def test_code_the_model_writes_is_left_out_with_one_note_a_block(excerpts):
    checker = checking.LineChecker(excerpts, "how is VAT added?")
    shown = run(checker, "`apply_vat` adds VAT [billing/tax.py:1-3].\n```python\nx = apply_vat(1)\ny = 2\n```\n"
                         "    def apply_vat(amount):\n        return amount\n")
    assert shown == "`apply_vat` adds VAT [billing/tax.py:1].\n"
    assert [why for _, why in checker.dropped] == ["code: the excerpts are in Sources"]
    assert checker.done  # code after an explanation: the model is stopped
    lost = checking.LineChecker(excerpts, "q")
    run(lost, "It uses `Ledger`. It uses `Vault`.\n")
    assert not lost.done
    run(lost, "It uses `Bank`.\n")
    assert lost.done
    fragment = checking.LineChecker(excerpts, "q")
    assert run(fragment, "`apply_vat` adds VAT.\n    x = apply_vat(\n        self\n") == "`apply_vat` adds VAT [billing/tax.py:1].\n"
    apart = checking.LineChecker(excerpts, "q")
    run(apart, "```\nx = 1\n```\n`apply_vat` adds VAT.\n    return amount\n")
    assert [why for _, why in apart.dropped] == ["code: the excerpts are in Sources"] * 2


def test_ask_checked_leads_with_the_definition_and_keeps_only_citations_of_what_it_shows(tmp_path):
    root = tmp_path / "shop"
    write_tree(root, SHOP)
    llm = ScriptedLLM([("The total is the sum of each line's price times quantity [1].\n"
                        "It then calls `TaxEngine.apply` [2].\n")])
    services = build_services(root, embedder=HashingEmbedder(), llm=llm)
    answer, stream = ask(services, "how is the invoice total computed?", system="checked")
    pieces = list(stream)
    assert pieces[0].startswith("In the code:\n- `invoice_total` at billing/invoice.py:4-")
    assert "TaxEngine" not in answer.text and answer.left_out and not answer.abstained
    assert answer.timings["first_token_s"] <= answer.timings["model_first_token_s"]
    shown_places = {f"{c.path}:{c.start_line}" for c in answer.citations}
    assert all(place.split(":")[0] in answer.text for place in shown_places)
    assert not any(c.path == "billing/tax.py" for c in answer.citations)  # its sentence was left out
    assert any("Left out" in line for line in footer_lines(answer))


def test_with_ask_model_none_the_answer_is_the_lead_and_outline_and_no_model_is_asked(tmp_path):
    root = tmp_path / "shop"
    write_tree(root, SHOP)
    llm = ScriptedLLM([("It is computed somewhere [1].\n")])
    services = build_services(root, {"ask": {"model": "none"}}, embedder=HashingEmbedder(), llm=llm)
    answer, stream = ask(services, "how is the invoice total computed?", system="checked")
    text = "".join(stream)
    assert text.startswith("In the code:\n- `invoice_total` at billing/invoice.py:4-") and "somewhere" not in text
    assert llm.history == [] and answer.prompt_tokens is None and answer.generated_tokens == 0
    assert not answer.abstained and answer.citations  # the lead's definition: a full answer
    assert "model_first_token_s" not in answer.timings
    # the same services with a model (ask.model's default, 'llm') ask it
    model = ScriptedLLM([("It is computed somewhere [1].\n")])
    talking = build_services(root, embedder=HashingEmbedder(), llm=model)
    "".join(ask(talking, "how is the invoice total computed?", system="checked")[1])
    assert model.history
