"""`eval unittest`'s logic: which statements may be masked, the mask itself, the seeded sample, the
tracer that files lines under the tests that run them, and the scoring, on tiny synthetic
repositories with a scripted model (tests/e2e/test_eval_unittest_e2e.py runs the real one)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from codeasst.backends.fake import HashingEmbedder, ScriptedLLM
from codeasst.errors import UsageError
from codeasst.evals import sandbox
from codeasst.evals import unittest_metric as um
from codeasst.evals.masking import Function, functions, mask
from codeasst.services import build_services
from tests.conftest import write_tree

SOURCE = textwrap.dedent('''\
    import os


    def plain(a, b):
        """A docstring is not masked."""
        total = a + b  # a comment may follow
        if total > 10: return 10
        x = 1; y = 2
        call(a,
             b)
        for item in range(3):
            total += item
        try:
            os.remove("x")
        except OSError:
            pass
        ...
        return total


    class Box:
        def method(self):
            def inner():
                return 1
            return inner()
    ''')


def test_the_statements_that_may_be_masked():
    found = {f.qualname: f for f in functions(SOURCE, "m.py")}
    assert set(found) == {"plain", "Box.method", "Box.method.<locals>.inner"}
    # line 6 (with a comment), 12 (in a loop), 14 (in a try), 18 (return); not the def (4), the
    # docstring (5), `if ...: return` (7), two statements on a line (8), a call over two lines (9),
    # `pass` (16) or `...` (17)
    assert found["plain"].statements == (6, 12, 14, 18)
    assert found["plain"].def_line == 4
    # a nested function's body is its own, not its parent's
    assert found["Box.method"].statements == (25,)
    assert found["Box.method.<locals>.inner"].statements == (24,)
    assert functions("def broken(:\n", "b.py") == []


def test_a_mask_empties_the_line_to_its_indentation_and_fills_back():
    masked = mask(SOURCE, 12)
    assert masked.statement == "total += item"
    assert masked.col == 9 and masked.prefix.endswith("\n        ")
    assert masked.fill(masked.statement) == SOURCE
    assert masked.text.split("\n")[11] == "        "
    assert masked.fill("").split("\n")[11].strip() == ""
    assert mask(SOURCE, 6).statement == "total = a + b  # a comment may follow"


def _lines(**runs: list[str]) -> dict[tuple[str, int], list[str]]:
    """{(file, line): tests} from keyword `f_LINE=[tests]`."""
    return {("m.py", int(key.split("_")[1])): tests for key, tests in runs.items()}


def test_the_sample_is_stable_seeded_and_limited_to_reached_functions():
    found = [Function("m.py", f"f{n}", 10 * n, (10 * n + 1, 10 * n + 2)) for n in range(1, 9)]
    lines = _lines(**{f"f_{10 * n + 1}": [f"t::a{n}"] for n in range(1, 8)}, f_72=["t::b7"])
    picked = um.select(found, lines, None, seed=0)
    assert {f.qualname for f, *_ in picked} == {f"f{n}" for n in range(1, 8)}  # f8: no test runs it
    assert um.select(found, lines, None, seed=0) == picked
    assert um.select(found, lines, 3, seed=0) == picked[:3]
    assert [f for f, *_ in um.select(found, lines, None, seed=1)] != [f for f, *_ in picked]
    for function, line, tests, function_tests in picked:
        assert tests == lines[("m.py", line)]  # only the tests that run the masked line
        assert function_tests == (2 if function.qualname == "f7" else 1)


REPO = {
    "pkg/__init__.py": "",
    "pkg/calc.py": textwrap.dedent('''\
        _seen = []


        def double(x):
            """Twice x."""
            return x * 2


        def note(x):
            """Remember x: no test looks."""
            _seen.append(x)


        def broken(x):
            return x + 1


        def unused(x):
            return -x
        '''),
    "tests/test_calc.py": textwrap.dedent('''\
        from pkg.calc import broken, double, note


        def test_double():
            assert double(2) == 4


        def test_note():
            note(1)


        def test_broken():
            assert broken(1) == 3
        '''),
}


@pytest.fixture
def work(tmp_path) -> um.Work:
    write_tree(tmp_path / "src", REPO)
    return um.prepare(tmp_path / "src", None, tmp_path / "work-area", timeout_s=60)


def test_the_tracer_files_lines_under_the_passing_tests_that_run_them(work):
    texts = um.sources(work)
    assert set(texts) == {"pkg/__init__.py", "pkg/calc.py"}  # not the tests
    outcomes, lines = um.reach(work, list(texts))
    assert outcomes == {"tests/test_calc.py::test_double": "passed", "tests/test_calc.py::test_note": "passed",
                        "tests/test_calc.py::test_broken": "failed"}
    assert lines[("pkg/calc.py", 6)] == ["tests/test_calc.py::test_double"]
    assert lines[("pkg/calc.py", 11)] == ["tests/test_calc.py::test_note"]
    assert ("pkg/calc.py", 15) not in lines  # only a failing test runs it
    assert ("pkg/calc.py", 19) not in lines  # no test runs it


def test_a_file_that_holds_tests_is_not_the_package_whatever_its_name():
    texts = {"stats.py": "def mean(v):\n    return sum(v) / len(v)\n",
             "checks.py": "def test_mean():\n    assert mean([1]) == 1\n"}
    found = um.own_functions(texts, {"checks.py::test_mean": "passed"})
    assert [f.qualname for f in found] == ["mean"]


def test_a_suite_that_collects_nothing_is_bad_input(tmp_path):
    write_tree(tmp_path / "src", {"m.py": "def f():\n    return 1\n"})
    work = um.prepare(tmp_path / "src", None, tmp_path, timeout_s=60)
    with pytest.raises(UsageError, match="no tests collected"):
        um.reach(work, ["m.py"])


def test_evaluate_scores_the_systems_and_drops_what_the_tests_cannot_notice(tmp_path):
    write_tree(tmp_path / "src", REPO)
    llm = ScriptedLLM()
    # raw with the product's suffix (right), raw with its own (wrong), then complete (wrong)
    llm.enqueue("return x + x\n", "return x - x\n", "return x * 3\n")
    services = build_services(tmp_path, llm=llm, embedder=HashingEmbedder())
    result = um.evaluate(services, str(tmp_path / "src"), limit=None)
    rows = {r.function: r for r in result["rows"]}
    assert set(rows) == {"double", "note"}  # broken: its test fails as it is; unused: no test runs it
    assert rows["note"].status == "dropped: the tests do not notice"
    assert rows["note"].truth_passes and rows["note"].deleted_passes
    double = rows["double"]
    assert (double.status, double.statement, double.tests) == ("scored", "return x * 2",
                                                                ["tests/test_calc.py::test_double"])
    assert (double.raw, double.raw_passes) == ("return x + x", True)
    assert (double.text, double.passes) == ("return x * 3", False)
    assert (double.raw_own, double.raw_own_passes) == ("return x - x", False)
    assert len(llm.history) == 3  # the dropped row asked the model nothing
    assert "<|fim_suffix|>" in llm.history[0] and llm.history[0].rstrip().endswith("<|fim_middle|>")
    assert (result["functions"], result["functions_reached"], result["masked"]) == (4, 2, 2)
    assert (result["dropped_unnoticed"], result["dropped_truth_fails"], result["scored"]) == (1, 0, 1)
    assert (tmp_path / "src" / "pkg" / "calc.py").read_text() == REPO["pkg/calc.py"]  # the copy was changed
    truth, deleted, raw, raw_own, complete = result["systems"]
    assert (truth.rows, truth.passed) == (2, 2)
    assert (deleted.rows, deleted.passed) == (2, 1)
    assert (raw.rows, raw.passed, raw_own.passed, complete.passed) == (1, 1, 0, 0)


def _row(status: str, raw: str = "", raw_ok: bool = False, text: str = "", ok: bool = False) -> um.Row:
    return um.Row("m.py", "f", 2, "return 1", ["t::a"], 1, truth_passes=status != "truth fails",
                  deleted_passes=status == "unnoticed", raw=raw, raw_passes=raw_ok, raw_ms=100.0, text=text,
                  passes=ok, latency_ms=200.0)


def test_scores_silence_and_the_json_shape(tmp_path):
    rows = [_row("scored", "return 1", True, "return 1", True), _row("scored", "return 2", False, "", False),
            _row("scored", "x", False, "return 1", True), _row("unnoticed"), _row("truth fails")]
    truth, deleted, raw, _, complete = um.systems(rows)
    assert (truth.rows, truth.passed, deleted.rows, deleted.passed) == (5, 4, 5, 1)
    assert (raw.rows, raw.passed, raw.shown, raw.silence) == (3, 1, 3, 0.0)
    assert (complete.passed, complete.shown, complete.pass_when_shown) == (2, 2, 1.0)
    assert complete.silence == pytest.approx(1 / 3)  # silence is a fail for pass@1, not for pass when shown
    assert complete.pass_at_1 == pytest.approx(2 / 3)
    assert (complete.latency_p50_ms, raw.latency_p95_ms, truth.latency_p50_ms) == (200.0, 100.0, None)
    result = {"repo": "r", "model": "bundled", "tests": ["tests"], "seed": 0, "seconds": 1.0, "tests_found": 3, "tests_passed": 3,
              "functions": 5, "functions_reached": 5, "masked": 5, "dropped_unnoticed": 1, "dropped_truth_fails": 1,
              "scored": 3, "test_runs": 9, "settings": "psm", "systems": um.systems(rows), "sandbox": "isolated",
              "rows": rows}
    data = um.to_json(result)
    assert "rows" not in data and data["systems"][0]["silence"] is None and data["systems"][4]["shown"] == 2
    assert any(line.startswith("| complete | 3 | 66.7% (2) | 100.0% | 2 | 33.3% |") for line in um.lines(result))
    um.write_rows(tmp_path / "rows.jsonl", rows)
    written = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert [w["status"] for w in written][-2:] == ["dropped: the tests do not notice",
                                                   "dropped: the ground truth fails"]


def test_repo_is_a_directory_or_a_release(tmp_path):
    assert um.resolve(str(tmp_path)) == (tmp_path.resolve(), str(tmp_path))
    with pytest.raises(UsageError, match="neither a directory nor NAME==VERSION"):
        um.resolve(str(tmp_path / "missing"))
    with pytest.raises(UsageError, match="neither"):
        um.resolve("more-itertools>=10")
    assert Path(sandbox.PYTEST_RUNNER).is_file()


def test_with_recent_tests_completes_as_a_user_coming_from_the_test(tmp_path, monkeypatch):
    write_tree(tmp_path / "src", REPO)
    monkeypatch.setenv("CODEASST_COMPLETE__CONTEXT_TOKENS", "512")
    monkeypatch.setenv("CODEASST_COMPLETE__CONTEXT_SOURCES", '["recent"]')
    llm = ScriptedLLM()
    llm.enqueue("return x + x\n", "return x + x\n", "return x * 2\n")
    services = build_services(tmp_path, llm=llm, embedder=HashingEmbedder())
    result = um.evaluate(services, str(tmp_path / "src"), limit=None, recent_tests=True)
    *raw_prompts, prompt = llm.history
    assert all("<|file_sep|>" not in raw for raw in raw_prompts), "the baselines' prompts have no other files"
    head = prompt.split("<|file_sep|>pkg/calc.py\n")[0]
    assert head.startswith("<|repo_name|>") and "\n<|file_sep|>tests/test_calc.py\nfrom pkg.calc import" in head
    assert "def test_double():\n    assert double(2) == 4\n" in head, "the ring holds the test that runs the line"
    assert result["settings"].endswith("context 512 (recent), ring: the test")


def test_the_test_piece_is_the_named_method_of_the_named_class(tmp_path):
    write_tree(tmp_path, {"tests/test_x.py": "class ATests:\n    def test_basic(self):\n        a = 1\n\n\n"
                                             "class BTests:\n    def test_basic(self):\n        b = 2\n        b += 1\n"})
    work = um.Work(tmp_path, [], tmp_path / "ini", [], 1.0)
    assert um.test_piece(work, "tests/test_x.py::BTests::test_basic")[2] == 9
    assert um.test_piece(work, "tests/test_x.py::ATests::test_basic[case-1]")[2] == 3
    assert um.test_piece(work, "tests/test_x.py::CTests::test_basic") is None
    assert um.test_piece(work, "tests/test_y.py::test_basic") is None
