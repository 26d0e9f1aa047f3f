"""The counting of bench/mcp_reach.py (issue 44): where a path is reached, rg's windows, whole files' cost."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "mcp_reach.py"


@pytest.fixture(scope="module")
def reach():
    spec = importlib.util.spec_from_file_location("mcp_reach", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("text", "at"), [
    ("pkg/a.py:3-9  f  (function)", len("pkg/a.py")),
    ("note: x\npkg/b.py:1-2\npkg/a.py:3-9", len("note: x\npkg/b.py:1-2\npkg/a.py")),
    ("see pkg/a.py.", len("see pkg/a.py")),
    ("xpkg/a.py:1-2", None),  # inside a longer name
    ("src/pkg/a.py:1-2", None),  # the tail of another path
    ("pkg/a.pyc", None),
    ("pkg/a.py/b", None),
])
def test_where_a_path_is_reached(reach, text, at):
    assert reach.reached_in(text, ["pkg/a.py"]) == at


def test_the_first_of_several_expected_paths_counts(reach):
    assert reach.reached_in("c.py\nb.py\na.py", ["a.py", "b.py"]) == len("c.py\nb.py")


def test_characters_to_reach_add_up_over_pieces_and_stop_there(reach):
    read = []

    def pieces():
        for piece in ("12345", "ab pkg/a.py", "never read"):
            read.append(piece)
            yield piece

    assert reach.chars_to_reach(pieces(), ["pkg/a.py"]) == 5 + len("ab pkg/a.py")
    assert read == ["12345", "ab pkg/a.py"]
    assert reach.chars_to_reach(iter(["x", "y"]), ["pkg/a.py"]) is None


def test_rg_windows_are_clipped_and_merged(reach):
    # 10 lines before to 10 after each match; overlapping or touching windows are one.
    assert reach.windows([50], 100) == [(40, 60)]
    assert reach.windows([3, 97], 100) == [(1, 13), (87, 100)]
    assert reach.windows([30, 45, 20], 100) == [(10, 55)]  # 10-30, 20-40 and 35-55 overlap
    assert reach.windows([20, 41], 100) == [(10, 51)]  # 10-30 and 31-51 touch
    assert reach.windows([20, 42], 100) == [(10, 30), (32, 52)]
    assert reach.windows([5, 5], 8) == [(1, 8)]


def test_a_window_is_read_under_its_header(reach):
    lines = [f"line {n}" for n in range(1, 31)]
    first, second = reach.window_pieces("m.py", lines, [2, 29])
    assert first == "m.py:1-12\n" + "".join(f"line {n}\n" for n in range(1, 13))
    assert second.startswith("m.py:19-30\nline 19\n")
    assert reach.file_lines(b"a\r\nb\n\nc") == ["a\r", "b", "", "c"]  # lines as rg numbers them


def test_whole_files_cost_everything_before_the_expected_files_header(reach):
    files = {"b.py": "x = 1\n" * 10, "a.py": "y\n" * 1000, "c.py": "z\n"}
    order = ["b.py", "a.py", "c.py"]
    cost = reach.chars_to_reach(reach.file_pieces(order, files.__getitem__), ["a.py"])
    assert cost == len("b.py\n") + 60 + len("a.py")
    assert reach.chars_to_reach(reach.file_pieces(order, files.__getitem__), ["b.py"]) == len("b.py")
    assert reach.chars_to_reach(reach.file_pieces(["b.py", "c.py"], files.__getitem__), ["a.py"]) is None


def test_question_words_drop_short_words_and_stopwords_once(reach):
    words = reach.question_words("Where does Parser.parse_args handle --x? The parser and THE x2 y")
    assert words == ["Parser", "parse_args", "handle"]


def test_the_summary_counts_within_the_limit_and_the_target(reach):
    def row(ours, rg, bm25):
        return {"set": "s", "chars": {"codeasst": ours, "rg": rg, "bm25-files": bm25}}

    rows = [row(100, 9000, 50), row(8000, None, 20000), row(None, 10, None), row(300, 20000, 30000)]
    figures = reach.summary(rows)["s"]
    assert figures["ways"]["codeasst"] == {"rows": 4, "within": 3, "share": 0.75, "reached": 3, "median": 300}
    assert figures["ways"]["rg"]["within"] == 1
    assert figures["ways"]["bm25-files"]["within"] == 1
    assert figures["target_met"]
    assert not reach.summary([row(100, 200, None), row(300, 400, None)])["s"]["target_met"]  # 2 < 1.5 x 2
