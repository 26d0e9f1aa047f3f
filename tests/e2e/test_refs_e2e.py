"""`codeasst refs` through the CLI: the real index, tree-sitter and SQLite graph, kept up to date
with the files, and mended when damaged."""

from __future__ import annotations

from tests.e2e.conftest import assert_one_line_error, run_cli, run_json
from tests.unit.test_graph import PY


def test_refs_shows_callers_and_callees_and_follows_the_files(make_repo):
    root = make_repo(PY)
    (place,) = run_json("refs", "Engine.step", "-C", str(root))
    assert (place["qname"], place["path"], place["line"]) == ("pkg.core.Engine.step", "pkg/core.py", 16)
    resolved = {c["name"]: [r["qname"] for r in c["resolved"]] for c in place["callees"]}
    assert resolved == {"helper": ["pkg.util.helper"], "other": ["pkg.util.other"], "step": ["pkg.core.Base.step"]}

    (helper,) = [p for p in run_json("refs", "helper", "-C", str(root)) if p["path"] == "pkg/util.py"]
    assert {c["qname"] for c in helper["callers"]} == {"pkg.core.Engine.step", "pkg.util.other", "app.main.main"}

    text = run_cli("refs", "Base.step", "--unresolved", "-C", str(root)).stdout
    assert "pkg/core.py:19  pkg.core.Engine.step" in text  # super().step()
    assert "more calls by this name on receivers of unknown type" in text  # thing.step() in drive

    (root / "pkg/util.py").unlink()  # the graph follows the index: no edge points into nothing
    (place,) = run_json("refs", "Engine.step", "-C", str(root))
    gone = {c["name"]: c for c in place["callees"]}
    assert gone["helper"]["resolved"] == [] and "outside the repository" in gone["helper"]["unresolved"]

    assert_one_line_error(run_cli("refs", "other", "-C", str(root), check_rc=None), 1,
                          "no definition named 'other'")


def test_a_damaged_graph_is_rebuilt_with_a_note(make_repo):
    root = make_repo(PY)
    run_cli("refs", "ping", "-C", str(root))
    graph = next((root / ".codeasst").rglob("graph.sqlite")) if (root / ".codeasst").exists() else None
    if graph is None:  # the index lives in the user's data directory
        from codeasst.services import build_services

        graph = build_services(root, {}).repo.index_dir / "graph.sqlite"
    for extra in ("-wal", "-shm"):
        graph.with_name(graph.name + extra).unlink(missing_ok=True)
    graph.write_bytes(b"\0garbage" * 512)
    proc = run_cli("refs", "ping", "-C", str(root))
    assert "code graph graph.sqlite was unreadable" in proc.stderr and "rebuilt" in proc.stderr
    assert "pkg/core.py:26  pkg.core.pong  -> pkg/core.py:29" in proc.stdout


def test_refs_outline_shows_the_lines_that_carry_the_logic_with_their_targets(make_repo):
    root = make_repo(PY)
    text = run_cli("refs", "Engine.step", "--outline", "-C", str(root)).stdout
    assert "outline (0 of 4 lines folded):" in text
    # each call into the repository with its target's place; the file's own lines, numbered
    assert "    17          helper(1)    → pkg.util.helper at pkg/util.py:1" in text
    assert "    19          return super().step()    → pkg.core.Base.step at pkg/core.py:11" in text

    # recursion: ping and pong call each other; each outline names the other once and stops
    (ping,) = run_json("refs", "ping", "--outline", "-C", str(root))
    assert [line["targets"] for line in ping["outline"]["lines"]] == [[], ["pkg.core.pong at pkg/core.py:29"]]

    # the target's file changed since the graph was read: the line it is on now, never the old one
    (root / "pkg/util.py").write_text("# moved\n\n\n" + PY["pkg/util.py"])
    (step,) = run_json("refs", "Engine.step", "--outline", "-C", str(root))
    assert ["pkg.util.helper at pkg/util.py:4"] in [line["targets"] for line in step["outline"]["lines"]]


def test_refs_lists_an_attribute_with_its_doc_and_who_reads_it(make_repo):
    from tests.unit.test_graph_attributes import SESSION

    root = make_repo({"pkg/__init__.py": "", "pkg/session.py": SESSION,
                      "pkg/config.py": "LIMIT = 5\nTIMEOUT_S = 2\n\n\ndef helper(**kw):\n    return kw\n"})
    text = run_cli("refs", "timeout", "-C", str(root)).stdout
    assert text.splitlines()[:4] == [
        "pkg.session.Session.timeout  (attribute)  pkg/session.py:31",
        "  self.timeout = 30",
        "  Default timeout, in seconds, for every request this session sends.",
        "read by (1):",
    ]
    assert "  pkg/session.py:48  pkg.session.Session.send" in text
    assert "callees" not in text

    (limit,) = run_json("refs", "LIMIT", "-C", str(root))
    assert (limit["kind"], limit["path"], limit["line"]) == ("constant", "pkg/config.py", 1)
    assert limit["callers"] == [{"qname": "pkg.session.Session.send", "path": "pkg/session.py", "line": 48,
                                 "kind": "read"}]
    (send,) = run_json("refs", "Session.send", "-C", str(root))  # a method reads as before: no attribute in it
    assert all(c["kind"] != "read" for c in send["callers"])
    assert all(r["kind"] not in ("attribute", "constant") for c in send["callees"] for r in c["resolved"])


def test_refs_reads_rust_java_and_cpp(make_repo):
    from tests.unit.test_graph_langs import CPP, JAVA, RUST

    root = make_repo({**RUST.files, **JAVA.files, **CPP.files,
                      "go/parse.go": "package parse\n\n// Parse parses.\nfunc Parse(s string) int { return 0 }\n",
                      "src/main/java/com/shop/Parse.java": "package com.shop;\n\nclass Parse {}\n"})
    text = run_cli("refs", "Parse", "-C", str(root)).stdout  # one name in two languages: both, labelled
    assert "go.parse.Parse  (function, go)  go/parse.go:4" in text
    assert "com.shop.Parse  (class, java)  src/main/java/com/shop/Parse.java:3" in text
    (peek,) = run_json("refs", "Parser.peek", "-C", str(root))
    assert (peek["qname"], peek["path"], peek["line"]) == ("parser.Parser.peek", "src/parser.rs", 19)
    assert peek["doc"] == "" and {c["qname"] for c in peek["callers"]} == {"parser.Parser.parse"}

    (add,) = run_json("refs", "Cart.add", "-C", str(root))
    assert (add["path"], add["line"], add["doc"]) == ("src/main/java/com/shop/Cart.java", 15, "Adds one item.")
    resolved = {c["name"]: [r["qname"] for r in c["resolved"]] for c in add["callees"]}
    assert resolved["trim"] == ["com.shop.util.Strings.trim"] and resolved["price"] == ["com.shop.Pricer.price"]
    assert len(run_json("refs", "com.shop.Cart.total", "-C", str(root))) == 2  # overloads, each listed

    text = run_cli("refs", "scale", "-C", str(root)).stdout
    assert "src/shape.cpp:13" in text and "shape.geo.Shape.grow" in text
    (grow,) = run_json("refs", "Shape.grow", "--outline", "-C", str(root))
    assert grow["path"] == "src/shape.cpp" and {c["qname"] for c in grow["callers"]} == {"main.main"}
