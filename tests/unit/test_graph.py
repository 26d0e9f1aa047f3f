"""The code graph: extraction with real tree-sitter, storage and resolution in real SQLite."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from codeasst.index.graph import extract
from codeasst.index.graphdb import CodeGraph

PY = {
    "pkg/__init__.py": "from .core import Engine\nfrom .util import helper as assist\n",
    "pkg/core.py": (
        '"""The core."""\n'
        "from .util import helper\n"
        "from . import util\n\n\n"
        "class Base:\n"
        "    def start(self):\n"
        '        """Start the base. More words."""\n'
        "        return self.step()\n\n"
        "    def step(self):\n"
        "        raise ValueError('no')\n\n\n"
        "class Engine(Base):\n"
        "    def step(self):\n"
        "        helper(1)\n"
        "        util.other()\n"
        "        return super().step()\n\n"
        "    def loop(self, n):\n"
        "        return self.loop(n - 1) if n else ping(n)\n\n\n"
        "def ping(n):\n"
        "    return pong(n)\n\n\n"
        "def pong(n):\n"
        "    return ping(n - 1)\n\n\n"
        "def drive(engine: Engine, thing):\n"
        "    thing.step()\n"
        "    engine.start()\n"
        "    local = Engine()\n"
        "    local.loop(3)\n"
        "    handlers = [ping, pong]\n"
        "    return handlers\n"
    ),
    "pkg/util.py": "def helper(x):\n    return x\n\n\ndef other():\n    return helper(2)\n",
    "app/main.py": "from pkg import Engine, assist\n\n\ndef main():\n    Engine().start()\n    assist(3)\n",
    "app/also.py": "def helper(x):\n    return -x\n",
}


def build(tmp_path: Path, files: dict[str, str]) -> CodeGraph:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    code_graph = CodeGraph(tmp_path / "idx" / "graph.sqlite")
    code_graph.sync(tmp_path, {rel: hashlib.sha256(text.encode()).hexdigest() for rel, text in files.items()})
    return code_graph


def callees(g: CodeGraph, name: str) -> dict[str, list[str]]:
    (d,) = g.find(name)
    return {e.name: [r.qname for r in found] for e, found in g.out_edges(d)}


def callers(g: CodeGraph, name: str) -> set[str]:
    (d,) = g.find(name)
    return {e.src.qname for e in g.in_edges(d, ("call", "ref"))[0]}


def test_definitions_carry_qualified_names_lines_and_docstrings():
    graph = extract("pkg/core.py", PY["pkg/core.py"])
    by_name = {d.qname: d for d in graph.defs}
    start = by_name["pkg.core.Base.start"]
    assert (start.kind, start.line, start.doc) == ("method", 7, "Start the base.")
    assert by_name["pkg.core"].kind == "module"
    assert by_name["pkg.core.ping"].signature == "def ping(n)"
    assert graph.bindings["helper"] == "pkg.util.helper"  # a relative import, made absolute


def test_calls_resolve_through_imports_self_super_and_annotated_variables(tmp_path):
    g = build(tmp_path, PY)
    step = callees(g, "Engine.step")
    assert step["helper"] == ["pkg.util.helper"]  # `from .util import helper`, not app/also.py's
    assert step["other"] == ["pkg.util.other"]  # `util.other()` through `from . import util`
    assert step["step"] == ["pkg.core.Base.step"]  # super().step(): the base's, not itself
    assert callees(g, "Base.start")["step"] == ["pkg.core.Base.step"]
    drive = callees(g, "drive")
    assert drive["start"] == ["pkg.core.Base.start"]  # `engine: Engine`, start inherited from Base
    assert drive["loop"] == ["pkg.core.Engine.loop"]  # `local = Engine()`


def test_overload_stubs_give_way_to_the_implementation_and_a_property_keeps_both_halves():
    graph = extract("m.py", "from typing import overload\n\n\n@overload\ndef f(x: int) -> int: ...\n\n\n"
                            "@overload\ndef f(x: str) -> str: ...\n\n\ndef f(x):\n    return x\n\n\n"
                            "class C:\n    @property\n    def v(self):\n        raise KeyError\n\n"
                            "    @v.setter\n    def v(self, value):\n        self._v = value\n")
    assert [d.line for d in graph.defs if d.qname == "m.f"] == [12]
    assert [d.line for d in graph.defs if d.qname == "m.C.v"] == [18, 22]


def test_a_re_export_leads_to_the_definition(tmp_path):
    g = build(tmp_path, PY)
    main = callees(g, "main")
    assert main["Engine"] == ["pkg.core.Engine"]  # `from pkg import Engine`, re-exported by pkg/__init__
    assert main["assist"] == ["pkg.util.helper"]  # re-exported under another name
    assert "app.main.main" in callers(g, "pkg.util.helper")


def test_a_dynamic_call_is_unresolved_not_guessed(tmp_path):
    g = build(tmp_path, PY)
    (d,) = g.find("drive")
    thing_step = [(e, found) for e, found in g.out_edges(d) if e.name == "step"]
    assert thing_step and all(e.target is None and found == [] for e, found in thing_step)
    (base_step,) = g.find("Base.step")
    found, unresolved = g.in_edges(base_step)
    assert unresolved >= 1  # `thing.step()` is counted as unknown, not as a caller
    assert "pkg.core.drive" not in {e.src.qname for e in found}


def test_recursion_and_mutual_calls_are_edges_not_loops(tmp_path):
    g = build(tmp_path, PY)
    assert callees(g, "Engine.loop")["loop"] == ["pkg.core.Engine.loop"]
    assert callees(g, "ping")["pong"] == ["pkg.core.pong"]
    assert callees(g, "pong")["ping"] == ["pkg.core.ping"]
    assert callers(g, "pkg.core.ping") >= {"pkg.core.pong", "pkg.core.Engine.loop", "pkg.core.drive"}


def test_a_name_defined_in_many_files_finds_each_plainest_first(tmp_path):
    g = build(tmp_path, PY)
    found = g.find("helper")
    assert [d.path for d in found] == ["app/also.py", "pkg/util.py"]
    assert "app.also.helper" not in {q for qs in callees(g, "Engine.step").values() for q in qs}
    assert callers(g, "app.also.helper") == set()


def test_a_removed_file_leaves_no_edge_pointing_into_nothing(tmp_path):
    g = build(tmp_path, PY)
    files = {rel: hashlib.sha256(text.encode()).hexdigest() for rel, text in PY.items() if rel != "pkg/util.py"}
    assert g.sync(tmp_path, files) == {"read": 0, "dropped": 1}
    step = callees(g, "Engine.step")
    assert step["helper"] == [] and step["other"] == []
    assert g.find("other") == []


def test_a_changed_file_is_read_again(tmp_path):
    g = build(tmp_path, PY)
    changed = dict(PY, **{"pkg/util.py": "def helper(x):\n    return other()\n\n\ndef other():\n    return 1\n"})
    (tmp_path / "pkg/util.py").write_text(changed["pkg/util.py"])
    assert g.sync(tmp_path, {rel: hashlib.sha256(t.encode()).hexdigest() for rel, t in changed.items()}) \
        == {"read": 1, "dropped": 0}
    assert callees(g, "pkg.util.helper") == {"other": ["pkg.util.other"]}


@pytest.mark.parametrize("damage", [b"not a database at all" * 100, None], ids=["damaged", "missing"])
def test_a_damaged_or_missing_graph_is_rebuilt_with_a_note(tmp_path, damage):
    g = build(tmp_path, PY)
    g.close()
    path = tmp_path / "idx" / "graph.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    if damage is None:
        path.unlink()
    else:
        path.write_bytes(damage)
    again = CodeGraph(path)
    assert (again.note is not None) == (damage is not None)
    assert again.sync(tmp_path, {rel: hashlib.sha256(t.encode()).hexdigest() for rel, t in PY.items()})["read"] == len(PY)
    assert callees(again, "Engine.step")["helper"] == ["pkg.util.helper"]


def test_typescript_imports_classes_and_calls(tmp_path):
    g = build(tmp_path, {
        "src/store.ts": "export class Store extends Base {\n  get(k: string) { return this.load(k); }\n"
                        "  load(k: string) { return k; }\n}\nexport class Base {}\n",
        "src/app.ts": "import { Store as S } from './store';\n"
                      "// Run the app.\nexport function run(s: S) {\n  const t = new S();\n  t.get('a');\n"
                      "  return s.load('b');\n}\n",
    })
    (run,) = g.find("run")
    assert run.doc == "Run the app."
    assert callees(g, "run") == {"S": ["store.Store"], "get": ["store.Store.get"], "load": ["store.Store.load"]}
    assert callees(g, "Store.get") == {"load": ["store.Store.load"]}
    assert [b.qname for b in g.bases("store.Store")] == ["store.Base"]


def test_go_calls_within_a_package_through_receivers_and_imports(tmp_path):
    g = build(tmp_path, {
        "flag/flag.go": "package flag\n\ntype Set struct { Base }\n\n// Parse parses.\n"
                        "func (s *Set) Parse() { s.check(); helper() }\n\nfunc (s *Set) check() {}\n",
        "flag/util.go": "package flag\n\nfunc helper() {}\n\ntype Base struct{}\n",
        "cmd/main.go": 'package main\n\nimport f "example.com/x/flag"\n\nfunc main() { f.New() }\n',
        "flag/new.go": "package flag\n\nfunc New() *Set { return &Set{} }\n",
    })
    assert callees(g, "Set.Parse") == {"check": ["flag.flag.Set.check"], "helper": ["flag.util.helper"]}
    assert callees(g, "main") == {"New": ["flag.new.New"]}
    assert [b.qname for b in g.bases("flag.flag.Set")] == ["flag.util.Base"]


def test_a_graph_built_whole_has_its_indexes_even_where_the_build_failed(tmp_path, monkeypatch):
    from codeasst.index import graphdb

    files = {f"pkg/m{i}.py": f"def f{i}():\n    return f{i - 1}() if {i} else 0\n" for i in range(250)}
    g = build(tmp_path, files)  # into an empty graph: indexes made at the end
    indexes = {row[0] for row in g._db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert set(graphdb._INDEXES) <= indexes
    assert [d.qname for d in g.find("f7")] == ["pkg.m7.f7"]
    g.close()

    failing = tmp_path / "failing"
    for rel, text in files.items():
        (failing / rel).parent.mkdir(parents=True, exist_ok=True)
        (failing / rel).write_text(text)
    broken = CodeGraph(failing / "idx" / "graph.sqlite")
    monkeypatch.setattr(graphdb.CodeGraph, "_add", lambda self, root, path, sha: (_ for _ in ()).throw(OSError("x")))
    with pytest.raises(OSError):
        broken.sync(failing, {rel: "sha" for rel in files})
    indexes = {row[0] for row in broken._db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert set(graphdb._INDEXES) <= indexes, "a failed build leaves the indexes"
    broken.close()


def test_a_small_graph_built_whole_makes_its_indexes_at_the_end_too(tmp_path, monkeypatch):
    from codeasst.index import graphdb

    made: list[str] = []
    real = graphdb.CodeGraph._add

    def add(self, root, path, sha):  # the indexes are gone while the rows go in
        made.append(",".join(r[0] for r in self._db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'")))
        real(self, root, path, sha)

    monkeypatch.setattr(graphdb.CodeGraph, "_add", add)
    g = build(tmp_path, {"pkg/a.py": "def f():\n    return 1\n", "pkg/b.py": "from pkg.a import f\n\nf()\n"})
    assert made == ["", ""]
    indexes = {row[0] for row in g._db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert set(graphdb._INDEXES) <= indexes
    g.close()
