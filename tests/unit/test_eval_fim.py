"""`eval fim` scores what `complete` shows: the same function, gates included, generation bounded by tokens,
and both baselines from the same run. The model is scripted; the programs really run."""

from __future__ import annotations

import json

from codeasst.backends.base import Token
from codeasst.backends.fake import HashingEmbedder, ScriptedLLM
from codeasst.evals import fim
from codeasst.services import build_services
from codeasst.tasks.complete import complete_at

TESTS = [{"input": "3\n", "output": ["6"]}]


def row(task_id: str, prefix: str, suffix: str, truth: str) -> fim.Row:
    return fim.Row(task_id, "block", prefix, suffix, truth, TESTS)


class Unsure(ScriptedLLM):
    """Sure of its baselines' lines, unsure (mean log-probability -2) of the product's."""

    def stream(self, prompt, params):
        for token in super().stream(prompt, params):
            yield Token(token.text, logprob=-2.0 if params.logprobs is not None else None)


def test_the_eval_scores_the_products_answer_gates_and_all(tmp_path):
    rows = [
        # the pre-request gate: code right of the cursor, so `complete` asks nothing and shows nothing
        row("right-of-cursor", "n = int(input())\nprint(n + ", " + 0 * 1)\n", "n"),
        # the model is asked, and the confidence gate silences its (right) answer
        row("unsure", "n = int(input())\n", "\n", "print(n * 2)"),
    ]
    llm = Unsure()
    # raw with the product's suffix, raw with its own, per row; the gated row asks the model only for those
    llm.enqueue("x\n", "n\n", "print(n * 2)\n", "print(n * 2)\n", "print(n * 2)\n")
    services = build_services(tmp_path, llm=llm, embedder=HashingEmbedder())
    options = fim.eval_options(services, fim.CompleteOptions(min_mean_logprob=-1.0, time_cap_ms=1500))
    assert options.time_cap_ms == 0 and options.suffix_tokens == 32  # bounded by tokens; the budget fixed
    outcomes = fim.generate_all(services, rows, options)
    assert not llm.replies and len(llm.history) == 5
    gated, unsure = outcomes
    assert (gated.product.text, gated.product.reason) == ("", "there is code right of the cursor")
    assert unsure.product.text == "" and "cost more than it gives" in unsure.product.reason
    assert unsure.product.candidate == "print(n * 2)"
    # what the eval scored is what `codeasst complete` answers at that position
    llm.enqueue("print(n * 2)\n")
    same = complete_at(services, rows[1].prefix + rows[1].suffix, 2, 1, fim.PATH, options)
    assert (same.text, same.reason, same.candidate) == (unsure.product.text, unsure.product.reason,
                                                        unsure.product.candidate)

    result = fim.report(rows, outcomes, options, "all", 1.0, "scripted")
    own, product = result["systems"][1], result["systems"][2]
    assert (product.passed, product.shown, product.happiness) == (0, 0, 0.0)  # silence: a fail that costs nothing
    assert (own.passed, own.shown) == (2, 2)
    no_gate = result["sweep"][0]  # the lowest threshold
    assert (no_gate.passed, no_gate.shown) == (1, 1)  # the pre-request gate holds whatever the threshold
    assert no_gate.happiness == len("print(n * 2)") - 3 - 0.05 * len("print(n * 2)")
    assert result["silenced"] == {"there is code right of the cursor": 1, "the gate expects it to cost more than it gives": 1}
    fim.write_rows(tmp_path / "rows.jsonl", rows, outcomes)
    written = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert written[1]["candidate_passes"] and not written[1]["product_passes"]


def test_rows_kinds_and_the_cursor_at_column_one(tmp_path):
    data = tmp_path / "rows.jsonl"
    rows = [{"task_id": "a", "kind": "block", "prefix": "for i in range(2):\n    ", "suffix": "\nprint(i)\n",
             "ground_truth": "i += 1", "unit_tests": TESTS},
            {"task_id": "b", "kind": "block", "prefix": "x = 1\n", "suffix": "\n", "ground_truth": "y = 1\nz = 2",
             "unit_tests": TESTS},
            {"task_id": "c", "kind": "control", "prefix": "if ", "suffix": ":\n    pass\n", "ground_truth": "x",
             "unit_tests": TESTS}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [r.task_id for r in fim.load(data, "all", None, "single-line")] == ["a"]
    assert sorted(r.task_id for r in fim.load(data, "all", None, "block")) == ["a", "b"]
    moved = fim.load(data, "all", None, "single-line", "line-start")[0]
    assert (moved.prefix, moved.ground_truth) == ("for i in range(2):\n", "    i += 1")
    assert fim.load(data, "all", None, "control", "line-start")[0].prefix == "if "  # mid-line: as it was
