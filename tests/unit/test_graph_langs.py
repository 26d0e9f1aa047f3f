"""The code graph in the languages read through query files (codeasst.index.tags): one small repository
per language, with its definitions, a call resolved, a call left unresolved and counted, a doc comment
carried. Breaking a language's query file fails its case here."""

from __future__ import annotations

import time
import tomllib
from dataclasses import dataclass, field

import pytest

from codeasst.index import chunker, grammars, graph, outline, tags
from codeasst.index.graph import extract
from tests.unit.test_graph import build


@dataclass(frozen=True)
class Case:
    files: dict[str, str]
    defs: dict[str, tuple[str, int]]  # qname -> (kind, line)
    docs: dict[str, str]  # qname -> the doc's first sentence
    calls: dict[str, set[str]]  # callee qname -> its callers' qnames
    unresolved: tuple[str, str]  # (a definition, the name of a call of it the graph cannot place)
    bases: dict[str, set[str]] = field(default_factory=dict)


RUST = Case(
    files={
        "src/lib.rs": "pub mod lexer;\npub mod parser;\n\n/// The crate's entry.\npub fn run() {\n"
                      "    parser::Parser::new(\"x\");\n}\n",
        "src/lexer.rs": "/// Splits text into tokens.\npub fn tokenize(text: &str) -> Vec<String> {\n"
                        "    vec![text.to_string()]\n}\n",
        "src/parser.rs": (
            "use crate::lexer::{tokenize as split};\n\n"
            "/// A parser over tokens.\n"
            "#[derive(Debug)]\n"
            "pub struct Parser {\n"
            "    tokens: Vec<String>,\n"
            "}\n\n"
            "pub trait Parse {\n"
            "    fn parse(&self) -> u32;\n"
            "}\n\n"
            "impl Parser {\n"
            "    /// A parser over `text`. It splits it first.\n"
            "    pub fn new(text: &str) -> Self {\n"
            "        Parser { tokens: split(text) }\n"
            "    }\n\n"
            "    fn peek(&self) -> usize {\n"
            "        self.tokens.len()\n"
            "    }\n"
            "}\n\n"
            "impl Parse for Parser {\n"
            "    fn parse(&self) -> u32 {\n"
            "        let again: Parser = Parser::new(\"y\");\n"
            "        again.peek();\n"
            "        self.peek();\n"
            "        mystery.peek();\n"
            "        0\n"
            "    }\n"
            "}\n"
        ),
    },
    defs={"parser.Parser": ("class", 5), "parser.Parse": ("class", 9), "parser.Parser.new": ("method", 15),
          "parser.Parser.peek": ("method", 19), "parser.Parser.parse": ("method", 25),
          "parser.Parser.tokens": ("attribute", 6), "lexer.tokenize": ("function", 2), "run": ("function", 5)},
    docs={"parser.Parser": "A parser over tokens.", "parser.Parser.new": "A parser over `text`.",
          "lexer.tokenize": "Splits text into tokens."},
    calls={"parser.Parser.peek": {"parser.Parser.parse"}, "lexer.tokenize": {"parser.Parser.new"},
           "parser.Parser.new": {"parser.Parser.parse"}},
    unresolved=("parser.Parser.peek", "peek"),
    bases={"parser.Parser": {"parser.Parse"}},
)

JAVA = Case(
    files={
        "src/main/java/com/shop/Base.java": "package com.shop;\n\npublic class Base {\n"
                                            "    protected void log(String m) {}\n}\n",
        "src/main/java/com/shop/util/Strings.java": (
            "package com.shop.util;\n\n/** String helpers. */\npublic final class Strings {\n"
            "    /** Trims a string. */\n    public static String trim(String s) { return s; }\n}\n"),
        "src/main/java/com/shop/Cart.java": (
            "package com.shop;\n\n"
            "import com.shop.util.Strings;\n\n"
            "/**\n * A shopping cart. It holds items.\n */\n"
            "public class Cart extends Base {\n"
            "    /** Its pricer. */\n"
            "    private Pricer pricer;\n\n"
            "    public Cart() { this.pricer = new Pricer(); }\n\n"
            "    // Adds one item.\n"
            "    public void add(String item) {\n"
            "        check(item);\n"
            "        Strings.trim(item);\n"
            "        pricer.price(item);\n"
            "        log(item);\n"
            "        unknown().check(item);\n"
            "    }\n\n"
            "    public int total() { return 0; }\n"
            "    public int total(int tax) { return tax; }\n\n"
            "    private void check(String item) {}\n"
            "}\n"),
        "src/main/java/com/shop/Pricer.java": (
            "package com.shop;\n\nclass Pricer {\n    int price(String item) { return 1; }\n}\n"),
    },
    defs={"com.shop.Cart": ("class", 8), "com.shop.Cart.Cart": ("method", 12), "com.shop.Cart.add": ("method", 15),
          "com.shop.Cart.check": ("method", 26), "com.shop.Cart.pricer": ("attribute", 10),
          "com.shop.util.Strings.trim": ("method", 6)},
    docs={"com.shop.Cart": "A shopping cart.", "com.shop.Cart.add": "Adds one item.",
          "com.shop.Cart.pricer": "Its pricer.", "com.shop.util.Strings.trim": "Trims a string."},
    calls={"com.shop.Cart.check": {"com.shop.Cart.add"}, "com.shop.util.Strings.trim": {"com.shop.Cart.add"},
           "com.shop.Pricer.price": {"com.shop.Cart.add"}, "com.shop.Base.log": {"com.shop.Cart.add"}},
    unresolved=("com.shop.Cart.check", "check"),
    bases={"com.shop.Cart": {"com.shop.Base"}},
)

CPP = Case(
    files={
        "include/geo/shape.h": (
            "#pragma once\n\nnamespace geo {\n\n/// A shape in the plane.\nclass Shape : public Base {\n"
            "public:\n    /// Its area.\n    virtual double area() const { return 0; }\n"
            "    void grow(double by);\n};\n\n}  // namespace geo\n"),
        "src/shape.cpp": (
            "#include \"geo/shape.h\"\n\n"
            "namespace geo {\n\n"
            "// Makes the shape bigger.\n"
            "void Shape::grow(double by) {\n"
            "    area();\n"
            "    scale(by);\n"
            "    thing->grow(by);\n"
            "}\n\n"
            "/* Scales a length. */\n"
            "double scale(double v) { return v; }\n\n"
            "}  // namespace geo\n"),
        "src/main.cpp": (
            "#include \"geo/shape.h\"\n\n"
            "int main() {\n"
            "    geo::Shape s;\n"
            "    s.grow(2);\n"
            "    return 0;\n"
            "}\n"),
    },
    defs={"include.geo.shape.geo.Shape": ("class", 6), "include.geo.shape.geo.Shape.area": ("method", 9),
          "shape.geo.Shape.grow": ("method", 6), "shape.geo.scale": ("function", 13), "main.main": ("function", 3)},
    docs={"include.geo.shape.geo.Shape": "A shape in the plane.", "include.geo.shape.geo.Shape.area": "Its area.",
          "shape.geo.Shape.grow": "Makes the shape bigger.", "shape.geo.scale": "Scales a length."},
    calls={"include.geo.shape.geo.Shape.area": {"shape.geo.Shape.grow"}, "shape.geo.scale": {"shape.geo.Shape.grow"},
           "shape.geo.Shape.grow": {"main.main"}},
    unresolved=("shape.geo.Shape.grow", "grow"),
)

C = Case(
    files={
        "lib/list.h": "/* A list of ints. */\nstruct list {\n    int *items;\n    int len;\n};\n\n"
                      "int list_len(const struct list *l);\n",
        "lib/list.c": ("#include \"list.h\"\n\n"
                       "// The number of items.\n"
                       "int list_len(const struct list *l) {\n    return l->len;\n}\n"),
        "main.c": ("#include \"lib/list.h\"\n\n"
                   "int main(void) {\n"
                   "    struct list l = {0};\n"
                   "    ops.list_len(&l);\n"
                   "    return list_len(&l);\n"
                   "}\n"),
    },
    defs={"lib.list.list": ("class", 2), "lib.list.list.len": ("attribute", 4), "lib.list.list_len": ("function", 4),
          "main.main": ("function", 3)},
    docs={"lib.list.list": "A list of ints.", "lib.list.list_len": "The number of items."},
    calls={"lib.list.list_len": {"main.main"}},
    unresolved=("lib.list.list_len", "list_len"),
)

CSHARP = Case(
    files={
        "src/Util/Strings.cs": "namespace Shop.Util\n{\n    /// <summary>String helpers.</summary>\n"
                               "    public static class Strings\n    {\n"
                               "        /// <summary>Trims a string.</summary>\n"
                               "        public static string Trim(string s) => s;\n    }\n}\n",
        "src/Core/Cart.cs": (
            "using System;\n"
            "using Shop.Util;\n"
            "using Text = Shop.Util.Strings;\n\n"
            "namespace Shop.Core\n{\n"
            "    /// <summary>A shopping cart.</summary>\n"
            "    public class Cart : Base\n    {\n"
            "        private Pricer pricer;\n\n"
            "        // Adds an item.\n"
            "        public void Add(string item)\n        {\n"
            "            Check(item);\n"
            "            pricer.Price(item);\n"
            "            Text.Trim(item);\n"
            "            base.Log(item);\n"
            "            mystery.Check(item);\n"
            "        }\n\n"
            "        public int Total() => 0;\n"
            "        public int Total(int tax) => tax;\n"
            "        private void Check(string i) {}\n"
            "    }\n\n"
            "    public class Base { protected void Log(string m) {} }\n"
            "    class Pricer { public int Price(string i) => 1; }\n"
            "}\n"),
    },
    defs={"Shop.Core.Cart": ("class", 8), "Shop.Core.Cart.Add": ("method", 13), "Shop.Core.Cart.Check": ("method", 24),
          "Shop.Util.Strings.Trim": ("method", 7), "Shop.Core.Cart.pricer": ("attribute", 10)},
    docs={"Shop.Core.Cart": "A shopping cart.", "Shop.Core.Cart.Add": "Adds an item.",
          "Shop.Util.Strings.Trim": "Trims a string."},
    calls={"Shop.Core.Cart.Check": {"Shop.Core.Cart.Add"}, "Shop.Util.Strings.Trim": {"Shop.Core.Cart.Add"},
           "Shop.Core.Pricer.Price": {"Shop.Core.Cart.Add"}, "Shop.Core.Base.Log": {"Shop.Core.Cart.Add"}},
    unresolved=("Shop.Core.Cart.Check", "Check"),
    bases={"Shop.Core.Cart": {"Shop.Core.Base"}},
)

KOTLIN = Case(
    files={
        "src/main/kotlin/com/shop/util/Strings.kt": "package com.shop.util\n\n/** Trims a string. */\n"
                                                    "fun trimmed(s: String): String = s.trim()\n",
        "src/main/kotlin/com/shop/Cart.kt": (
            "package com.shop\n\n"
            "import com.shop.util.trimmed as clean\n\n"
            "/** A shopping cart. */\n"
            "class Cart(private val pricer: Pricer) : Base() {\n"
            "    /** Adds one item. */\n"
            "    fun add(item: String) {\n"
            "        check(item)\n"
            "        pricer.price(item)\n"
            "        clean(item)\n"
            "        mystery.check(item)\n"
            "    }\n\n"
            "    private fun check(item: String) {}\n\n"
            "    companion object {\n"
            "        fun empty(): Cart = Cart(Pricer())\n"
            "    }\n"
            "}\n\n"
            "open class Base\n"
            "class Pricer { fun price(item: String): Int = 1 }\n"),
    },
    defs={"com.shop.Cart": ("class", 6), "com.shop.Cart.add": ("method", 8), "com.shop.Cart.check": ("method", 15),
          "com.shop.util.trimmed": ("function", 4), "com.shop.Cart.empty": ("method", 18)},
    docs={"com.shop.Cart": "A shopping cart.", "com.shop.Cart.add": "Adds one item.",
          "com.shop.util.trimmed": "Trims a string."},
    calls={"com.shop.Cart.check": {"com.shop.Cart.add"}, "com.shop.util.trimmed": {"com.shop.Cart.add"},
           "com.shop.Pricer.price": {"com.shop.Cart.add"}, "com.shop.Cart": {"com.shop.Cart.empty"}},
    unresolved=("com.shop.Cart.check", "check"),
    bases={"com.shop.Cart": {"com.shop.Base"}},
)

RUBY = Case(
    files={
        "lib/shop/cart.rb": (
            "module Shop\n"
            "  # A shopping cart.\n"
            "  class Cart < Base\n"
            "    # Adds one item.\n"
            "    def add(item)\n"
            "      check(item)\n"
            "      self.total\n"
            "      log(item)\n"
            "      mystery.check(item)\n"
            "    end\n\n"
            "    def total\n      0\n    end\n\n"
            "    private\n\n"
            "    def check(item); end\n"
            "  end\n\n"
            "  class Base\n    def log(message); end\n  end\nend\n"),
    },
    defs={"Shop": ("module", 1), "Shop.Cart": ("class", 3), "Shop.Cart.add": ("method", 5),
          "Shop.Cart.check": ("method", 18), "Shop.Base.log": ("method", 22)},
    docs={"Shop.Cart": "A shopping cart.", "Shop.Cart.add": "Adds one item."},
    calls={"Shop.Cart.check": {"Shop.Cart.add"}, "Shop.Cart.total": {"Shop.Cart.add"},
           "Shop.Base.log": {"Shop.Cart.add"}},
    unresolved=("Shop.Cart.check", "check"),
    bases={"Shop.Cart": {"Shop.Base"}},
)

PHP = Case(
    files={
        "src/Util/Strings.php": "<?php\nnamespace Shop\\Util;\n\nclass Strings\n{\n    /** Trims a string. */\n"
                                "    public static function trim(string $s): string { return $s; }\n}\n",
        "src/Core/Cart.php": (
            "<?php\n"
            "namespace Shop\\Core;\n\n"
            "use Shop\\Util\\{Strings, Maths as M};\n\n"
            "/**\n * A shopping cart.\n */\n"
            "class Cart extends Base\n{\n"
            "    private Pricer $pricer;\n\n"
            "    /** Adds one item. */\n"
            "    public function add(string $item): void\n    {\n"
            "        $this->check($item);\n"
            "        Strings::trim($item);\n"
            "        $this->pricer->price($item);\n"
            "        $mystery->check($item);\n"
            "        helper();\n"
            "    }\n\n"
            "    private function check(string $item): void {}\n"
            "}\n\n"
            "class Pricer { public function price($item) { return 1; } }\n\n"
            "// A helper.\nfunction helper() { return 1; }\n"),
    },
    defs={"Shop.Core.Cart": ("class", 9), "Shop.Core.Cart.add": ("method", 14), "Shop.Core.Cart.check": ("method", 23),
          "Shop.Util.Strings.trim": ("method", 7), "Shop.Core.helper": ("function", 29)},
    docs={"Shop.Core.Cart": "A shopping cart.", "Shop.Core.Cart.add": "Adds one item.", "Shop.Core.helper": "A helper.",
          "Shop.Util.Strings.trim": "Trims a string."},
    calls={"Shop.Core.Cart.check": {"Shop.Core.Cart.add"}, "Shop.Util.Strings.trim": {"Shop.Core.Cart.add"},
           "Shop.Core.Pricer.price": {"Shop.Core.Cart.add"}, "Shop.Core.helper": {"Shop.Core.Cart.add"}},
    unresolved=("Shop.Core.Cart.check", "check"),
)

SWIFT = Case(
    files={
        "Sources/Shop/Cart.swift": (
            "import Foundation\n\n"
            "/// A shopping cart.\n"
            "class Cart: Base {\n"
            "    /// Its pricer.\n"
            "    let pricer: Pricer\n\n"
            "    init(pricer: Pricer) { self.pricer = pricer }\n\n"
            "    // Adds one item.\n"
            "    func add(_ item: String) {\n"
            "        check(item)\n"
            "        pricer.price(item)\n"
            "        mystery.check(item)\n"
            "    }\n\n"
            "    private func check(_ item: String) {}\n"
            "}\n\n"
            "class Base {}\n"
            "struct Pricer { func price(_ item: String) -> Int { return 1 } }\n"
            "extension Cart { func twice() { add(\"a\"); add(\"b\") } }\n"),
    },
    defs={"Cart": ("class", 4), "Cart.add": ("method", 11), "Cart.check": ("method", 17), "Cart.pricer": ("attribute", 6),
          "Cart.twice": ("method", 22), "Pricer.price": ("method", 21)},
    docs={"Cart": "A shopping cart.", "Cart.add": "Adds one item.", "Cart.pricer": "Its pricer."},
    calls={"Cart.check": {"Cart.add"}, "Pricer.price": {"Cart.add"}, "Cart.add": {"Cart.twice"}},
    unresolved=("Cart.check", "check"),
    bases={"Cart": {"Base"}},
)

SCALA = Case(
    files={
        "src/main/scala/com/shop/util/Strings.scala": "package com.shop.util\n\nobject Strings {\n"
                                                      "  /** Trims a string. */\n  def trim(s: String): String = s\n}\n",
        "src/main/scala/com/shop/Cart.scala": (
            "package com.shop\n\n"
            "import com.shop.util.{Strings => S}\n\n"
            "/** A shopping cart. */\n"
            "class Cart(pricer: Pricer) extends Base with Totals {\n"
            "  /** Adds one item. */\n"
            "  def add(item: String): Unit = {\n"
            "    check(item)\n"
            "    pricer.price(item)\n"
            "    S.trim(item)\n"
            "    mystery.check(item)\n"
            "  }\n\n"
            "  private def check(item: String): Unit = {}\n"
            "}\n\n"
            "class Base\n"
            "trait Totals\n"
            "class Pricer { def price(item: String): Int = 1 }\n"),
    },
    defs={"com.shop.Cart": ("class", 6), "com.shop.Cart.add": ("method", 8), "com.shop.Cart.check": ("method", 15),
          "com.shop.util.Strings.trim": ("method", 5)},
    docs={"com.shop.Cart": "A shopping cart.", "com.shop.Cart.add": "Adds one item.",
          "com.shop.util.Strings.trim": "Trims a string."},
    calls={"com.shop.Cart.check": {"com.shop.Cart.add"}, "com.shop.Pricer.price": {"com.shop.Cart.add"},
           "com.shop.util.Strings.trim": {"com.shop.Cart.add"}},
    unresolved=("com.shop.Cart.check", "check"),
    bases={"com.shop.Cart": {"com.shop.Base", "com.shop.Totals"}},
)

CASES = {"rust": RUST, "java": JAVA, "cpp": CPP, "c": C, "csharp": CSHARP, "kotlin": KOTLIN, "ruby": RUBY, "php": PHP,
         "swift": SWIFT, "scala": SCALA}


def _one(g, qname):
    found = [d for d in g.find(qname, values=True) if d.qname == qname]
    assert found, f"no definition {qname}"
    return found[0]


@pytest.mark.parametrize("language", CASES)
def test_definitions_calls_and_docs(tmp_path, language):
    case = CASES[language]
    g = build(tmp_path, case.files)
    for qname, (kind, line) in case.defs.items():
        d = _one(g, qname)
        assert (d.kind, d.line) == (kind, line), qname
    for qname, doc in case.docs.items():
        assert _one(g, qname).doc == doc, qname
    for callee, callers in case.calls.items():
        found, _ = g.in_edges(_one(g, callee))
        assert {e.src.qname for e in found} == callers, callee
    qname, name = case.unresolved
    edges, unresolved = g.in_edges(_one(g, qname))
    assert unresolved >= 1  # a call by that name on a receiver the code gives no type: counted, not guessed
    assert all(e.name == name for e in edges)
    for cls, bases in case.bases.items():
        assert {b.qname for b in g.bases(cls)} == bases


def test_overloads_are_listed_not_merged():
    graph_ = extract("src/main/java/com/shop/Cart.java", JAVA.files["src/main/java/com/shop/Cart.java"])
    totals = [d for d in graph_.defs if d.qname == "com.shop.Cart.total"]
    assert [(d.line, d.signature) for d in totals] == [(23, "public int total()"), (24, "public int total(int tax)")]


def test_a_name_in_two_languages_gives_both(tmp_path):
    g = build(tmp_path, {"go/parse.go": "package parse\n\n// Parse parses.\nfunc Parse(s string) int { return 0 }\n",
                         "src/parse.rs": "/// Parses.\npub fn parse(s: &str) -> u32 { 0 }\n",
                         "src/Parse.java": "package x;\n\nclass Parse {}\n"})
    assert sorted((d.path, d.qname) for d in g.find("Parse")) == [("go/parse.go", "go.parse.Parse"),
                                                                   ("src/Parse.java", "x.Parse")]
    assert [(d.path, d.qname) for d in g.find("parse")] == [("src/parse.rs", "parse.parse")]


def test_a_parse_error_keeps_the_rest_of_the_file():
    text = ("/// Before.\npub fn before() {}\n\nfn broken( {\n    let = ;\n}\n\n"
            "/// After.\npub fn after() -> u32 { before(); 1 }\n")
    defs = {d.name: d for d in extract("src/lib.rs", text).defs}
    assert defs["before"].doc == "Before." and defs["after"].line == 9 and defs["after"].doc == "After."


def test_c_and_cpp_calls_resolve_through_includes_only(tmp_path):
    g = build(tmp_path, {"lib/util.h": "int twice(int x) { return 2 * x; }\n",
                         "other/util2.h": "int thrice(int x) { return 3 * x; }\n",
                         "app.cpp": "#include \"lib/util.h\"\n\nint main() { twice(1); thrice(2); return 0; }\n"})
    callees = {e.name: [r.path for r in found] for e, found in g.out_edges(_one(g, "app.main"))}
    assert callees == {"twice": ["lib/util.h"], "thrice": []}  # thrice's header is not included


def test_a_language_added_with_only_a_query_file_and_a_table(tmp_path, monkeypatch):
    queries = tmp_path / "queries"
    queries.mkdir()
    (queries / "lua.scm").write_text(
        "(function_declaration name: [(identifier) (dot_index_expression)] @name) @definition.function\n"
        "(function_call name: (_) @name) @reference.call\n")
    for name in CASES:  # the shipped languages stay readable
        (queries / f"{name}.scm").write_text(tags._queries_dir().joinpath(f"{name}.scm").read_text())
    table = grammars.table_bytes() + b'\n[lua]\nextensions = [".lua"]\nfunction_types = ["function_declaration"]\n' \
                                      b'leading_types = ["comment"]\ngraph = true\n' \
                                      b'[lua.outline]\nreturn = ["return_statement"]\nbranch = ["if_statement"]\n'
    assert "lua" in tomllib.loads(table.decode())
    monkeypatch.setattr(grammars, "table_bytes", lambda: table)
    monkeypatch.setattr(tags, "_queries_dir", lambda: queries)
    caches = (chunker._table, graph.graph_languages, tags.settings, tags.query, outline.kinds_of)
    for cached in caches:
        cached.cache_clear()
    source = ("-- Greets someone.\nlocal function greet(name)\n  local a = 1\n  local b = 2\n  if name then\n"
              "    return name\n  end\nend\n\nfunction M.run()\n  greet('x')\n  other()\nend\n")
    try:
        g = build(tmp_path, {"game/main.lua": source})
        greet = _one(g, "game.main.greet")
        assert (greet.kind, greet.line, greet.doc) == ("function", 2, "Greets someone.")
        assert {e.src.qname for e in g.in_edges(greet)[0]} == {"game.main.M.run"}
        shown = outline.outline("game/main.lua", source, greet.line, greet.end_line)
        assert shown is not None and {line.number: line.kind for line in shown.lines} == {
            2: "first", 5: "branch", 6: "return"}, "its outline, from the table alone"
    finally:
        for cached in caches:
            cached.cache_clear()


def test_a_broken_query_file_is_a_typed_error(tmp_path, monkeypatch):
    (tmp_path / "rust.scm").write_text("(function_item nme: (identifier) @name) @definition.function\n")
    monkeypatch.setattr(tags, "_queries_dir", lambda: tmp_path)
    tags.query.cache_clear()
    try:
        with pytest.raises(tags.QueryError, match="rust"):
            extract("src/lib.rs", "fn a() {}\n")
    finally:
        tags.query.cache_clear()


def test_c_macros_that_look_like_calls_and_a_header_included_everywhere(tmp_path):
    files = {"common/util.h": "#ifndef UTIL_H\n#define UTIL_H\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n"
                              "#define CHECK(x) do { if (!(x)) abort(); } while (0)\n"
                              "/* Clamps v. */\nstatic inline int clamp(int v) { return MAX(v, 0); }\n#endif\n"}
    for i in range(30):
        files[f"lib/part{i}.c"] = (f"#include \"common/util.h\"\n\nFOR_EACH(item, items) {{ touch(item); }}\n\n"
                                   f"int part{i}(int v) {{\n    CHECK(v > 0);\n    LOG(INFO) << v;\n"
                                   f"    return clamp(MAX(v, {i}));\n}}\n")
    g = build(tmp_path, files)
    clamp = _one(g, "common.util.clamp")
    assert clamp.doc == "Clamps v." and {d.kind for d in g.find("MAX")} == {"function"}  # a macro, by its name
    callers, _ = g.in_edges(clamp)
    assert sorted(e.src.qname for e in callers) == sorted(f"lib.part{i}.part{i}" for i in range(30))
    assert {e.src.qname for e in g.in_edges(_one(g, "common.util.CHECK"))[0]} >= {"lib.part3.part3"}
    for i in (0, 29):  # each file keeps its function through the macros the grammar cannot read
        assert _one(g, f"lib.part{i}.part{i}").line == 5
    callees = {e.name: found for e, found in g.out_edges(_one(g, "lib.part7.part7"))}
    assert callees["LOG"] == [] and [d.path for d in callees["MAX"]] == ["common/util.h"]


@pytest.mark.parametrize("path, unit", [
    ("src/main/java/gen/Big.java", "    /** Doc {i}. */\n    public int m{i}(int v) {{\n        return m{j}(v) + 1;\n    }}\n"),
    ("gen/big.c", "/* Doc {i}. */\nint f{i}(int v) {{\n    return f{j}(v) + 1;\n}}\n"),
])
def test_a_generated_file_of_20000_lines_builds_fast(path, unit):
    body = "".join(unit.format(i=i, j=max(i - 1, 0)) for i in range(5000))
    text = f"package gen;\n\npublic class Big {{\n{body}}}\n" if path.endswith(".java") else body
    assert len(text.splitlines()) >= 20000
    started = time.perf_counter()
    file_graph = extract(path, text)
    assert time.perf_counter() - started < 5
    functions = [d for d in file_graph.defs if d.kind in ("function", "method")]
    assert len(functions) == 5000 and functions[4999].doc == "Doc 4999."
    assert sum(e.target is not None for e in file_graph.edges if e.kind == "call") == 5000


def test_a_broken_query_file_stops_the_graph_with_its_error(tmp_path, monkeypatch):
    (tmp_path / "queries").mkdir()
    (tmp_path / "queries" / "java.scm").write_text("(class_declaration nme: (identifier) @name) @definition.class\n")
    monkeypatch.setattr(tags, "_queries_dir", lambda: tmp_path / "queries")
    tags.query.cache_clear()
    try:
        with pytest.raises(tags.QueryError, match="java"):  # not swallowed as one file's quirk
            build(tmp_path, {"src/A.java": "package a;\n\nclass A {}\n"})
    finally:
        tags.query.cache_clear()


def test_modules_imported_whole_resolve_names_they_define(tmp_path):
    g = build(tmp_path, {
        "src/util.rs": "pub fn helper() -> u32 { 1 }\n",
        "src/run.rs": "use crate::util::*;\n\npub fn run() -> u32 { helper() + missing() }\n",
        "src/main/java/com/x/Widget.java": "package com.x;\n\npublic class Widget { public void draw() {} }\n",
        "src/main/java/com/y/App.java": "package com.y;\n\nimport com.x.*;\n\nclass App {\n"
                                        "    void go() { Widget w = new Widget(); w.draw(); }\n}\n",
        "src/Util.cs": "namespace Shop.Util { public static class Strings { public static string Trim(string s) => s; } }\n",
        "src/App.cs": "using Shop.Util;\n\nnamespace Shop.App { class A { void Go() { Strings.Trim(\"x\"); } } }\n",
    })
    callees = {qname: {e.name: [r.qname for r in found] for e, found in g.out_edges(_one(g, qname))}
               for qname in ("run.run", "com.y.App.go", "Shop.App.A.Go")}
    assert callees["run.run"] == {"helper": ["util.helper"], "missing": []}
    assert callees["com.y.App.go"] == {"Widget": ["com.x.Widget"], "draw": ["com.x.Widget.draw"]}
    assert callees["Shop.App.A.Go"] == {"Trim": ["Shop.Util.Strings.Trim"]}


def test_a_cpp_member_defined_in_a_file_no_one_includes(tmp_path):
    g = build(tmp_path, {
        "src/scanner.h": "namespace yaml {\nclass Scanner {\n public:\n  void next();\n  void scan_anchor();\n};\n}\n",
        "src/scanner.cpp": "#include \"scanner.h\"\nnamespace yaml {\nvoid Scanner::next() { scan_anchor(); }\n}\n",
        "src/scantoken.cpp": "#include \"scanner.h\"\nnamespace yaml {\nvoid Scanner::scan_anchor() {}\n}\n",
    })
    callees = {e.name: [r.path for r in found] for e, found in g.out_edges(_one(g, "scanner.yaml.Scanner.next"))}
    assert callees == {"scan_anchor": ["src/scantoken.cpp"]}


def test_rust_super_inside_an_inline_module_is_the_file(tmp_path):
    g = build(tmp_path, {"src/parser.rs": (
        "pub struct Parser;\n\nimpl Parser {\n    pub fn new() -> Self { Parser }\n}\n\n"
        "#[cfg(test)]\nmod tests {\n    use super::Parser as P;\n\n"
        "    #[test]\n    fn builds() {\n        P::new();\n    }\n}\n")})
    callees = {e.name: [r.qname for r in found] for e, found in g.out_edges(_one(g, "parser.tests.builds"))}
    assert callees == {"new": ["parser.Parser.new"]}


def test_scala_package_objects_and_operator_methods_are_definitions():
    text = ("package object os extends ResourceApi {\n  def root: Path = ???\n}\n\n"
            "class Path {\n  override def /(chunk: String): Path = this\n}\n\n"
            "trait Base {\n  def ++(other: Base): Base\n}\n")
    defs = {(d.qname, d.kind, d.line) for d in extract("os/src/package.scala", text).defs}
    assert {("os", "class", 1), ("os.root", "method", 2), ("Path./", "method", 6),
            ("Base.++", "method", 10)} <= defs


def test_csharp_extension_blocks_hold_the_class_methods_and_define_nothing_themselves():
    text = ("namespace Shop.Text;\n\npublic static class StringExtensions {\n"
            "    extension(string left) {\n"
            "        /// <summary>The bytes of the string.</summary>\n"
            "        public byte[] GetBytes() => Encoding.UTF8.GetBytes(left);\n"
            "    }\n\n"
            "    public static int Count(string s) { int Inner() => 1; return Inner(); }\n}\n")
    defs = {d.qname: d for d in extract("src/StringExtensions.cs", text).defs}
    assert "Shop.Text.StringExtensions.extension" not in defs  # a C# 14 block the grammar reads as a constructor
    got = defs["Shop.Text.StringExtensions.GetBytes"]
    assert (got.kind, got.line, got.doc) == ("method", 6, "The bytes of the string.")
    assert defs["Shop.Text.StringExtensions.Count.Inner"].kind == "function"  # a real local function stays one


def test_scala_anonymous_class_functions_are_methods_and_local_functions_stay_functions():
    text = ("package p\n\nobject A {\n  def f(): Runnable = new Runnable {\n"
            "    override def run(): Unit = { g() }\n  }\n"
            "  def g(): Unit = {\n    def local(): Int = 1\n    local()\n  }\n}\n")
    graph_ = extract("p/A.scala", text)
    kinds = {d.qname: d.kind for d in graph_.defs}
    assert (kinds["p.A.f.run"], kinds["p.A.g.local"]) == ("method", "function")
    assert {(graph_.defs[e.src].qname, e.target) for e in graph_.edges if e.kind == "call" and e.name == "g"} == {
        ("p.A.f.run", "p.A.g")}


def test_swift_a_method_called_on_an_enum_case_is_the_enums(tmp_path):
    g = build(tmp_path, {
        "Sources/Args/Inversion.swift": (
            "enum FlagInversion {\n  case prefixedNo\n  case prefixedEnableDisable, other\n"
            "  static let shared = Other()\n}\n\nextension FlagInversion {\n  func namePair() -> Int { 1 }\n}\n"),
        "Tests/ArgsTests/InversionTests.swift": (
            "func testPairs() {\n  FlagInversion.prefixedNo.namePair()\n"
            "  FlagInversion.other.namePair()\n  FlagInversion.shared.namePair()\n}\n")})
    assert _one(g, "FlagInversion.other").kind == "constant"
    found, _ = g.in_edges(_one(g, "FlagInversion.namePair"))
    assert sorted(e.line for e in found) == [2, 3]  # `shared` is no case: its type is not the enum's for certain


def test_a_call_through_a_field_of_declared_type_is_its_types_in_another_file(tmp_path):
    g = build(tmp_path, {
        "Sources/Shop/Cart.swift": (
            "struct Pricer {\n  func price() -> Int { 1 }\n}\n\nstruct Cart {\n"
            "  static var shared: Cart { Cart() }\n  var pricer: Pricer\n  var mystery = make()\n}\n"),
        "Sources/App/Main.swift": "func run(cart: Cart) {\n  Cart.shared.pricer.price()\n  cart.pricer.price()\n"
                                  "  cart.mystery.price()\n  cart.pricer()\n}\n"})
    found, _ = g.in_edges(_one(g, "Pricer.price"))
    assert sorted(e.line for e in found) == [2, 3]  # `mystery` declares no type: its call is not placed
    called = {(e.line, tuple(d.qname for d in found)) for e, found in g.out_edges(_one(g, "run"))}
    assert (5, ()) in called  # calling the field itself is no call of its type


CONSTRUCTED = {  # a language's file: `x` constructed, `y` from a call of a function, each then called
    "kotlin": ("src/p/Shop.kt", ("package p\nclass Cart { fun total() = 1 }\nfun make() = 1\n"
               "fun run() {\n  val x = Cart()\n  x.total()\n  val y = make()\n  y.total()\n}\n")),
    "swift": ("Sources/Shop/Shop.swift", ("struct Cart { func total() -> Int { 1 } }\nfunc make() -> Int { 1 }\n"
              "func run() {\n  let x = Cart()\n  x.total()\n  let y = make()\n  y.total()\n}\n")),
    "scala": ("src/p/Shop.scala", ("package p\nclass Cart { def total() = 1 }\nobject Run {\n"
              "  def run() = {\n    val x = new Cart()\n    x.total()\n    val y = make()\n    y.total()\n  }\n}\n")),
    "java": ("src/p/Shop.java", ("package p;\nclass Cart { int total() { return 1; } }\nclass Run {\n"
             "  void run() {\n    var x = new Cart();\n    x.total();\n    var y = make();\n    y.total();\n  }\n}\n")),
    "csharp": ("src/Shop.cs", ("namespace P;\nclass Cart { int Total() { return 1; } }\nclass Run {\n"
               "  void Go() {\n    var x = new Cart();\n    x.Total();\n    var y = Make();\n    y.Total();\n  }\n}\n")),
    "cpp": ("src/shop.cpp", ("class Cart { public: int total() { return 1; } };\nint make() { return 1; }\n"
            "void run() {\n  auto x = Cart();\n  x.total();\n  auto y = make();\n  y.total();\n}\n")),
    "rust": ("src/shop.rs", ("struct Cart {}\nimpl Cart { fn total(&self) -> u32 { 1 } }\nfn make() -> u32 { 1 }\n"
             "fn run() {\n  let x = Cart {};\n  x.total();\n  let y = make();\n  y.total();\n}\n")),
}


@pytest.mark.parametrize("language", CONSTRUCTED)
def test_a_variable_constructed_without_a_declared_type_is_its_types(language):
    path, text = CONSTRUCTED[language]
    lines = text.splitlines()
    x_call = next(i for i, line in enumerate(lines, 1) if line.strip().lower().startswith("x.total"))
    y_call = next(i for i, line in enumerate(lines, 1) if line.strip().lower().startswith("y.total"))
    targets = {e.line: e.target for e in extract(path, text).edges if e.kind == "call" and e.name.lower() == "total"}
    assert targets[x_call] is not None and targets[x_call].lower().endswith("cart.total")
    assert targets[y_call] is None  # a function's result: no type for certain, counted unresolved


def test_a_constructed_variable_is_unknown_where_its_type_is_not_certain():
    text = ("package p\nclass Cart { fun total() = 1 }\nclass Till { fun total() = 2 }\nfun Helper() = 1\n"
            "fun run(flag: Boolean) {\n  if (flag) {\n    val x = Cart()\n    x.total()\n  } else {\n"
            "    val x = Till()\n    x.total()\n  }\n  val h = Helper()\n  h.total()\n  val c: Till = Cart()\n"
            "  c.total()\n}\n")
    targets = {e.line: e.target for e in extract("src/p/Run.kt", text).edges if e.name == "total"}
    assert targets[8] is None and targets[11] is None  # one name, two types in one function: neither
    assert targets[14] is None  # `Helper()` is the file's function, not a class
    assert targets[16] == "p.Till.total"  # a declared type wins over the initializer


def test_a_field_constructed_in_its_class_types_calls_through_it_in_another_file(tmp_path):
    g = build(tmp_path, {
        "src/main/kotlin/p/Shop.kt": "package p\n\nclass Pricer {\n  fun price() = 1\n}\n\n"
                                    "class Cart {\n  val pricer = Pricer()\n  fun sum() = pricer.price()\n}\n",
        "src/main/kotlin/p/Run.kt": "package p\n\nfun run(cart: Cart) {\n  cart.pricer.price()\n}\n"})
    found, _ = g.in_edges(_one(g, "p.Pricer.price"))
    assert sorted((e.path.rsplit("/", 1)[1], e.line) for e in found) == [("Run.kt", 4), ("Shop.kt", 9)]
