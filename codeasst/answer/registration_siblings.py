"""Where the existing Xs are listed, found from the Xs themselves rather than from how they are listed
(for answer/registrations.py): a repository's Xs are the definitions named for X (`WaitressServer`,
`IndexPreprocessor` for "a server backend", "a preprocessor") or defined in a folder named for X
(`shells/bash.py`'s `Bash`, `cmd/clean.rs`); the place that names most of them together, outside their own
definitions, is where they are registered: a table, an import list, a dispatch, whatever its form
(`shells = {'bash': Bash, ...}`, `server_names = {...}`, `pub use` re-exports, a `match` on the name).

Where no form and no such place is found, the lines that name the X in the code retrieval ranks first for
the question (`nearest_lines`): a `switch` on a token's name, options read one by one, a list a function
builds; forms particular to one library that no detector of forms knows.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from codeasst.answer.registration_lines import file_rows
from codeasst.index.roles import role_of
from codeasst.index.words import STEM, stems
from codeasst.retrieve import lexical

# A definition's name, in the languages the index reads.
DEFINES = re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:abstract\s+)?"
                     r"(?:class|def|func|fn|struct|enum|type|function|interface|trait|module)\s+(?:\([^)]*\)\s*)?"
                     r"(?P<name>[A-Za-z_]\w*)")
MIN_NAMES = 3  # Xs the repository must have, and a place must name, to be a listing of them
MAX_NAMES = 80
GAP = 3  # lines between two mentions of one listing
OWN_BODY = 40  # lines after a definition where its name is its own business
CODE_ROLES = ("implementation", "config", "example")


def sibling_sites(root: Path, files: list[str], words: set[str]) -> list[tuple[str, list[tuple[int, str]], int]]:
    """The places that name the most of the repository's Xs together, best first, each (path, its lines,
    how many Xs it names); `words`: the stems of X ("serv", "back"). None where the repository has fewer
    than MIN_NAMES of them."""
    names = _instances(root, files, words)
    if len(names) < MIN_NAMES:
        return []
    code = [f for f in files if role_of(f) in CODE_ROLES]
    pattern = r"(?-u)\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b"
    mentions: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for path, number, text in lexical.lines_matching(root, code, pattern):
        if not DEFINES.match(text):
            mentions[path].append((number, text))
    sites = []
    for path, found in mentions.items():
        for block in _blocks(sorted(found)):
            # a name in its own definition's body (`impl Preprocessor for LinkPreprocessor`) lists nothing
            named = {n for number, text in block for n in re.findall(r"[A-Za-z_]\w*", text) if n in names
                     and not any(p == path and 0 <= number - line <= OWN_BODY for p, line in names[n])}
            if len(named) >= MIN_NAMES:
                sites.append((path, block, len(named)))
    return sorted(sites, key=lambda s: (-s[2], s[0], s[1][0][0]))


def _instances(root: Path, files: list[str], words: set[str]) -> dict[str, set[tuple[str, int]]]:
    """The names of the repository's Xs: definitions whose name holds a word of X besides others
    (`WaitressServer`, not `Server` itself), and those defined at the top of a file in a folder named for
    X (`shells/bash.py`: `Bash`), each with where it is defined."""
    code = [f for f in files if role_of(f) in CODE_ROLES]
    folders = [f for f in code if any(stems(part, frozenset()) & words for part in Path(f).parts[:-1])]
    keyword = r"(?-u)^\s*(?:export\s+|pub\S*\s+|default\s+|async\s+|abstract\s+)*(?:class|def|func|fn|struct|enum|type|" \
              r"function|interface|trait)\s"
    named = keyword + r"(?:\([^)]*\)\s*)?\w*(?i:" + "|".join(map(re.escape, sorted(words))) + ")"
    names = _defined(lexical.lines_matching(root, code, named) if words else [],
                     lambda parts: {p.lower()[:4] for p in parts if len(p) >= 3} & words and len(parts) > 1)
    if len(names) < MIN_NAMES:  # none named for X: the types at the top of the files of a folder named for it
        types = keyword.replace("class|def|func|fn|struct|enum|type|function|interface|trait", "class|struct|enum|type|interface|trait")
        names = _defined([f for f in lexical.lines_matching(root, folders, types) if f[2][:1].strip()], lambda parts: True)
    return names if len(names) <= MAX_NAMES else {}


def _defined(found: list[tuple[str, int, str]], keep) -> dict[str, set[tuple[str, int]]]:
    """The names the definition lines `found` define where `keep(their parts)`, each with where."""
    names: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for path, number, text in found:
        match = DEFINES.match(text)
        if match and not match["name"].startswith("_") and match["name"].lower() not in ("main", "init", "new") \
                and keep(STEM.findall(match["name"])):
            names[match["name"]].add((path, number))
    return names


def _blocks(found: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Mentions no more than GAP lines apart, as blocks."""
    blocks: list[list[tuple[int, str]]] = []
    for number, text in found:
        if blocks and number - blocks[-1][-1][0] <= GAP:
            blocks[-1].append((number, text))
        else:
            blocks.append([(number, text)])
    return blocks


# Of retrieval's best code hits for the question, those whose lines naming the X stand for its site when no
# registration names one: chosen on where_add.jsonl's tune split and its spent fresh4 and fresh5 splits (1, 2
# and 3 hits: 79 / 79 / 79 of 91 on tune, 18 / 21 / 20 of 43 on fresh4 and fresh5; none: 12 of 43).
NEAREST_HITS = 2


def nearest_lines(root: Path, hits: list[tuple[str, int, int]], words: set[str]) -> tuple[str, list[tuple[int, str]]] | None:
    """The first of `hits` (path, first line, last line: retrieval's best code, best first) with lines
    that hold one of `words` (the X's stems), and those lines; None where none does."""
    for path, start, end in hits[:NEAREST_HITS]:
        rows = file_rows(root, path)
        found = [(n, rows[n - 1]) for n in range(max(start, 1), min(end, len(rows)) + 1) if stems(rows[n - 1]) & words]
        if found:
            return path, found
    return None

