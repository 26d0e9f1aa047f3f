"""Outlines in every code language codeasst indexes (issue 52): each language's node kinds are data, its
`[<language>.outline]` table in languages.toml, read by one engine (codeasst.index.outline). One small
function per language, written for it: the lines that carry its logic are kept with their kind (a raise
with its branch, a loop, an attribute set, a return), its locals folded. Emptying a language's table,
or breaking one of its node types, fails its case."""

from __future__ import annotations

import pytest

from codeasst.index import chunker, grammars
from codeasst.index import outline as outline_module
from codeasst.index.outline import outline

# language -> (path, text, the function's first and last line, line -> kind, lines folded)
CASES = {
    "rust": ("src/cart.rs", """impl Cart {
    pub fn fill(&mut self, limit: usize) -> usize {
        let a = 1;
        let b = 2;
        if limit == 0 {
            panic!("a cart needs room");
        }
        let items = load()?;
        for item in items {
            add(item);
        }
        self.limit = limit;
        return a + b;
    }
}
""", 2, 14, {2: "first", 5: "branch", 6: "raise", 8: "raise", 9: "loop", 12: "assign", 13: "return"}, [3, 4]),
    "java": ("src/Cart.java", """class Cart {
    int fill(int limit) {
        int a = 1;
        int b = 2;
        if (limit == 0) {
            throw new IllegalArgumentException("a cart needs room");
        }
        for (String item : load()) {
            add(item);
        }
        this.limit = limit;
        return a + b;
    }
}
""", 2, 13, {2: "first", 5: "branch", 6: "raise", 8: "loop", 11: "assign", 12: "return"}, [3, 4]),
    "c": ("src/cart.c", """int fill(struct cart *cart, int limit) {
    int a = 1;
    int b = 2;
    if (limit == 0) {
        abort();
    }
    for (int i = 0; i < limit; i++) {
        add(cart, i);
    }
    cart->limit = limit;
    free(cart->old);
    return a + b;
}
""", 1, 13, {1: "first", 4: "branch", 5: "raise", 7: "loop", 10: "assign", 11: "delete", 12: "return"}, [2, 3]),
    "cpp": ("src/cart.cpp", """int Cart::fill(int limit) {
    int a = 1;
    int b = 2;
    if (limit == 0) {
        throw std::invalid_argument("a cart needs room");
    }
    for (auto& item : load()) {
        add(item);
    }
    this->limit = limit;
    delete old;
    return a + b;
}
""", 1, 13, {1: "first", 4: "branch", 5: "raise", 7: "loop", 10: "assign", 11: "delete", 12: "return"}, [2, 3]),
    "csharp": ("src/Cart.cs", """class Cart {
    int Fill(int limit) {
        var a = 1;
        var b = 2;
        if (limit == 0) {
            throw new ArgumentException("a cart needs room");
        }
        foreach (var item in Load()) {
            Add(item);
        }
        this.limit = limit;
        return a + b;
    }
}
""", 2, 13, {2: "first", 5: "branch", 6: "raise", 8: "loop", 11: "assign", 12: "return"}, [3, 4]),
    "kotlin": ("src/Cart.kt", """class Cart {
    fun fill(limit: Int): Int {
        val a = 1
        val b = 2
        if (limit == 0) {
            throw IllegalArgumentException("a cart needs room")
        }
        for (item in load()) {
            add(item)
        }
        this.limit = limit
        return a + b
    }
}
""", 2, 13, {2: "first", 5: "branch", 6: "raise", 8: "loop", 11: "assign", 12: "return"}, [3, 4]),
    "swift": ("Sources/Cart.swift", """class Cart {
    func fill(limit: Int) throws -> Int {
        let a = 1
        let b = 2
        guard limit > 0 else {
            throw CartError.noRoom
        }
        for item in load() {
            add(item)
        }
        self.limit = limit
        return a + b
    }
}
""", 2, 13, {2: "first", 5: "branch", 6: "raise", 8: "loop", 11: "assign", 12: "return"}, [3, 4]),
    "scala": ("src/Cart.scala", """class Cart {
  def fill(limit: Int): Int = {
    val a = 1
    val b = 2
    if (limit == 0) {
      throw new IllegalArgumentException("a cart needs room")
    }
    for (item <- load()) {
      add(item)
    }
    this.limit = limit
    return a + b
  }
}
""", 2, 13, {2: "first", 5: "branch", 6: "raise", 8: "loop", 11: "assign", 12: "return"}, [3, 4]),
    "ruby": ("lib/cart.rb", """class Cart
  def fill(limit)
    a = 1
    b = 2
    if limit.zero?
      raise ArgumentError, "a cart needs room"
    end
    load.each do |item|
      add(item)
    end
    @limit = limit
    return a + b
  end
end
""", 2, 13, {2: "first", 5: "branch", 6: "raise", 8: "loop", 11: "assign", 12: "return"}, [3, 4]),
    "php": ("src/Cart.php", """<?php
class Cart {
    public function fill($limit) {
        $a = 1;
        $b = 2;
        if ($limit === 0) {
            throw new InvalidArgumentException("a cart needs room");
        }
        foreach ($this->load() as $item) {
            $this->add($item);
        }
        $this->limit = $limit;
        unset($this->old);
        return $a + $b;
    }
}
""", 3, 15, {3: "first", 6: "branch", 7: "raise", 9: "loop", 12: "assign", 13: "delete", 14: "return"}, [4, 5]),
}


@pytest.mark.parametrize("language", CASES)
def test_a_function_keeps_its_logic_and_folds_its_locals(language):
    path, text, start, end, kinds, folded = CASES[language]
    assert chunker.language_for(path) == language
    found = outline(path, text, start, end, max_lines=30)
    assert found is not None, f"{language} has no outline"
    shown = {line.number: line.kind for line in found.lines}
    assert {n: shown.get(n) for n in kinds} == kinds, "\n".join(found.render())
    assert not set(folded) & set(shown), "\n".join(found.render())


# language -> (path, text, the class's first and last line, attribute and constructor lines, a method body line)
CLASSES = {
    "java": ("src/Cart.java", """class Cart {
    private final int limit;

    Cart(int limit) {
        this.limit = limit;
    }

    int fill() {
        int a = 1;
        return a;
    }
}
""", 1, 12, [2, 4, 5], 9),
    "csharp": ("src/Cart.cs", """class Cart {
    private readonly int limit;

    public Cart(int limit) {
        this.limit = limit;
    }

    public int Fill() {
        var a = 1;
        return a;
    }
}
""", 1, 12, [2, 4, 5], 9),
    "kotlin": ("src/Cart.kt", """class Cart(size: Int) {
    val limit: Int

    init {
        this.limit = size
    }

    fun fill(): Int {
        val a = 1
        return a
    }
}
""", 1, 12, [2, 4, 5], 9),
    "swift": ("Sources/Cart.swift", """class Cart {
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    func fill() -> Int {
        let a = 1
        return a
    }
}
""", 1, 12, [2, 4, 5], 9),
    "php": ("src/Cart.php", """<?php
class Cart {
    private $limit;

    public function __construct($limit) {
        $this->limit = $limit;
    }

    public function fill() {
        $a = 1;
        return $a;
    }
}
""", 2, 13, [3, 5, 6], 10),
    "ruby": ("lib/cart.rb", """class Cart
  LIMIT = 3

  def initialize(limit)
    @limit = limit
  end

  def fill
    a = 1
    a
  end
end
""", 1, 12, [2, 4, 5], 9),
    "rust": ("src/cart.rs", """pub struct Cart {
    limit: usize,
    items: Vec<u32>,
}
""", 1, 4, [2, 3], None),
}


@pytest.mark.parametrize("language", CLASSES)
def test_a_class_shows_its_attributes_and_what_its_constructor_sets(language):
    path, text, start, end, members, body = CLASSES[language]
    found = outline(path, text, start, end, max_lines=12)
    assert found is not None, f"{language} has no outline"
    shown = {line.number for line in found.lines}
    assert set(members) <= shown, "\n".join(found.render())
    assert body not in shown, "a method's body is its own outline's:\n" + "\n".join(found.render())


def test_a_language_without_an_outline_table_has_none(monkeypatch):
    table = grammars.table_bytes().replace(b"[rust.outline]", b"[rust.unread]")
    monkeypatch.setattr(grammars, "table_bytes", lambda: table)
    outline_module.kinds_of.cache_clear()
    try:
        path, text, start, end, _, _ = CASES["rust"]
        assert outline(path, text, start, end) is None
    finally:
        outline_module.kinds_of.cache_clear()
