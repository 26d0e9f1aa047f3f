"""Turn the SWE-QA development questions into rows for `codeasst eval ask`, reproducibly.

    python tests/data/ask/sweqa_files.py > tests/data/ask/sweqa.jsonl
    python tests/data/ask/sweqa_files.py --selected     # the ids that get hand-written keys, by split
    python tests/data/ask/sweqa_files.py --check        # exit 1 if sweqa.jsonl is not what this writes

Input: /work/shared/data/sweqa_dev.jsonl (or `--input PATH`): rows with id, github, commit,
question, reference. Repositories are read from the bare git mirrors under CODEASST_MIRRORS
(default: `mirrors` in codeasst's data folder, codeasst.evals.repos.mirrors_dir; `OWNER+NAME/repo`), at the row's commit; nothing is checked out or run.

For every row, `expected` is the files the reference is about:
- every path the reference names that exists at that commit (with or without a `:LINE`,
  `:A-B` or `#LN` suffix; a path with a directory that is not at the root but is the tail of
  exactly one file's path counts as that file), in the order the reference names them;
- then, sorted, the .py files that define (`def NAME` / `class NAME`, any indentation) a code
  name the reference writes in backticks, for names of 4 or more characters defined in at most
  3 files (a dotted name counts for each of its parts);
- then, for a keyed row, the files of its `definitions` that are not already there.

The split, fixed before any answer was read: within each repository, the rows in the order of
sha256("codeasst-issue-35\\n" + question), alternately tune and test (the first is tune). The
first KEYED (24) rows of each repository in that same order get keys (12 tune, 12 test): facts,
wrong, definitions, why and answerable merged from sweqa_keys.jsonl by id.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

from codeasst.evals.repos import mirrors_dir

HERE = Path(__file__).resolve().parent
INPUT = Path("/work/shared/data/sweqa_dev.jsonl")
KEYS = HERE / "sweqa_keys.jsonl"
OUTPUT = HERE / "sweqa.jsonl"
SEED = "codeasst-issue-35"
KEYED = 24
MIN_NAME = 4
MAX_DEFINING_FILES = 3
KEY_FIELDS = ("definitions", "answerable", "facts", "wrong", "why")

PATH = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.(?:py|pyx|pxd|c|h|cfg|toml|txt|rst|ini|json|yaml|yml|in))"
                  r"(?=(?::\d+(?:-\d+)?|#L\d+(?:-L?\d+)?)?(?![\w/-]))")
BACKTICKED = re.compile(r"`([^`\n]+)`")
CODE_NAME = re.compile(r"^@?([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)(?:\(.*\))?$")
DEFINITION = r"^\s*(async\s+def|def|class)\s+[A-Za-z_]\w*"
DEFINED_NAME = re.compile(r"^(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")


def mirror(github: str) -> str:
    owner, name = github.split("/")
    return str(mirrors_dir() / f"{owner}+{name}" / "repo")


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True,
                          text=True, encoding="utf-8", errors="replace").stdout


class Tree:
    """One repository at one commit: its files, and which .py files define each name."""

    def __init__(self, github: str, commit: str) -> None:
        self.git_dir = mirror(github)
        self.commit = git(self.git_dir, "rev-parse", "--verify", f"{commit}^{{commit}}").strip()
        self.files = git(self.git_dir, "ls-tree", "-r", "--name-only", self.commit).splitlines()
        self.file_set = set(self.files)
        self.defined: dict[str, set[str]] = {}
        out = git(self.git_dir, "grep", "-n", "-I", "-E", DEFINITION, self.commit, "--", "*.py")
        for line in out.splitlines():
            _, path, _, text = line.split(":", 3)
            m = DEFINED_NAME.match(text.strip())
            if m:
                self.defined.setdefault(m.group(1), set()).add(path)

    def resolve(self, path: str) -> str | None:
        path = path.removeprefix("./")
        if path in self.file_set:
            return path
        if "/" in path:
            tails = [f for f in self.files if f.endswith("/" + path)]
            if len(tails) == 1:
                return tails[0]
        return None


def expected_files(reference: str, tree: Tree) -> list[str]:
    named: list[str] = []
    for m in PATH.finditer(reference):
        path = tree.resolve(m.group(1))
        if path and path not in named:
            named.append(path)
    defining: set[str] = set()
    for span in BACKTICKED.findall(reference):
        m = CODE_NAME.match(span.strip())
        if not m:
            continue
        for part in m.group(1).split("."):
            files = tree.defined.get(part, set())
            if len(part) >= MIN_NAME and 0 < len(files) <= MAX_DEFINING_FILES:
                defining |= files
    return named + sorted(defining - set(named))


def order_key(row: dict) -> str:
    return hashlib.sha256(f"{SEED}\n{row['question']}".encode()).hexdigest()


def assign(rows: list[dict]) -> dict[str, tuple[str, bool]]:
    """id -> (split, keyed), by the rule in the module docstring."""
    by_repo: dict[str, list[dict]] = {}
    for row in rows:
        by_repo.setdefault(row["github"], []).append(row)
    out = {}
    for repo_rows in by_repo.values():
        for i, row in enumerate(sorted(repo_rows, key=order_key)):
            out[row["id"]] = ("tune" if i % 2 == 0 else "test", i < KEYED)
    return out


def build(input_path: Path) -> tuple[list[dict], list[str]]:
    rows = [json.loads(line) for line in input_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    keys = {}
    if KEYS.exists():
        keys = {k["id"]: k for k in (json.loads(line) for line in KEYS.read_text(encoding="utf-8").splitlines()
                                      if line.strip())}
    plan = assign(rows)
    trees: dict[tuple[str, str], Tree] = {}
    out, notes = [], []
    for row in rows:
        tree = trees.setdefault((row["github"], row["commit"]), Tree(row["github"], row["commit"]))
        split, keyed = plan[row["id"]]
        new = {"id": row["id"], "repo": f"github:{row['github']}@{tree.commit}", "question": row["question"],
               "expected": expected_files(row["reference"], tree)}
        key = keys.get(row["id"])
        if key and not keyed:
            notes.append(f"{row['id']}: has a key but is not selected; key ignored")
            key = None
        if keyed and not key:
            notes.append(f"{row['id']}: selected for a key but sweqa_keys.jsonl has none")
        if key:
            for path in key.get("definitions", {}):
                if path not in tree.file_set:
                    raise SystemExit(f"{row['id']}: definitions name {path}, not a file at {tree.commit}")
                if path not in new["expected"]:
                    new["expected"].append(path)
            new.update({field: key[field] for field in KEY_FIELDS if field in key})
        new["lang"] = "en"
        new["split"] = split
        out.append(new)
    for row_id in keys.keys() - plan.keys():
        notes.append(f"{row_id}: key for an id not in the input")
    return out, notes


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main(argv: list[str]) -> int:
    input_path = Path(argv[argv.index("--input") + 1]) if "--input" in argv else INPUT
    if "--selected" in argv:
        rows = [json.loads(line) for line in input_path.read_text(encoding="utf-8").splitlines() if line.strip()]
        for row_id, (split, keyed) in sorted(assign(rows).items(), key=lambda kv: (kv[0].split("-")[0], kv[1])):
            if keyed:
                print(row_id, split)
        return 0
    rows, notes = build(input_path)
    for note in notes:
        print(note, file=sys.stderr)
    text = render(rows)
    if "--check" in argv:
        if OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT}: differs from what sweqa_files.py writes; regenerate it", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
