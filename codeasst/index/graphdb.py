"""The code graph of a repository, kept in `graph.sqlite` beside the index and brought up to
date with it, file by file (a file whose content hash changed is read again, a file gone is
dropped with every edge leaving it). Never recomputed per query.

Edges keep their targets as qualified names (codeasst.index.graph); reading the graph follows
them to definitions: through re-exports (`from .core import Basic` in a package's
`__init__`), up base classes for an inherited method, and across a Go package's files. A
target that leads to no definition (a builtin, another package, a file removed since) is
reported as unresolved, never as an edge into nothing.

Attributes and constants (codeasst.index.attributes) are definitions too, but a reader gets them only
where it asks for them (`values=True`): the flow lead, the relation check and a class's methods mean
functions and classes, and a call never resolves to an attribute. `read` edges lead to them.

A graph file that is missing, damaged or from another version is rebuilt from the files
(sympy: about 12 s) with a note; answers never depend on it being there.
"""

from __future__ import annotations

import posixpath
import re
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from codeasst.index import graph as extraction
from codeasst.index.attributes import VALUE_KINDS
from codeasst.index.files import decode_source
from codeasst.index.tags import QueryError

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, sha256 TEXT, module TEXT);
CREATE TABLE IF NOT EXISTS defs (id INTEGER PRIMARY KEY, path TEXT, qname TEXT, name TEXT, kind TEXT,
    line INTEGER, end_line INTEGER, doc TEXT, signature TEXT, parent INTEGER);
CREATE INDEX IF NOT EXISTS defs_qname ON defs(qname);
CREATE INDEX IF NOT EXISTS defs_name ON defs(name);
CREATE INDEX IF NOT EXISTS defs_path ON defs(path);
CREATE TABLE IF NOT EXISTS edges (src INTEGER, path TEXT, kind TEXT, name TEXT, target TEXT, line INTEGER);
CREATE INDEX IF NOT EXISTS edges_src ON edges(src);
CREATE INDEX IF NOT EXISTS edges_name ON edges(name);
CREATE INDEX IF NOT EXISTS edges_path ON edges(path);
CREATE TABLE IF NOT EXISTS bindings (module TEXT, name TEXT, target TEXT, path TEXT);
CREATE INDEX IF NOT EXISTS bindings_module ON bindings(module, name);
CREATE INDEX IF NOT EXISTS bindings_path ON bindings(path);
"""

_INDEXES = re.findall(r"CREATE INDEX IF NOT EXISTS (\w+)", SCHEMA)
FILES_PER_TRANSACTION = 200
MAX_HOPS = 6  # re-exports and base classes followed, at most


@dataclass(frozen=True)
class DefRow:
    id: int
    path: str
    qname: str
    name: str
    kind: str
    line: int
    end_line: int
    doc: str
    signature: str

    def to_json(self) -> dict:
        return {"qname": self.qname, "kind": self.kind, "path": self.path, "line": self.line,
                "end_line": self.end_line, "doc": self.doc, "signature": self.signature}


@dataclass(frozen=True)
class EdgeRow:
    src: DefRow
    kind: str
    name: str
    target: str | None
    path: str
    line: int


_DEF_COLUMNS = "id, path, qname, name, kind, line, end_line, doc, signature"
_CODE = "kind NOT IN ({})".format(", ".join(f"'{k}'" for k in VALUE_KINDS))  # functions, classes, modules


def _only(where: str, values: bool) -> str:
    """`where`, narrowed to code definitions unless `values` (attributes and constants too) are asked for."""
    return where if values else f"{_CODE} AND {where}"


class _Outdated(sqlite3.DatabaseError):
    pass


def _plainest(d: DefRow) -> tuple:
    """The definition a bare name most likely means first: product code before tests, examples and
    vendored copies, then the least nested."""
    from codeasst.index.roles import role_of

    return (role_of(d.path) != "source", d.qname.count("."), d.path, d.line)


class CodeGraph:
    """graph.sqlite, opened for reading and for syncing. A damaged file is replaced."""

    def __init__(self, path: Path, repair: bool = True) -> None:
        """`repair`: start a damaged or outdated file afresh (the index's writer does, under its
        lock); without it such a file raises sqlite3.DatabaseError, for a reader to do without."""
        self.path = path
        self.note: str | None = None  # why the graph was started afresh, if it was
        try:
            self._open()
        except sqlite3.DatabaseError as exc:
            if not repair:
                self.close()
                raise
            self._reset(f"the code graph was {exc}; it is rebuilt from the files" if isinstance(exc, _Outdated)
                        else f"the code graph {path.name} was unreadable ({exc}); it is rebuilt from the files")

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None, timeout=5, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        version = self._db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        if version is None and not self._db.execute("SELECT 1 FROM files LIMIT 1").fetchone():
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (extraction.graph_version(),))
        elif version is None or version[0] != extraction.graph_version():
            raise _Outdated(f"built by another version of codeasst ({version[0] if version else '?'})")

    def _reset(self, note: str) -> None:
        self.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self.note = note
        self._open()

    def close(self) -> None:
        db = getattr(self, "_db", None)  # None when it never opened
        if db is not None:
            db.close()

    # --- keeping it up to date ---

    def sync(self, root: Path, files: dict[str, str]) -> dict[str, int]:
        """Bring the graph in line with `files` (path -> sha256 of the indexed files): read what
        is new or changed, drop what is gone. Returns counts of files read and dropped."""
        try:
            return self._sync(root, files)
        except sqlite3.DatabaseError as exc:
            self._reset(f"the code graph {self.path.name} was damaged ({exc}); it is rebuilt from the files")
            return self._sync(root, files)

    def _sync(self, root: Path, files: dict[str, str]) -> dict[str, int]:
        wanted = {p: sha for p, sha in files.items() if extraction.graph_language(p)}
        have = dict(self._db.execute("SELECT path, sha256 FROM files"))
        gone = [p for p in have if p not in wanted or have[p] != wanted[p]]
        todo = sorted(p for p in wanted if have.get(p) != wanted[p])
        for start in range(0, len(gone), FILES_PER_TRANSACTION):
            with self._transaction():
                self._drop(gone[start:start + FILES_PER_TRANSACTION])
        fresh = not have and bool(todo)
        if fresh:  # a graph built whole: its indexes made once at the end, not kept up row by row
            for name in _INDEXES:
                self._db.execute(f"DROP INDEX IF EXISTS {name}")
        try:
            for start in range(0, len(todo), FILES_PER_TRANSACTION):
                with self._transaction():
                    for path in todo[start:start + FILES_PER_TRANSACTION]:
                        self._add(root, path, wanted[path])
        finally:
            if fresh:  # also where the build failed: a graph without its indexes reads slowly, not wrong
                self._db.executescript(SCHEMA)
        return {"read": len(todo), "dropped": len([p for p in gone if p not in wanted])}

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _drop(self, paths: list[str]) -> None:
        for path in paths:
            self._db.execute("DELETE FROM edges WHERE path = ?", (path,))
            self._db.execute("DELETE FROM defs WHERE path = ?", (path,))
            self._db.execute("DELETE FROM bindings WHERE path = ?", (path,))
            self._db.execute("DELETE FROM files WHERE path = ?", (path,))

    def _add(self, root: Path, path: str, sha: str) -> None:
        try:
            text, _ = decode_source((root / path).read_bytes())
        except OSError:
            text = None
        file_graph = None
        if text is not None:
            try:
                file_graph = extraction.extract(path, text)
            except QueryError:
                raise  # a query file codeasst ships that does not compile: a bug to report, not a quirk
            except Exception:  # noqa: BLE001 - a grammar quirk must not stop indexing; the file has no edges
                file_graph = None
        module = file_graph.module if file_graph else ""
        self._db.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?)", (path, sha, module))
        if file_graph is None:
            return
        ids = []
        for d in file_graph.defs:
            parent = ids[d.parent] if d.parent >= 0 else None
            cur = self._db.execute(
                "INSERT INTO defs (path, qname, name, kind, line, end_line, doc, signature, parent) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (path, d.qname, d.name, d.kind, d.line, d.end_line, d.doc, d.signature, parent))
            ids.append(cur.lastrowid)
        self._db.executemany("INSERT INTO edges VALUES (?, ?, ?, ?, ?, ?)",
                             [(ids[e.src], path, e.kind, e.name, e.target, e.line) for e in file_graph.edges])
        self._db.executemany("INSERT INTO bindings VALUES (?, ?, ?, ?)",
                             [(module, name, target, path) for name, target in file_graph.bindings.items()])
        self._db.executemany("INSERT INTO bindings VALUES (?, ?, ?, ?)",  # `Cart#`: Cart's fields' types
                             [(f"{cls}#", name, target, path) for cls, name, target in file_graph.member_types])

    def counts(self) -> dict[str, int]:
        return {name: self._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                for name, table in (("files", "files"), ("definitions", "defs"), ("edges", "edges"))}

    # --- reading ---

    def _defs(self, where: str, args: Iterable) -> list[DefRow]:
        return [DefRow(*row) for row in self._db.execute(f"SELECT {_DEF_COLUMNS} FROM defs WHERE {where}", tuple(args))]

    def definition(self, def_id: int) -> DefRow | None:
        found = self._defs("id = ?", (def_id,))
        return found[0] if found else None

    def find(self, name: str, values: bool = False) -> list[DefRow]:
        """Definitions a user's NAME means: a qualified name, a dotted tail of one (`Indexer.run`),
        or a bare name; modules only when nothing else has that name. Attributes and constants
        only with `values`."""
        name = name.strip().strip("`").removesuffix("()")
        if not name:
            return []
        exact = self._defs(_only("qname = ?", values), (name,))
        named_exact = [d for d in exact if d.kind != "module"]
        if named_exact:
            return named_exact
        # only a module has that very name (a Java file is named as its class, `x.Parse` in `Parse.java`)
        last = name.rsplit(".", 1)[-1]
        found = [d for d in self._defs(_only("name = ?", values), (last,))
                 if d.qname == name or d.qname.endswith("." + name)]
        named = [d for d in found if d.kind != "module"]
        return sorted(named or exact or found, key=_plainest)

    def starting(self, prefix: str, limit: int = 100, values: bool = False) -> list[DefRow]:
        """Definitions (modules aside) whose bare name starts with `prefix`, as an editor's symbol search
        asks while the user types: the name itself first, then by length and name. With `values`,
        attributes and constants fill what room the functions and classes leave."""
        prefix = prefix.strip()
        if not prefix:
            return []
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        order = "ORDER BY length(name), name, path, line LIMIT ?"
        found = self._defs(f"name LIKE ? ESCAPE '\\' AND kind != 'module' AND {_CODE} {order}", (escaped + "%", limit))
        if values and len(found) < limit:
            found += self._defs(f"name LIKE ? ESCAPE '\\' AND NOT ({_CODE}) {order}",
                                (escaped + "%", limit - len(found)))
        return sorted(found, key=lambda d: d.name != prefix)

    def in_file(self, path: str, line: int | None = None, values: bool = False) -> list[DefRow]:
        """The definitions of a file; with `line`, those that hold it, innermost first. Attributes and
        constants only with `values`."""
        if line is None:
            return self._defs(_only("path = ? ORDER BY line", values), (path,))
        return self._defs(_only("path = ? AND line <= ? AND end_line >= ? ORDER BY line DESC", values),
                          (path, line, line))

    def members(self, cls: DefRow, values: bool = False) -> list[DefRow]:
        """The methods a class defines itself, in source order; with `values`, its attributes too."""
        return self._defs(_only("path = ? AND parent = ? ORDER BY line", values), (cls.path, cls.id))

    def resolve(self, target: str | None, _hops: int = 0, values: bool = False) -> list[DefRow]:
        """The definitions an edge's target names; [] when it leads to none in the repository. An
        attribute or constant only with `values` (what a `read` edge leads to)."""
        if not target or _hops > MAX_HOPS:
            return []
        if target.startswith("^"):  # super().m inside class C: m as a base of C defines it
            cls, _, member = target[1:].rpartition(".")
            return [d for base in self.bases(cls, _hops) for d in self.member(base.qname, member, _hops + 1, values)]
        if target.startswith("@"):
            return self._go(target, values)
        if target.startswith("&"):
            return self._included(target, values)
        if target.startswith("*"):  # `*A;B|NAME`: NAME in the first of the modules A, B that defines it
            modules, _, tail = target[1:].partition("|")
            for module in modules.split(";"):
                found = self.resolve(f"{module}.{tail}" if module else tail, _hops + 1, values)
                if found:
                    return found
            return []
        exact = self._defs(_only("qname = ? AND kind != 'module'", values), (target,))
        if exact:
            return exact
        parts = target.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            head, rest = ".".join(parts[:cut]), parts[cut:]
            bound = self._db.execute("SELECT target FROM bindings WHERE module = ? AND name = ?",
                                     (head, rest[0])).fetchone()
            if bound and bound[0] != target:
                return self.resolve(".".join([bound[0], *rest[1:]]), _hops + 1, values)
            typed = self._db.execute("SELECT target FROM bindings WHERE module = ? AND name = ?",
                                     (f"{head}#", rest[0])).fetchone() if len(rest) > 1 else None
            if typed:  # `Cart.pricer.price`: through a field to what its declared type has
                return self.resolve(".".join([typed[0], *rest[1:]]), _hops + 1, values)
            if len(rest) == 1 and self._defs("qname = ? AND kind = 'class'", (head,)):
                return self.member(head, rest[0], _hops + 1, values)
            if len(rest) == 1 and self._defs("qname = ? AND kind = 'constant' AND signature LIKE 'case %'", (head,)):
                return self.member(head.rpartition(".")[0], rest[0], _hops + 1, values)  # an enum's case is the enum
        return self._defs("qname = ? AND kind = 'module'", (target,))

    def member(self, cls: str, name: str, _hops: int = 0, values: bool = False) -> list[DefRow]:
        """`name` as class `cls` has it: its own, else the nearest base's (an attribute only with `values`)."""
        seen: set[str] = set()
        frontier = [cls]
        while frontier and _hops <= MAX_HOPS:
            found = [d for c in frontier for d in self._defs(_only("qname = ?", values), (f"{c}.{name}",))]
            if found:
                return found
            seen.update(frontier)
            frontier = [b.qname for c in frontier for b in self.bases(c, _hops) if b.qname not in seen]
            _hops += 1
        return []

    def bases(self, cls: str, _hops: int = 0) -> list[DefRow]:
        rows = self._db.execute(
            "SELECT e.target FROM edges e JOIN defs d ON e.src = d.id "
            "WHERE d.qname = ? AND d.kind = 'class' AND e.kind = 'inherit'", (cls,)).fetchall()
        return [b for (target,) in rows for b in self.resolve(target, _hops + 1) if b.kind == "class"]

    def _go(self, target: str, values: bool = False) -> list[DefRow]:
        where, _, name = target[1:].rpartition("/")
        like_name = name.rsplit(".", 1)[-1]
        found = []
        for d in self._defs(_only("name = ?", values), (like_name,)):
            directory = d.path.rpartition("/")[0]
            # An import path is the module's path then the directory: its end names the directory.
            in_dir = (directory == where or (where.startswith("*") and directory
                                             and (where[1:] == directory or where[1:].endswith("/" + directory))))
            if in_dir and (d.qname.endswith("." + name)):
                found.append(d)
        return found

    def _included(self, target: str, values: bool = False) -> list[DefRow]:
        """`&STEM;STEM|TAIL,TAIL` (C, C++): the first TAIL defined in a file whose path, less its suffix,
        ends with a STEM (the calling file and what it includes). A bare TAIL is a function or a type,
        not a member; a dotted one (`geo.Shape.area`) ends a qualified name. A header's functions are
        defined in the source file of its name (`geo/shape.h`, `src/shape.cpp`), which no file includes."""
        stems, _, tails = target[1:].rpartition("|")
        ends = tuple(stems.split(";"))
        for tail in tails.split(","):
            named = self._defs(_only("name = ? AND kind != 'module'", values), (tail.rsplit(".", 1)[-1],))
            fitting = [d for d in named if (d.qname.endswith("." + tail) if "." in tail else d.kind != "method")]
            found = [d for d in fitting if _included_by(d.path, ends)]
            if not found and "." in tail and {d.qname for d in fitting} and len({d.qname for d in fitting}) == 1:
                # a member `Scanner.scan` defined in a source file no one includes (scantoken.cpp): C++'s
                # one-definition rule makes a qualified name name one definition, wherever it is
                found = fitting
            if found:
                return found
        return []

    def _edges(self, where: str, args: Iterable) -> list[tuple[int, str, str, str | None, str, int]]:
        return self._db.execute(f"SELECT src, kind, name, target, path, line FROM edges WHERE {where}",
                                tuple(args)).fetchall()

    def out_edges(self, d: DefRow, kinds: tuple[str, ...] = ("call",)) -> list[tuple[EdgeRow, list[DefRow]]]:
        """What `d` calls (or raises, returns, inherits, reads), in source order, each with the
        definitions it resolves to ([]: unresolved)."""
        marks = ",".join("?" * len(kinds))
        rows = self._edges(f"src = ? AND kind IN ({marks}) ORDER BY line", (d.id, *kinds))
        cache: dict[tuple[str | None, bool], list[DefRow]] = {}
        out = []
        for _, kind, name, target, path, line in rows:
            key = (target, kind == "read")
            if key not in cache:
                cache[key] = self.resolve(target, values=key[1])
            out.append((EdgeRow(d, kind, name, target, path, line), cache[key]))
        return out

    def in_edges(self, d: DefRow, kinds: tuple[str, ...] = ("call",), limit: int = 200
                 ) -> tuple[list[EdgeRow], int]:
        """Edges into `d`, whose targets resolve to it (up to `limit`), and how many more edges
        with its name could not be resolved either way (a call on a receiver of unknown type)."""
        marks = ",".join("?" * len(kinds))
        names = [d.name, *self._aliases(d)]
        rows = [row for name in names
                for row in self._edges(f"name = ? AND kind IN ({marks}) ORDER BY path, line", (name, *kinds))]
        cache: dict[tuple[str, bool], bool] = {}
        found: list[EdgeRow] = []
        unresolved = 0
        sources: dict[int, DefRow | None] = {}
        for src, kind, name, target, path, line in rows:
            if target is None:
                unresolved += 1
                continue
            key = (target, kind == "read")
            if key not in cache:
                cache[key] = any(r.id == d.id for r in self.resolve(target, values=key[1]))
            if not cache[key] or len(found) >= limit:
                continue
            if src not in sources:
                sources[src] = self.definition(src)
            if sources[src] is not None:
                found.append(EdgeRow(sources[src], kind, name, target, path, line))
        return found, unresolved

    def _aliases(self, d: DefRow) -> list[str]:
        """Other names `d` is imported under (`from .util import helper as assist`)."""
        rows = self._db.execute("SELECT DISTINCT name, target FROM bindings WHERE target LIKE ? AND name != ? "
                                "AND module NOT LIKE '%#'",  # a field's type is no other name of it
                                (f"%.{d.name}", d.name)).fetchall()
        values = d.kind in VALUE_KINDS
        return sorted({name for name, target in rows if any(r.id == d.id for r in self.resolve(target, values=values))})

    def referenced(self, names: Iterable[str]) -> dict[str, int]:
        """How many edges (calls, inheritance, imports; not reads of attributes and constants) name each
        of `names`: how much the rest of the code leans on a definition of that name."""
        names = list(set(names))
        out: dict[str, int] = {}
        for start in range(0, len(names), 500):
            part = names[start:start + 500]
            marks = ",".join("?" * len(part))
            out.update(self._db.execute(
                f"SELECT name, COUNT(*) FROM edges WHERE name IN ({marks}) AND kind != 'read' GROUP BY name",
                part).fetchall())
        return out


def _included_by(path: str, stems: tuple[str, ...]) -> bool:
    base, suffix = posixpath.splitext(path)
    if any(base == stem or base.endswith("/" + stem) for stem in stems):
        return True
    name = base.rpartition("/")[2]
    return suffix.lower() in _SOURCES and any(stem.rpartition("/")[2] == name for stem in stems)


_SOURCES = frozenset({".c", ".cc", ".cpp", ".cxx"})


def read_graph(index_dir: Path) -> CodeGraph | None:
    """The code graph as the last index run left it, for reading: None where there is none, or none
    readable. Never repaired here: only the process that holds the index's lock writes it
    (Indexer.graph), and it may be writing it now."""
    path = index_dir / "graph.sqlite"
    try:
        return CodeGraph(path, repair=False) if path.exists() else None
    except sqlite3.DatabaseError:
        return None
