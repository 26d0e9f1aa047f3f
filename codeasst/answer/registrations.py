""""Where do I add X?" answered as a maintainer answers it in review: here is where the existing Xs
are registered, here is one of them to copy, and here is what else names it (its tests, its docs).

A registration is a line that hands a handler to whatever dispatches it (answer/registration_lines.py
reads each line's form): a decorator (`@app.get("/items")`, `@cli.command()`), a call on a registrar
(`app.add_url_rule(...)`, `cli.add_command(...)`, `Route::get(...)`, `rootCmd.AddCommand(...)`), Ruby's
route and filter DSL, a table (`Route("/x", handler)`, `COMMANDS = {`, Go's maps, an `enum` of
subcommands, `bootstrap/providers.php`'s returned list, a settings class), or an entry point in
`pyproject.toml`, `setup.py` or `setup.cfg`, read as text, never imported or run. And, whatever the form,
the place that names most of the existing Xs together (answer/registration_siblings.py).

The Xs a question asks about (endpoints, commands, plugins, middleware, settings, tools) decide which
registrations count; the file that holds most of them, in the code rather than its tests or
examples, leads; where the question names some ("like Screenshot or Copy"), the sites that list them
lead, and where it names a folder or file ("the frontend's sidebar"), those in it. Found by ripgrep
over the indexed files; every line shown is a line of a file.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codeasst.answer.registration_lines import (
    DATA_FILES,
    ENTRY_FILES,
    PATTERN,
    alias_of,
    classify,
    entry_group,
    file_rows,
    is_hanging,
    is_keyed,
    is_prose,
    is_table,
    shown_verb,
    weight,
)
from codeasst.answer.registration_question import KINDS, examples, kind_of, parse, word_stems
from codeasst.answer.registration_siblings import nearest_lines, sibling_sites
from codeasst.index.roles import role_of
from codeasst.index.words import STEM, stems
from codeasst.retrieve import lexical

# The words a table of them is named by (COMMANDS, urlpatterns, ROUTES, PLUGINS).
TABLE_WORDS = {"entry point": set(), "group": {"rout", "blue"}, "endpoint": {"rout", "url", "endp", "view"},
               "command": {"comm", "cmd"}, "setting": {"sett", "conf", "envi"}, "middleware": {"midd"}, "option": {"opti", "flag"}, "tool": {"tool"},
               "plugin": {"plug", "back", "exte"}}
_KEY = re.compile(r"[\"'`]([^\"'`\n]{1,60})[\"'`]")
SHOWN = 4  # registrations shown of a site; the rest are counted
NAMED_VERB = 10  # a registration whose verb names the thing (RegisterMethod for a method) counts this many
# What a table or class named with a setting's word is not: an error's class (`ConfigFileError`).
NOT_SETTINGS = {"erro", "exce", "warn"}
# The words of a question that name no file nor folder ("a new page": not new_account.tsx).
COMMON = {"where", "what", "which", "how", "the", "and", "for", "with", "into", "that", "this", "new", "add", "one",
          "should", "does", "can", "register", "define", "create", "put", "another", "some", "our", "your"}
# The question's own verb, where it says how ("how do I mount a resource"), names the registration too.
SAID_VERBS = re.compile(r"mount|plug|hook|wire|include|attach|use|bind", re.IGNORECASE)
MAX_SITES = 2
WORDS_WEIGHT, WORDS_DEPTH = 1.0, 5  # a site in the first of BM25's files for the question weighs 1 + 1 / (place + 1)
SIBLINGS = True  # the places that name most of the existing Xs together are sites too (registration_siblings.py)
NEAREST = True  # none found: the lines naming the Xs in retrieval's best code (registration_siblings.nearest_lines)
READ_LINES = 60  # of a site, what the model reads
PATTERN_LINES = 8
ALSO_FILES = 3
# A file of this role holds registrations a user copies less: tests register routes of their own.
ROLE_WEIGHT = {"implementation": 1.0, "config": 1.0, "example": 0.5, "benchmark": 0.3, "test": 0.2, "fixture": 0.1,
               "docs": 0.1, "generated": 0.1, "vendored": 0.1}


@dataclass
class Site:
    """The registrations of one file: (line, text) each, and how they register."""

    path: str
    lines: list[tuple[int, str]]
    verbs: list[str]
    score: float = 0.0
    count: int = 0  # the things registered: a loop's line registers each of its items
    first: tuple[int, int] = (0, 0)  # the lines of the first registration (a loop's: from its `for`)

    @property
    def start(self) -> int:
        return self.lines[0][0]

    @property
    def end(self) -> int:
        return self.lines[-1][0]


@dataclass
class Registrations:
    """Where the existing Xs are registered (best first), one to copy, and the tests and docs that name it;
    no site: none was found."""

    thing: str
    sites: list[Site] = field(default_factory=list)
    pattern: tuple[str, list[tuple[int, str]]] | None = None  # (path, lines)
    also: list[str] = field(default_factory=list)
    nearest: bool = False  # no registration found: the site is the lines naming them in retrieval's best code

    def render(self) -> str:
        none = (f"No place in this repository registers {_plural(self.thing)}: no decorator, registration "
                "call, route table or entry point names one")
        if not self.sites:
            return none + ".\n\n"
        out = [f"{none}. Where the code retrieval ranks first for the question names them:" if self.nearest
               else f"Where the existing {_plural(self.thing)} are registered:"]
        for site in self.sites:
            if self.nearest:
                out.append(f"- {site.path}:{site.start}-{site.end}")
                out += [f"  {n:>6}  {text.rstrip()}" for n, text in site.lines[:SHOWN]]
                out += [f"  {'':>6}  … and {len(site.lines) - SHOWN} more lines"] if len(site.lines) > SHOWN else []
                continue
            how = ", ".join(f"`{v}`" for v in dict.fromkeys(site.verbs))
            count = site.count or len(site.lines)
            out.append(f"- {site.path}:{site.start}-{site.end}: {count} registration{'s' if count > 1 else ''} ({how})")
            out += [f"  {n:>6}  {text.rstrip()}" for n, text in site.lines[:SHOWN]]
            if len(site.lines) > SHOWN:
                out.append(f"  {'':>6}  … and {len(site.lines) - SHOWN} more lines")
        if self.pattern is not None:
            path, lines = self.pattern
            out.append(f"- One to copy, {path}:{lines[0][0]}-{lines[-1][0]}:")
            out += [f"  {n:>6}  {text.rstrip()}" for n, text in lines]
        if self.also:
            out.append("- Named also in: " + ", ".join(self.also))
        return "\n".join(out) + "\n\n"

    def registered(self) -> list[tuple[str, int, int]]:
        """The places, each cut to its first READ_LINES lines: what the model reads first."""
        return [(path, start, min(end, start + READ_LINES)) for path, start, end in self.places()]

    def places(self) -> list[tuple[str, int, int]]:
        """The lead's items as (path, first line, last line), in the order shown."""
        out = [(s.path, s.start, s.end) for s in self.sites]
        if self.pattern is not None:
            out.append((self.pattern[0], self.pattern[1][0][0], self.pattern[1][-1][0]))
        return out

    def to_json(self) -> dict:
        return {"thing": self.thing, "places": [{"path": p, "start_line": s, "end_line": e} for p, s, e in self.places()],
                "found": len(self.sites)}


def _plural(thing: str) -> str:
    return thing if thing.endswith("s") else thing + "s"


def find(root: Path, files: list[str], question: str, by_words: Sequence[str] = (),
         hits: Sequence[tuple[str, int, int]] = ()) -> Registrations | None:
    """Where the Xs the question asks to add are registered; None where it asks no such thing. `by_words`:
    the files BM25 over whole files ranks first for the question, whose sites weigh more; `hits`: retrieval's
    best code for it (path, first line, last line), best first, where no registration is found."""
    parsed = parse(question)
    if parsed is None:
        return None
    thing = parsed.thing
    kind = kind_of(thing, question)
    own = _packages(files) | {w.lower() for w in re.findall(r"[A-Za-z]\w+", root.resolve().name)}
    verbs = KINDS[kind][1] if kind else set()
    if re.match(r"sub", thing.split()[-1], re.IGNORECASE):  # a subcommand is no console script
        verbs = verbs - {"entry point", "script"}
    wanted = word_stems(thing.split()[-1]) | (TABLE_WORDS[kind] if kind else set())  # a table named for them
    # "the list of server backends", "a validation tag": a table named for any of its words (server_names)
    table_words = set().union(*(word_stems(w) for w in thing.split() if w.lower() not in own)) \
        if parsed.verb == "list" or kind is None else set()
    if kind == "setting":  # a configuration file's option: not the command line's `@click.option`
        wanted -= KINDS["option"][0]
    named = {w.lower() for w in re.findall(r"[\w.-]{3,}", question)} - COMMON
    named |= {w[:-1] for w in named if w.endswith("s")}  # "the profiles endpoint": profile/
    # the project's own name and package (src/flake8/ for "a flake8 option") are everywhere, not places
    named -= own
    by_file: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    rows: dict[str, list[str]] = {}
    prose = re.search(r"\b(?:docs?|documentation|readme)\b", question, re.IGNORECASE)
    searched = files if prose else [f for f in files if not is_prose(f)]  # a README's samples register nothing
    for path, number, text, bound in _with_aliases(root, lexical.lines_matching(root, searched, PATTERN), rows):
        # a call whose arguments start on the next line: `router.get(\n  '/profiles/:username',`
        following = rows.setdefault(path, file_rows(root, path))[number:number + 1] if text.rstrip().endswith("(") else []
        verb = bound or classify(path, text, kind, "".join(following))
        group = _group(root, path, number, rows) if verb == "entry point" else ""
        if group is None:
            continue  # a module named outside any entry-point table: `build-backend = "hatchling.build"`
        if verb and (_asked_for(path, text, verb, kind, verbs, wanted | (table_words if is_table(text) else set()), named) or stems(group) & wanted):
            by_file[path].append((number, text, verb))
    last = word_stems(thing.split()[-1]) | (stems(parsed.verb) if SAID_VERBS.match(parsed.verb) else set())
    last -= KINDS["option"][0] if kind == "setting" else set()
    sites = [_site(root, path, found, named, verbs, last) for path, found in by_file.items()]
    sites = [s for s in sites if s.lines]  # a file whose only candidates were no tables (`x = (` and a string)
    sites += [site for f in searched if f.endswith(DATA_FILES) and Path(f).name not in ENTRY_FILES
              and not any(part.startswith(".") for part in Path(f).parts)  # .vscode/settings.json is the editor's
              and stems(Path(f).stem.removesuffix("s"), frozenset()) & word_stems(thing.split()[-1])
              for site in [_data_site(root, f)] if site]  # languages.json for "a new language"
    if SIBLINGS and kind != "entry point":  # where the existing Xs are named together, whatever the form
        sites += [Site(path, lines, ["lists them"], count * ROLE_WEIGHT.get(role_of(path), 0.5)
                       * (3 if _named(path, named) else 1), count, (lines[0][0], lines[0][0]))
                  for path, lines, count in sibling_sites(root, files, _thing_stems(thing, own))[:MAX_SITES]]
    # "like Screenshot or Copy": the sites that list the very ones the question names
    names = examples(question)
    listing = [s for s in sites if any(n in re.sub(r"\W|_", "", " ".join(t for _, t in s.lines)).lower() for n in names)]
    sites = listing or sites
    # Tests register routes and commands of their own: they are shown only where the question asks of tests.
    if not re.search(r"\btest", question, re.IGNORECASE):
        sites = [s for s in sites if role_of(s.path) not in ("test", "fixture")]
    # "In the versioning example", "the frontend's sidebar": the folders the question names, where they
    # register some; those that name most of them.
    folder = {parsed.part.lower()} if parsed.part else named
    # (an example may be a file: examples/pm, examples/string-util.js for "the string-util example")
    inside = {s.path: len(({p.lower() for p in Path(s.path).parts[:-1]}
                           | ({Path(s.path).stem.lower()} if parsed.part else set())) & folder) for s in sites}
    sites = [s for s in sites if inside[s.path] == max(inside.values(), default=0)]
    # a folder the question writes as a path ("(templates/app-ts)"): the sites under it, where some are
    under = [s for s in sites if any(s.path.startswith(p.rstrip("/") + "/") for p in _paths(question))]
    sites = under or sites
    place = {path: n for n, path in enumerate(by_words[:WORDS_DEPTH])}
    for site in sites:  # a file about the question's words ("twine upload --timeout": its settings module)
        site.score *= 1 + WORDS_WEIGHT / (place[site.path] + 1) if site.path in place else 1
    sites.sort(key=lambda s: (-s.score, s.path))
    sites = [s for s in sites if s.score >= sites[0].score / 3][:MAX_SITES] if sites else []
    found = Registrations(thing, sites)
    if not sites:  # none registers them: where retrieval's best code names them, if it does; nothing to copy
        return _nearest(root, hits, thing) or found
    found.pattern = _pattern(root, sites[0])
    found.also = _also(root, files, found.pattern, {s.path for s in sites})
    return found


def _nearest(root: Path, hits: Sequence[tuple[str, int, int]], thing: str) -> Registrations | None:
    """The lines that name the X in retrieval's best code, as the one site of what registers none."""
    near = nearest_lines(root, list(hits), word_stems(thing.split()[-1])) if NEAREST else None
    if near is None:
        return None
    path, lines = near
    return Registrations(thing, [Site(path, lines, ["names them"], 0.0, len(lines), (lines[0][0],) * 2)], nearest=True)


def _data_site(root: Path, path: str) -> Site | None:
    """A data file named for the Xs (`languages.json`) as a site: its table's first lines, and how many
    entries it holds (a JSON object's, or the one table it wraps; else its top-level keys)."""
    rows = file_rows(root, path)
    try:
        data = json.loads("\n".join(rows)) if path.endswith(".json") else None
    except ValueError:
        data = None
    if isinstance(data, dict) and len(data) == 1 and isinstance(next(iter(data.values())), (dict, list)):
        data = next(iter(data.values()))  # {"languages": {...}}
    count = len(data) if isinstance(data, (dict, list)) else sum(bool(re.match(r"[\w\"'\[.-]", r)) for r in rows)
    shown = [(n, r) for n, r in enumerate(rows, start=1) if r.strip() not in ("", "{", "[")][:2]
    if count < 2 or not shown:
        return None
    return Site(path, shown, ["lists them"], count * 0.5 * ROLE_WEIGHT.get(role_of(path), 0.5), count, (shown[0][0],) * 2)


def _thing_stems(thing: str, own: set[str]) -> set[str]:
    """The stems an X's own definitions are named with: its words' ("server backends": serv, back), not the
    project's own name's (`httpie`, in every name)."""
    words = [w for w in thing.split() if w.lower() not in own]
    return set().union(*(stems(w.removesuffix("s"), frozenset()) for w in words)) - {"new", "buil"}


def _with_aliases(root: Path, found, rows: dict[str, list[str]]):
    """The candidate lines (path, line, text, None: classify reads it), and after them, in a file that binds a
    registrar's method to a name (`opt = parser.add_argument`), that name's calls, with the method's verb."""
    aliased: dict[str, dict[str, str]] = defaultdict(dict)
    for path, number, text in found:
        bound = alias_of(text)
        if bound:
            aliased[path][bound[0]] = bound[1]
        else:
            yield path, number, text, None
    for path, names in aliased.items():
        call = re.compile(rf"^\s*(?:{'|'.join(map(re.escape, names))})\s*\(")
        for number, row in enumerate(rows.setdefault(path, file_rows(root, path)), start=1):
            found_call = call.match(row)
            if found_call:
                yield path, number, row, names[found_call.group(0).strip().rstrip("(").strip()]


def _paths(question: str) -> list[str]:
    """The folders a question writes as paths: `templates/app`, `src/routes/` (not `/api/v3`, a route)."""
    return [p for p in re.findall(r"(?<![\w/])[A-Za-z_][\w.-]*(?:/[\w.-]+)+/?", question) if "." not in p.rsplit("/", 1)[-1]]


def _group(root: Path, path: str, number: int, rows: dict[str, list[str]]) -> str | None:
    """An entry point's group (`mkdocs.themes`): "" where the file lists entry points without groups
    (package.json's `bin`), None where the line is under no entry-point table."""
    if Path(path).name not in ENTRY_FILES:
        return ""
    group = entry_group(rows.setdefault(path, file_rows(root, path)), number)
    return group if group is not None or Path(path).name == "package.json" else None


def _asked_for(path: str, text: str, verb: str, kind: str | None, verbs: set[str], wanted: set[str],
               named: set[str]) -> bool:
    """Whether a registration is of the X asked: its verb registers one, or names them (a table named for
    them); a thing of no kind ("a link") goes in a table of the file the question names too ("in the
    sidebar": AppSidebar.tsx's items). A test's table (`JOBS = {...}`) is its data, not a place."""
    if is_table(text) and role_of(path) in ("test", "fixture"):
        return False
    if kind == "setting" and (not (is_table(text) or is_keyed(text)) or _head(verb) & NOT_SETTINGS):
        return False  # declared in a table or a class; `@default_settings` uses them, `ConfigFileError` is none
    return verb in verbs and not is_table(text) or bool(stems(verb) & wanted) and not _other_kind(verb, kind) \
        or kind is None and is_table(text) and _named(path, named)


def _head(name: str) -> set[str]:
    """The stems of what a name names, its last word (`SettingsModel`, `MkDocsConfig`: settings, config)."""
    parts = [p for p in STEM.findall(name) if p.lower() not in ("model", "base", "schema", "class")]
    return stems(parts[-1], frozenset()) if parts else set()


def _other_kind(verb: str, kind: str | None) -> bool:
    """Whether a name that shares a word with the X is of another kind by its last word, the thing it
    names (`load_extension_option` is an option, not an extension)."""
    return any(_head(verb) & words for other, (words, _) in KINDS.items() if other != kind)


def _named(path: str, named: set[str]) -> bool:
    """Whether the question names the file: its name, or a word of it (`AppSidebar.tsx`: "the sidebar")."""
    stem = Path(path).stem
    return bool({stem.lower(), *(w.lower() for w in STEM.findall(stem) if len(w) >= 3)} & named)


def _packages(files: list[str]) -> set[str]:
    """The project's own top packages: `pkg/__init__.py` or `src/pkg/__init__.py`."""
    parts = [Path(f).parts for f in files if f.endswith("__init__.py")]
    return {p[-2].lower() for p in parts if len(p) == 2 or len(p) == 3 and p[0] == "src"}


def _site(root: Path, path: str, found: list[tuple[int, str, str]], named: set[str], verbs: set[str],
          thing_words: set[str]) -> Site:
    """A file's registrations as a site, weighed by how many things they register, the file's role,
    whether the question names its file ("the items API": items.py), and whether it is the registrar
    itself (it defines `add_command`) rather than a place that registers."""
    rows = file_rows(root, path)
    lines: dict[int, str] = {}
    count, score, first = 0, 0.0, (0, 0)
    for number, text, verb in sorted(found):
        items, header = _loop_items(rows, number)
        if header == number and not is_keyed(text):
            items, last = _listed_items(rows, number)
            listed = range(number + 1, last + 1)
            if is_table(text) and text.rstrip()[-1:] in "([{" and not any(rows[n - 1].rstrip().endswith(",") for n in listed):
                continue  # `error_format = (` and its strings: a value in parentheses, not a table of items
            lines.update({n: rows[n - 1] for n in range(number, last + 1)})  # a table's or a call's items
        lines.update({n: rows[n - 1] for n in range(header, number)})  # the loop that registers each item
        lines[number] = text
        count += items
        # a verb that names the thing ("a custom HTTP method": RegisterMethod) says more than a route's GET
        named_verb = ("." + verb in text or text.lstrip().startswith("@")) and stems(verb, frozenset()) & thing_words \
            or verb == "entry point" and stems(entry_group(rows, number) or "", frozenset()) & thing_words
        score += weight(text, verb) * items * (NAMED_VERB if named_verb else 1)
        first = first if count > items else (header, number)
    names = "|".join(re.escape(v) for v in sorted(verbs) if v.isidentifier())
    registrar = bool(names) and re.search(rf"^\s*(?:async\s+)?(?:def|func|function)\s+(?:\([^)]*\)\s*)?(?:{names})\s*\(",
                                          "\n".join(rows), re.MULTILINE) is not None
    score *= ROLE_WEIGHT.get(role_of(path), 0.5) * (3 if _named(path, named) else 1)
    return Site(path, sorted(lines.items()), [shown_verb(t, v) for _, t, v in found],
                score * (0.3 if registrar else 1), count, first)


def _listed_items(rows: list[str], number: int) -> tuple[int, int]:
    """A registration whose items follow it, one a line (`register(\n A,\n B,\n)`, `COMMANDS = {`): how
    many, and the line they end on; else one and `number`."""
    if 0 < number <= len(rows) and re.match(r"\s*class\s.*:$", rows[number - 1].rstrip()):
        return _class_items(rows, number)
    if 0 < number <= len(rows) and is_hanging(rows[number - 1]):
        return _hanging_items(rows, number)
    if not 0 < number <= len(rows) or not rows[number - 1].rstrip().endswith(("(", "[", "{")):
        return 1, number
    indent, items, last = _indent(rows[number - 1]), 0, number
    # a call whose first argument is a string registers one thing: `router.get(\n '/profiles',\n handler)`
    single = not is_table(rows[number - 1]) and number < len(rows) and rows[number].lstrip()[:1] in "\"'`"
    for i in range(number, min(len(rows), number + 400)):
        row = rows[i]
        if row.strip() and _indent(row) <= indent:
            return 1 if single else max(items, 1), i + 1 if row.strip()[:1] in ")]}" else i
        if row.strip() and _indent(row) == _indent(rows[number]) and row.strip()[:1] not in ")]}#/":
            items += 1
        last = i + 1
    return 1 if single else max(items, 1), last


def _hanging_items(rows: list[str], number: int) -> tuple[int, int]:
    """A table whose first item is on its opening line and the rest hang under it: how many, and the
    line it closes on."""
    indent, items = _indent(rows[number - 1]), 1
    for i in range(number, min(len(rows), number + 400)):
        row = rows[i].strip()
        if not row or row.startswith(("#", "//")):
            continue
        if _indent(rows[i]) <= indent:
            return items, i
        items += 1
        if row.endswith(("}", "]", ")")) and not row.endswith(("},", "],", "),")):
            return items, i + 1
    return items, number


def _class_items(rows: list[str], number: int) -> tuple[int, int]:
    """A class's attributes (`DOMAIN: str = "localhost"`, `site_name = c.Type(str)`): how many, and the
    line of the last; its methods and docstrings are no items."""
    items, last, body = 0, number, None
    for i in range(number, min(len(rows), number + 400)):
        row = rows[i]
        if not row.strip():
            continue
        if _indent(row) <= _indent(rows[number - 1]):
            break
        body = _indent(row) if body is None else body
        if _indent(row) == body and re.match(r"[A-Za-z_]\w*\s*(?::[^=]+)?=|[A-Za-z_]\w*\s*:\s*\S", row.strip()) \
                and not row.lstrip().startswith(("def ", "async ", "class ", "return ")):
            items, last = items + 1, i + 1
    return max(items, 1), last


def _loop_items(rows: list[str], number: int) -> tuple[int, int]:
    """How many things the registration on line `number` registers, and the line its loop starts on:
    the items of the `for` loop it is the body of (`for command in (index, search, ...):
    app.command()(command)`), else one and `number`."""
    if not 0 < number <= len(rows):
        return 1, number
    indent = _indent(rows[number - 1])
    for i in range(number - 2, max(number - 8, -1), -1):
        if rows[i].strip() and _indent(rows[i]) < indent:
            header = " ".join(row.strip() for row in rows[i:number - 1])
            if not header.startswith("for ") or " in " not in header:
                return 1, number
            iterable = header.split(" in ", 1)[1].rstrip(": ")
            return max(1, len([item for item in iterable.strip("()[] ").split(",") if item.strip()])), i + 1
    return 1, number


def _pattern(root: Path, site: Site) -> tuple[str, list[tuple[int, str]]] | None:
    """One registration to copy: the site's first, with the definition it decorates (its decorators, its
    first line and its body), or the whole call; cut at PATTERN_LINES."""
    rows = file_rows(root, site.path)
    if not rows:
        return None
    first, end = site.first  # 1-based, inclusive
    if end > first:  # a loop that registers each item: the loop is the pattern
        return site.path, [(n, rows[n - 1]) for n in range(first, end + 1)]
    if rows[first - 1].lstrip().startswith("@"):
        while end < len(rows) and rows[end - 1].lstrip().startswith("@"):  # the decorators, then the definition
            end += 1
        body = _indent(rows[end - 1])
        while end < len(rows) and (not rows[end].strip() or _indent(rows[end]) > body):
            end += 1
    else:
        depth = 0
        for end in range(first, min(len(rows), first + PATTERN_LINES) + 1):
            depth += rows[end - 1].count("(") + rows[end - 1].count("[") + rows[end - 1].count("{")
            depth -= rows[end - 1].count(")") + rows[end - 1].count("]") + rows[end - 1].count("}")
            if depth <= 0:
                break
    end = min(end, first + PATTERN_LINES - 1)
    while end > first and not rows[end - 1].strip():
        end -= 1
    return site.path, [(n, rows[n - 1]) for n in range(first, end + 1)]


def _indent(row: str) -> int:
    return len(row) - len(row.lstrip())


def _also(root: Path, files: list[str], pattern: tuple[str, list[tuple[int, str]]] | None,
          sites: set[str]) -> list[str]:
    """The tests and docs that name the registration to copy (its route, its command's name)."""
    if pattern is None:
        return []
    # What names this registration elsewhere: its route, else the name of the function it registers (a
    # command's own name, "search", is a word every test file uses).
    keys = [k for k in _KEY.findall(pattern[1][0][1]) if k.startswith("/") and len(k) >= 3][:1]
    if not keys:
        match = re.search(r"\b(?:def|function|func)\s+(\w{5,})", "\n".join(t for _, t in pattern[1]))
        keys = [match.group(1)] if match else []
    others = [f for f in files if f not in sites and role_of(f) in ("test", "docs")]
    if not keys or not others:
        return []
    return list(dict.fromkeys(hit.path for hit in lexical.grep(root, others, keys, per_file=1)))[:ALSO_FILES]
