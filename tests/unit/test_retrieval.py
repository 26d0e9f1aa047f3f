"""Retrieval logic: query parsing, fusion, exact search mapping, citations, and the pipeline
with a scripted LLM and a hashing embedder over real Chroma, tree-sitter and ripgrep."""

from __future__ import annotations

from codeasst.answer.ask import in_context, render_context
from codeasst.answer.citations import check_citations
from codeasst.backends.fake import HashingEmbedder, ScriptedLLM
from codeasst.index.store import Hit
from codeasst.retrieve import lexical
from codeasst.retrieve.fuse import against_lost_in_the_middle, as_fused, cap_per_file, reciprocal_rank_fusion
from codeasst.retrieve.pipeline import mentioned_locations
from codeasst.retrieve.query import analyze, identifiers_in, is_english, parse_reply
from codeasst.services import build_services
from codeasst.tasks.search import find as search


def hit(id_: str, path: str = "a.py", start: int = 1, end: int = 5) -> Hit:
    return Hit(id_, path, start, end, "function", id_, "python", "", 0.0)


def test_identifiers_typed_by_the_user_are_kept():
    assert identifiers_in("where is `BadParameter` raised by Context.invoke or parse_args in myFunc?") == [
        "BadParameter", "Context.invoke", "parse_args", "myFunc"]
    assert is_english("how are redirects followed?")
    assert not is_english("где обрабатываются переменные окружения?")
    assert not is_english("进度条是在哪里渲染的?")


def test_parse_reply_survives_drift():
    reply = "english: Where is the progress bar drawn?\nkeywords: `ProgressBar`, render, the, bar()\ncode:\n```python\nbar.render()\n```\nextra chatter"
    parsed = parse_reply("进度条是在哪里渲染的?", reply, None)
    assert parsed.english == "Where is the progress bar drawn?"
    assert parsed.keywords == ["ProgressBar", "render", "bar"]
    assert parsed.hyde == "bar.render()\nextra chatter"
    empty = parse_reply("how does `Client.send` retry?", "I cannot help with that.", None)
    assert empty.english == "how does `Client.send` retry?" and empty.keywords == ["Client.send"]


def test_analyze_prefills_english_questions_and_fences_hyde():
    llm = ScriptedLLM([" retry, backoff, Client.send\n", "def send(self):\n    return self._retry()\n"])
    result = analyze(llm, "how does `Client.send` retry?", "Python", llm_keywords=True)
    assert result.english == "how does `Client.send` retry?"
    assert result.keywords == ["Client.send", "retry", "backoff"]
    assert result.hyde == "def send(self):\n    return self._retry()"
    assert llm.history[0].endswith("english: how does `Client.send` retry?\nkeywords:")
    assert llm.history[1].endswith("code:\n```python\n")


def test_the_model_writes_only_what_it_adds():
    llm = ScriptedLLM(["def send(self):\n    return self._retry()\n"])
    result = analyze(llm, "how does `Client.send` retry?", "Python")
    assert result.keywords == ["Client.send"]  # typed by the user; no keyword generation
    assert llm.history[0].endswith("english: how does `Client.send` retry?\ncode:\n```python\n")
    assert analyze(llm, "how does `Client.send` retry?", "Python", hyde=False).keywords == ["Client.send"]
    assert len(llm.history) == 1  # an English question without HyDE needs no model call
    llm.enqueue(" Where is the password checked?\nkeywords: password, check_password\n")
    translated = analyze(llm, "где проверяется пароль?", "Python", hyde=False)
    assert translated.english == "Where is the password checked?"
    assert translated.keywords == ["password", "check_password"]


def test_hyde_snippet_is_cut_at_its_line_cap():
    llm = ScriptedLLM([" retry\n", "a = 1\nb = 2\nc = 3\nd = 4\n"])
    result = analyze(llm, "how does retry work?", "Python", hyde_lines=2, llm_keywords=True)
    assert result.hyde == "a = 1\nb = 2"


def test_context_heads_each_excerpt_with_the_citation_to_copy():
    code = Hit("x", "pkg/mod.py", 10, 12, "function", "pkg.mod.f", "python", "def f():\n    return 1\n", 0.0)
    context = render_context(as_fused([code], "dense"), "")
    assert context.startswith("[pkg/mod.py:10-12] pkg.mod.f\ndef f():\n    return 1\n")


def test_context_is_filled_by_rank_before_it_is_reordered():
    sized = [Hit(str(i), f"f{i}.py", 1, 2, "function", f"f{i}", "python", "x" * size, 0.0)
             for i, size in enumerate([500, 900, 300, 900, 200])]
    chosen = in_context(as_fused(sized, "dense"), 1600)
    # 0 and 1 fill 1,400 characters; 2 and 3 no longer fit, 4 still does.
    assert [f.hit.id for f in chosen] == ["0", "1", "4"]
    context = render_context(chosen, "")
    assert [line.split(":")[0] for line in context.splitlines() if line.startswith("[")] == ["[f0.py", "[f4.py", "[f1.py"]


def test_rrf_boosts_chunks_found_by_several_retrievers_and_caps_files():
    a, b, c, d = hit("a"), hit("b"), hit("c", "other.py"), hit("d")
    fused = reciprocal_rank_fusion({"dense": [a, b, c], "rg": [c, d], "hyde": [d, c]})
    assert [f.hit.id for f in fused] == ["c", "d", "a", "b"]
    assert fused[0].sources == ("dense", "rg", "hyde")
    capped = cap_per_file(fused, 2)
    assert [f.hit.id for f in capped] == ["c", "d", "a"]


def test_lost_in_the_middle_puts_the_strongest_at_both_ends():
    assert against_lost_in_the_middle([1, 2, 3, 4, 5, 6]) == [1, 3, 5, 6, 4, 2]


def test_ripgrep_hits_map_to_chunks_and_rare_words_weigh_more(make_repo):
    root = make_repo({"a.py": "def retry():\n    pass\n\n\ndef send():\n    return retry()\n",
                      "b.py": "def send():\n    pass\n", "c.py": "x = 'send'\n"})
    line_hits = lexical.grep(root, ["a.py", "b.py", "c.py"], ["retry", "send"])
    assert {(h.path, h.line, h.keyword) for h in line_hits} == {
        ("a.py", 1, "retry"), ("a.py", 5, "send"), ("a.py", 6, "retry"),
        ("b.py", 1, "send"), ("c.py", 1, "send")}
    chunks = [hit("a1", "a.py", 1, 2), hit("a2", "a.py", 5, 6), hit("b1", "b.py", 1, 2), hit("c1", "c.py", 1, 1)]
    ranked = lexical.rank_chunks(line_hits, chunks, total_files=3)
    assert [h.id for h in ranked][:1] == ["a2"]  # both words, one of them rare
    assert ranked[-1].score < ranked[0].score


def test_citations_are_checked_against_the_repo_and_the_excerpts(make_repo):
    root = make_repo({"pkg/app.py": "\n".join(f"line {i}" for i in range(1, 41)) + "\n"})
    shown = reciprocal_rank_fusion({"dense": [hit("x", "pkg/app.py", 10, 20)]})
    text = ("See pkg/app.py:12-15 and pkg/app.py:30, also pkg/app.py:12-15 again, "
            "missing.py:3, pkg/app.py:99 and http://example.com:8080.")
    found = {(c.path, c.start_line, c.end_line): (c.verified, c.reason) for c in check_citations(root, text, shown)}
    assert found == {
        ("pkg/app.py", 12, 15): (True, "matches an excerpt"),
        ("pkg/app.py", 30, 30): (False, "exists, but was not among the excerpts the model saw"),
        ("missing.py", 3, 3): (False, "no such file in the repository"),
        ("pkg/app.py", 99, 99): (False, "lines out of range (the file has 40)"),
    }


def test_pipeline_fuses_dense_hyde_and_exact_search(make_repo):
    root = make_repo({
        "billing/tax.py": "def apply_vat(amount):\n    return amount * 1.2\n",
        "billing/invoice.py": "from billing.tax import apply_vat\n\n\ndef invoice_total(lines):\n"
                              "    return apply_vat(sum(lines))\n",
        "README.md": "# Shop\n\nAn online shop.\n",
    })
    llm = ScriptedLLM([" apply_vat, tax\n", "def add_tax(x):\n    return apply_vat(x)\n"])
    services = build_services(root, {"retrieval.llm_keywords": True, "retrieval.hyde": True}, embedder=HashingEmbedder(),
                              llm=llm)
    result = search(services, "where is the tax added?", k=3)
    assert set(result.rankings) == {"dense", "hyde", "rg", "bm25-chunks"}
    assert result.hits[0].hit.path in ("billing/tax.py", "billing/invoice.py")
    assert "rg" in result.hits[0].sources
    # The only chunk whose words say "tax" (its import): a path is no word of a chunk.
    assert [h.path for h in result.rankings["bm25-chunks"]] == ["billing/invoice.py"]
    assert {"index_update_s", "dense_s", "rg_s", "bm25_s", "query_analysis_s"} <= set(result.timings)


def test_places_named_in_piped_text_are_found():
    trace = ('Traceback (most recent call last):\n  File "/home/me/shop/billing/invoice.py", line 11, in total\n'
             "ERROR web/main.ts:3 failed; see also notes.txt:9 and billing/invoice.py:11\n")
    files = ["billing/invoice.py", "web/main.ts", "README.md"]
    assert mentioned_locations(trace, files) == [("billing/invoice.py", 11), ("web/main.ts", 3)]


def test_piped_context_adds_its_places_as_a_retriever(make_repo):
    root = make_repo({
        "billing/tax.py": "def apply_vat(amount):\n    return amount * 1.2\n",
        "billing/invoice.py": "def invoice_total(lines):\n    raise TypeError('bad qty')\n",
    })
    llm = ScriptedLLM([" error\n", "raise TypeError()\n"])
    services = build_services(root, embedder=HashingEmbedder(), llm=llm)
    trace = 'Traceback:\n  File "billing/invoice.py", line 2, in invoice_total\nTypeError: bad qty\n'
    result = search(services, "where is this raised?", context=trace)
    assert [h.path for h in result.rankings["stdin-places"]] == ["billing/invoice.py"]
    assert result.hits[0].hit.path == "billing/invoice.py"


def test_an_answer_stuck_in_a_loop_is_detected():
    from codeasst.answer.ask import _looping

    assert not _looping("First, the rules.\nThen the content checks.\n1. binary\n2. size\n")
    assert _looping("- **4. `.codeasstignore` applies**\n- **5. `.codeasstignore` applies**\n"
                    "- **6. `.codeasstignore` applies**\n")
    assert _looping("a\nb\na\nb\na\nb\n")


def test_replies_cut_by_the_token_cap_lose_their_unfinished_part():
    # ScriptedLLM yields one word per token: 3 tokens cut the keyword list inside its third item.
    llm = ScriptedLLM([" retry, backoff, Client.sen", "a = 1\nb = 2\nc ="])
    result = analyze(llm, "how does retry work?", "Python", keyword_tokens=3, hyde_tokens=7, llm_keywords=True)
    assert result.keywords == ["retry", "backoff"]
    assert result.hyde == "a = 1\nb = 2"


def test_citations_of_dotfiles_verify(make_repo):
    root = make_repo({".github/ci.yml": "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n"})
    shown = reciprocal_rank_fusion({"dense": [hit("ci", ".github/ci.yml", 1, 4)]})
    (citation,) = check_citations(root, "The workflow is in .github/ci.yml:2-4.", shown)
    assert (citation.path, citation.start_line, citation.end_line, citation.verified) == (".github/ci.yml", 2, 4, True)
    (citation,) = check_citations(root, "See ./.github/ci.yml:1", shown)
    assert (citation.path, citation.verified) == (".github/ci.yml", True)


def test_codeasst_attaches_citations_for_what_the_answer_names():
    from codeasst.answer.citations import attach_citations

    total = Hit("t", "billing/invoice.py", 1, 12, "file", "billing.invoice", "python",
                "class Invoice:\n    def total(self):\n        return 1\n", 0.0)
    login = Hit("l", "auth/login.ts", 1, 4, "function", "auth.login", "typescript", "export async function login() {}", 0.0)
    router = Hit("r", "server/router.go", 3, 5, "function", "server.RegisterRoutes", "go",
                 "func (s *S) RegisterRoutes(mux *Mux) {}", 0.0)
    hits = reciprocal_rank_fusion({"dense": [total, login, router]})
    found = attach_citations("`Invoice.total` adds the tax; RegisterRoutes wires it up.", hits, [])
    assert [(c.path, c.attached, c.verified) for c in found] == [
        ("billing/invoice.py", True, True), ("server/router.go", True, True)]
    assert "Invoice" in found[0].reason and "total" in found[0].reason
    assert attach_citations("It totals the lines; see auth/login.ts for sign-in.", hits, [])[0].path == "auth/login.ts"
    written = [c for c in found if c.path == "billing/invoice.py"]
    assert [c.path for c in attach_citations("Invoice.total", hits, written)] == []


def test_a_stage_that_ran_on_some_rows_says_how_many():
    from codeasst.evals.retrieval import Scored, _block_lines, summarise

    def row(stages: dict[str, list[str]]) -> Scored:
        return Scored({"repo": "r", "expected": ["a.py"]}, stages, stages, 1.0)

    block = summarise([row({"fused": ["a.py"], "hyde": ["a.py"]}), row({"fused": ["b.py"]}),
                       row({"fused": ["b.py"]})])
    assert (block["stages"]["hyde"]["rows"], block["stages"]["hyde"]["recall@1"]) == (1, 1.0)
    assert (block["stages"]["fused"]["rows"], block["stages"]["fused"]["recall@1"]) == (3, 0.3333)
    assert "| hyde | 1 | 1.000 |" in "\n".join(_block_lines("t", block))


def test_a_stage_the_pipeline_skipped_is_not_run_never_scored(make_repo):
    """A long report skips HyDE and rg: those stages are "not run" on it, not 0, and fused is
    compared with each retriever only on the rows where that retriever ran."""
    from codeasst.evals.retrieval import score, stages_of, summarise

    root = make_repo({
        "billing/tax.py": "def apply_vat(amount):\n    return amount * 1.2\n",
        "billing/invoice.py": "from billing.tax import apply_vat\n\n\ndef invoice_total(lines):\n"
                              "    return apply_vat(sum(lines))\n",
    })
    llm = ScriptedLLM([" apply_vat, tax\n", "def add_tax(x):\n    return apply_vat(x)\n"])
    services = build_services(root, {"retrieval.llm_keywords": True, "retrieval.hyde": True}, embedder=HashingEmbedder(),
                              llm=llm)
    cfg = services.settings.retrieval
    report = ("Invoice totals are wrong\n\nThe VAT added to an invoice is off by a cent.\n"
              "Steps: make an invoice of three lines.\nExpected: 3.60\nGot: 3.61\n")
    short, long = search(services, "where is the tax added?", k=3), search(services, report, k=3)
    assert {"hyde", "rg"} <= set(stages_of(short, cfg))
    assert not {"hyde", "rg"} & set(stages_of(long, cfg))

    rows = [{"repo": "r", "question": q, "expected": ["billing/tax.py"]} for q in ("short", "long")]
    block = summarise([score(rows[0], short, cfg, 1.0), score(rows[1], long, cfg, 1.0)])
    assert block["stages"]["hyde"]["rows"] == block["stages"]["rg"]["rows"] == 1
    assert block["stages"]["fused"]["rows"] == 2
    assert block["fused_against"]["hyde"]["rows"] == 1


def test_fused_is_compared_only_where_both_ran():
    from codeasst.evals.retrieval import Scored, summarise

    def row(expected: list[str], stages: dict[str, list[str]]) -> Scored:
        return Scored({"repo": "r", "expected": expected}, stages, stages, 1.0)

    # Where HyDE ran, fused finds both files and HyDE one; on the report HyDE skipped, fused misses.
    both = row(["a.py", "c.py"], {"fused": ["a.py", "c.py"], "hyde": ["a.py"], "dense": ["a.py"]})
    report = row(["a.py"], {"fused": ["b.py"], "dense": ["b.py", "d.py"]})
    block = summarise([both, report])
    assert block["fused_against"]["hyde"]["fused"]["f1"] == 1.0
    assert block["fused_beats_every_single_retriever"]
