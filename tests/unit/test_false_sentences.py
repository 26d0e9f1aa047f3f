"""The splitting and counting of bench/false_sentences.py (issue 43): an answer's prose sentences by
part, outline lines and the "look next at" note left out; false sentences per answer, per system."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "false_sentences.py"


def module():
    spec = importlib.util.spec_from_file_location("false_sentences", BENCH)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


ANSWER = """In the code:
- `load` at a.py:3-9, `def load(path)`: Read a file.
  errors: `ValueError` ("empty")
       4      if not path:
              … 2 lines
- `save` at a.py:12-14, `def save(x)`: Write it.

How it flows (from the code graph):
1. `load` at a.py:3: Read a file.
2. calls (at line 5) `parse` at b.py:1: Parse it.
       3      return tree

It reads the file first [a.py:4]. Then it parses it.
(see b.py:1-3)

The excerpts may not answer this fully; look next at: a.py (load)"""


def test_an_answer_splits_into_its_parts_sentences_without_outline_lines_or_the_note():
    found = module().parts(ANSWER)
    assert [part for part, _ in found] == ["lead", "lead", "flow", "flow", "model", "model"]
    assert found[0][1] == '- `load` at a.py:3-9, `def load(path)`: Read a file. errors: `ValueError` ("empty")'
    assert found[5][1] == "Then it parses it. (see b.py:1-3)"  # a citation alone joins its sentence
    assert not any("return tree" in text or "look next" in text for _, text in found)


def test_false_sentences_are_counted_per_system_and_part(tmp_path):
    fs = module()
    rows = [{"row": {"repo": "r", "question": "q"}, "answer": ANSWER, "keyed": True}]
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_text(json.dumps(rows[0]) + "\n")
    fs.prepare([tmp_path / "a.jsonl", tmp_path / "b.jsonl"], ["a", "b"], tmp_path / "set")
    key = [json.loads(line) for line in (tmp_path / "set" / "key.jsonl").read_text().splitlines()]
    items = (tmp_path / "set" / "items.jsonl").read_text()
    assert '"system"' not in items and len(key) == 2 and key[0]["item"] != key[1]["item"]
    a = next(k["item"] for k in key if k["system"] == "a")
    labels = [{"item": k["item"], "sentence": n, "label": "false" if k["item"] == a and n == 5 else "true"}
              for k in key for n in range(1, 7)]
    (tmp_path / "set" / "labels.jsonl").write_text("".join(json.dumps(label) + "\n" for label in labels))
    report = fs.report(tmp_path / "set")
    assert report["a"]["all"]["false_per_answer"] == 1.0 and report["a"]["model"]["false_per_answer"] == 1.0
    assert report["a"]["lead"]["false_per_answer"] == 0.0 and report["b"]["all"]["false_per_answer"] == 0.0
