"""How the flow's weights move the lead's fact recall (issue 43), without the model: every variant
answers the keyed rows of a split with `ask.model = none`, so an answer is its lead and outline, and
the facts are scored on it as `codeasst eval ask` scores them (the same `ask`, the same scorer).

    CODEASST_MIRRORS=/work/.mirror python bench/flow_weights.py --split tune

Variants (issue 51, the outline): the share of a definition's outline the question's lines may take
first (0.3, 0.5, 0.7 as built: chosen on the tune splits); no question focus; no work line kept under a branch.
Variants (issue 43): as built; a utility not weighed down; the outline's words not counted; the chain's end
allowed to share a single word; no flow at all (ask.flow = false); more outline lines in all, or a
definition; a third definition in the lead. Rows without a key are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))  # its sibling, where python -P leaves the script's folder out
import shown_files

DATA = [ROOT / "tests/data/ask/facts.jsonl", ROOT / "tests/data/ask/sweqa.jsonl"]
WHERE = ROOT / "tests/data/ask/where_add.jsonl"  # --where: the "where do I add X?" rows (lead_in_site)
INDEXED_HOME = Path.home() / ".cache/codeasst-bench-indexed"  # --indexed: its checkouts and indexes
SWEQA = ROOT / "tests/data/ask/sweqa.jsonl"  # --shown: every SWE-QA row, for the files the answer shows


def variants():
    from codeasst.answer import flow

    def as_built():
        pass

    def no_utility():
        flow.UTILITY_FAN_IN = 10 ** 9

    def no_outline_words():
        flow.Weigher.body = lambda self, d: set()

    def one_word_ends():
        flow.MIN_STEP = 1

    def outline_lines(n):
        return lambda: os.environ.__setitem__("CODEASST_ASK__OUTLINE_LINES", str(n))

    def lead_of(n):
        def patch():
            from codeasst.answer import checking

            checking.MAX_LEAD = n
        return patch

    def per_definition(n):
        def patch():
            from codeasst.answer import ask

            ask.DEFINITION_LINES = n
        return patch

    def match_share(share):
        def patch():
            from codeasst.index import outline

            outline.MATCH_SHARE = share
        return patch

    def no_focus():
        from codeasst.index import outline

        outline.Focus.of = classmethod(lambda cls, question: cls(frozenset()))

    def no_work_lines():
        from codeasst.index import outline

        outline._work = lambda node, kinds: None

    def no_registrations():
        from codeasst.answer import registrations

        registrations.find = lambda *args: None

    def registrations_constant(name, value):
        def patch():
            from codeasst.answer import registrations

            setattr(registrations, name, value)
        return patch

    def no_siblings():
        from codeasst.answer import registrations

        registrations.SIBLINGS = False

    def ask_constant(name, value):
        def patch():
            from codeasst.answer import ask

            setattr(ask, name, value)
        return patch

    def checking_constant(name, value):
        def patch():
            from codeasst.answer import checking

            setattr(checking, name, value)
        return patch

    return {"as built": as_built, "no registrations": no_registrations, "no siblings": no_siblings,
            "sites by words x0": registrations_constant("WORDS_WEIGHT", 0.0),
            "no nearest lines": registrations_constant("NEAREST", False),
            "sites by words x1": registrations_constant("WORDS_WEIGHT", 1.0),
            "sites by words x4": registrations_constant("WORDS_WEIGHT", 4.0),
            "lead by rank": checking_constant("RANKED", False),
            "ranked name x5": checking_constant("NAME_WEIGHT", 5.0),
            "ranked rank x4": checking_constant("RANK_WEIGHT", 4.0),
            "ranked 3 hits": checking_constant("RANKED_HITS", 3),
            "ranked 10 hits": checking_constant("RANKED_HITS", 10),
            "ranked body x1": checking_constant("BODY_WEIGHT", 1.0),
            "ranked doc x3": checking_constant("DOC_WEIGHT", 3.0),
            "file x1": checking_constant("FILE_WEIGHT", 1.0), "file x2": checking_constant("FILE_WEIGHT", 2.0),
            "file x4": checking_constant("FILE_WEIGHT", 4.0), "file x0": checking_constant("FILE_WEIGHT", 0.0),
            "other file": checking_constant("OTHER_FILE", True),
            "no named definitions first": ask_constant("NAMED_FIRST", False),
            "flow not cited": ask_constant("FLOW_CITED", False),
            "other files from the context only": ask_constant("MORE_FROM_HITS", False),
            "named x0": checking_constant("NAMED_WEIGHT", 0.0), "named x3": checking_constant("NAMED_WEIGHT", 3.0),
            "one file's lead, no file signal": lambda: (checking_constant("OTHER_FILE", False)(),
                                                        checking_constant("FILE_WEIGHT", 0.0)(), lead_of(2)(),
                                                        ask_constant("NAMED_FIRST", False)(),
                                                        checking_constant("NAMED_WEIGHT", 0.0)()),
            "other file, no outline": lambda: (checking_constant("OTHER_FILE", True)(),
                                               checking_constant("OTHER_OUTLINED", False)()),
            "other file, no outline, 3 in the lead": lambda: (checking_constant("OTHER_FILE", True)(),
                                                              checking_constant("OTHER_OUTLINED", False)(),
                                                              lead_of(3)()),
            "other file, 16 lines a definition": lambda: (checking_constant("OTHER_FILE", True)(), per_definition(16)()),
            "other file, 12 lines a definition": lambda: (checking_constant("OTHER_FILE", True)(), per_definition(12)()),
            "no inner definition": checking_constant("INNER_WORDS", 99), "match share 0.3": match_share(0.3), "match share 0.7": match_share(0.7),
            "no question focus": no_focus, "no work lines": no_work_lines, "utility not weighed down": no_utility,
            "outline words not counted": no_outline_words, "a one-word end": one_word_ends,
            "outline 45 lines": outline_lines(45), "outline 60 lines": outline_lines(60),
            "3 definitions in the lead": lead_of(3), "12 lines a definition": per_definition(12),
            "20 lines a definition": per_definition(20), "24 lines a definition": per_definition(24),
            "30 lines a definition": per_definition(30),
            "20 lines a definition, 45 in all": lambda: (per_definition(20)(), outline_lines(45)())}


def keyed(split: str, folder: Path, where: bool = False, shown: bool = False) -> list[Path]:
    """The keyed rows of `split` from each data file (`where`: the "where do I add X?" rows; `shown`: every
    SWE-QA row), in a file of the same name under `folder`."""
    from codeasst.evals.facts import has_key
    from codeasst.evals.rows import load_rows

    out = []
    for path in [WHERE] if where else [SWEQA] if shown else DATA:
        rows = [r for r in load_rows(path) if (where or shown or has_key(r)) and r.get("split", "test") == split]
        target = folder / path.name
        target.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        out.append(target)
    return out


def first_phase(files: list[Path]) -> None:
    """Each repository of the rows indexed as `codeasst index` returns: every chunk with the static model's
    vector (MiniLM's left waiting, as its background process would have them)."""
    from codeasst.evals.repos import repo_dir
    from codeasst.evals.rows import load_rows
    from codeasst.services import build_services

    for spec in dict.fromkeys(r["repo"] for path in files for r in load_rows(path)):
        build_services(repo_dir(spec, ROOT), {}).indexer().run(final=False)


def run(name: str, split: str, files: list[Path]) -> dict:
    """One variant, in a process of its own (a variant patches module constants)."""
    from codeasst.evals import ask as eval_ask

    if name == "no flow":
        os.environ["CODEASST_ASK__FLOW"] = "false"
    else:
        variants()[name]()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.jsonl"
        report = eval_ask.evaluate(files, split=split, systems=["checked"], out=out)
        shown = shown_files.report(out) if files[0].name == SWEQA.name and len(files) == 1 else {}
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]
        missed = [r["row"].get("question") for r in rows if r.get("sites") and not r.get("lead_in_site")]
    block = report["systems"]["checked"]
    return {"variant": name, "keyed": block["keyed"], "fact_recall": block["fact_recall"],
            "correct": block["correct"], "wrong_per_answer": block["wrong_per_answer"],
            "where_rows": block["where_rows"], "lead_in_site": block["lead_in_site"],
            **{k: v for k, v in shown.items() if k != "file"}, **({"missed": missed} if block["where_rows"] else {})}


def main() -> int:
    from codeasst.evals.rows import SPLITS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="tune", choices=SPLITS)
    parser.add_argument("--variant", help="run one variant here (used by the driver)")
    parser.add_argument("--files", nargs="*", type=Path)
    parser.add_argument("--only", nargs="*", help="these variants only")
    parser.add_argument("--where", action="store_true", help="the 'where do I add X?' rows instead")
    parser.add_argument("--shown", action="store_true",
                        help="every SWE-QA row instead, with the files the answer shows (bench/shown_files.py)")
    parser.add_argument("--indexed", action="store_true",
                        help="first index each repository as `codeasst index` leaves it: every chunk with the first "
                             "phase's (static) vectors, in a CODEASST_HOME of its own (INDEXED_HOME), so the other "
                             "runs' indexes stay as `ask` leaves a repository never indexed (words first where more "
                             "chunks wait than index.search_embed_limit)")
    args = parser.parse_args()
    os.environ["CODEASST_ASK__MODEL"] = "none"
    if args.indexed:  # the variants' processes inherit it
        os.environ["CODEASST_HOME"] = str(INDEXED_HOME)
    if args.variant:
        print(json.dumps(run(args.variant, args.split, args.files)))
        return 0
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        files = keyed(args.split, Path(tmp), args.where, args.shown)  # no self@COMMIT rows: they resolve from any folder
        if args.indexed:
            first_phase(files)
        for name in args.only or [*variants(), "no flow"]:
            done = subprocess.run([sys.executable, __file__, "--split", args.split, "--variant", name,
                                   "--files", *map(str, files)], capture_output=True, text=True, check=False)
            print(done.stdout.strip() or f'{{"variant": "{name}", "error": {json.dumps(done.stderr[-400:])}}}',
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
