"""The flow lead and the relation check, over a real graph (tree-sitter, SQLite) of a small tree."""

from __future__ import annotations

from codeasst.answer import flow
from codeasst.answer.checking import LineChecker
from codeasst.answer.grounding import Excerpt
from codeasst.answer.relations import RelationCheck, stated
from codeasst.index.chunkdb import Hit
from codeasst.retrieve.fuse import Fused
from tests.unit.test_graph import build

TREE = {
    "shop/orders.py": (
        '"""Orders."""\n'
        "from shop.pricing import total_price\n"
        "from shop.errors import OutOfStock\n\n\n"
        "def place_order(cart):\n"
        '    """Place an order for a cart."""\n'
        "    check_stock(cart)\n"
        "    return Receipt(total_price(cart))\n\n\n"
        "def check_stock(cart):\n"
        '    """Refuse items that are out of stock."""\n'
        "    if not cart:\n"
        "        raise OutOfStock('empty')\n\n\n"
        "class Receipt:\n"
        "    def __init__(self, amount):\n"
        "        self.amount = amount\n"
    ),
    "shop/pricing.py": (
        "def total_price(cart):\n"
        '    """The total price of a cart, discounts applied."""\n'
        "    return apply_discount(sum(cart))\n\n\n"
        "def apply_discount(amount):\n"
        '    """Ten percent off large amounts."""\n'
        "    return amount * 0.9 if amount > 100 else amount\n"
    ),
    "shop/errors.py": "class ShopError(Exception):\n    pass\n\n\nclass OutOfStock(ShopError):\n    pass\n",
    "shop/api.py": "from shop.orders import place_order\n\n\ndef checkout(cart):\n    return place_order(cart)\n",
}


def hit(path, start, end, kind, name):
    return Hit("h", path, start, end, kind, name, "python", "", 0.0, "implementation")


def test_the_flow_goes_from_the_entry_to_the_definition_that_does_the_work(tmp_path):
    g = build(tmp_path, TREE)
    question = "How does placing an order apply the discount?"
    assert flow.asks_for_flow(question) and not flow.asks_for_flow("Where is apply_discount defined?")
    path = flow.best_flow(g, [hit("shop/pricing.py", 1, 8, "file", "shop.pricing"),
                              hit("shop/orders.py", 1, 20, "file", "shop.orders")], question)
    assert [d.qname for d in path.chain] == ["shop.orders.place_order", "shop.pricing.total_price",
                                             "shop.pricing.apply_discount"]
    text = path.render()
    assert "2. calls (at line 9) `total_price` at shop/pricing.py:1: The total price of a cart" in text
    assert "3. calls (at line 3) `apply_discount` at shop/pricing.py:6: Ten percent off" in text
    whole = Fused(hit("shop/orders.py", 1, 20, "file", "shop.orders"), 0.1, ("dense",))
    hits = flow.chain_hits(tmp_path, path.chain, [whole], 1200)
    assert hits[0] is whole  # a hit that shows a definition whole stands for it
    assert [h.hit.start_line for h in hits[1:]] == [1, 6] and hits[2].hit.text.startswith("def apply_discount")


def test_a_question_about_uses_lists_the_callers(tmp_path):
    g = build(tmp_path, TREE)
    question = "Where is place_order used?"
    path = flow.best_flow(g, [hit("shop/orders.py", 6, 9, "function", "shop.orders.place_order")], question)
    assert "Called by: `checkout` (shop/api.py:5)" in path.render()


def test_a_module_hit_enters_at_the_definition_the_question_names_in_words(tmp_path):
    g = build(tmp_path, TREE)
    (entry, *_) = flow.candidates(g, [hit("shop/pricing.py", 1, 8, "file", "shop.pricing")],
                                  "How is the discount applied?")
    assert entry.qname == "shop.pricing.apply_discount"


def test_recursion_ends_the_walk(tmp_path):
    g = build(tmp_path, {"r.py": "def walk(n):\n    return walk(n - 1) + step(n)\n\n\ndef step(n):\n    return walk(n)\n"})
    (entry,) = g.find("walk")
    path = flow.flow(g, entry, "how does walk step?")
    assert [d.qname for d in path.chain] == ["r.walk", "r.step"]


def test_relations_are_read_from_sentences():
    assert [(r.kind, r.subject, r.object) for r in stated("`place_order` calls `total_price` to sum it.")] == \
        [("calls", "place_order", "total_price")]
    assert [(r.kind, r.subject, r.object) for r in stated("The `total_price()` function is called by `place_order`.")] \
        == [("called_by", "total_price", "place_order")]
    assert stated("It calls the pricing module.") == []  # no code names: nothing to check


def judge(tmp_path, sentence):
    return RelationCheck(build(tmp_path, TREE), tmp_path).why_wrong(sentence)


def test_true_relations_pass(tmp_path):
    g = build(tmp_path, TREE)
    check = RelationCheck(g, tmp_path)
    for sentence in ["`place_order` calls `check_stock` first.",
                     "`apply_discount` is called by `total_price`.",
                     "`place_order` calls `apply_discount` through the total.",  # one definition between
                     "`place_order` returns a `Receipt`.",
                     "`check_stock` raises `OutOfStock` for an empty cart.",
                     "`place_order` raises `OutOfStock` when the cart is empty.",  # through check_stock
                     "`OutOfStock` inherits from `ShopError`.",
                     "`place_order` uses `total_price` to sum the cart.",
                     "`apply_discount` is used by `place_order`.",  # through total_price
                     "`OutOfStock` is a subclass of `Exception`.",  # however far up
                     "`unknown_thing` calls `place_order`."]:  # a subject the graph does not know: not judged
        assert check.why_wrong(sentence) is None, sentence


def test_false_and_backwards_relations_are_caught(tmp_path):
    g = build(tmp_path, TREE)
    check = RelationCheck(g, tmp_path)
    assert check.why_wrong("`total_price` calls `place_order`.").startswith("backwards")
    assert check.why_wrong("`place_order` is called by `total_price`.").startswith("backwards")
    assert check.why_wrong("`check_stock` calls `apply_discount`.") == \
        "the code shows no call where `check_stock` calls `apply_discount`"
    assert check.why_wrong("`total_price` returns a `Receipt`.") is not None
    assert check.why_wrong("`apply_discount` raises `OutOfStock`.") is not None
    assert check.why_wrong("`ShopError` inherits from `OutOfStock`.") is not None
    assert check.why_wrong("`total_price` uses `place_order`.").startswith("backwards")
    assert check.why_wrong("`check_stock` uses `apply_discount`.") is not None


def test_the_line_checker_leaves_a_false_relation_out_with_why(tmp_path):
    g = build(tmp_path, TREE)
    text = (tmp_path / "shop/pricing.py").read_text()
    excerpt = Excerpt(1, "shop/pricing.py", 1, 8, "shop.pricing", text, 0)
    checker = LineChecker([excerpt], "how is the total computed?", RelationCheck(g, tmp_path).why_wrong)
    shown = checker.feed("`apply_discount` calls `total_price` on the sum. `total_price` calls `apply_discount`"
                         " on the sum.\n") + checker.close()
    assert "`total_price` calls `apply_discount`" in shown and "`apply_discount` calls `total_price`" not in shown
    ((_, why),) = checker.dropped
    assert why.startswith("backwards: the code has `total_price` calling `apply_discount`")


def test_a_definition_the_question_names_is_the_entry(tmp_path):
    g = build(tmp_path, TREE)
    # Retrieval's best hit is elsewhere; the question names where the flow starts.
    path = flow.best_flow(g, [hit("shop/errors.py", 1, 6, "file", "shop.errors")],
                          "What does `checkout` do to apply the discount?")
    assert [d.qname for d in path.chain][:2] == ["shop.api.checkout", "shop.orders.place_order"]
    assert path.chain[-1].qname == "shop.pricing.apply_discount"


JOBS = {
    "app/jobs.py": (
        "from app.util import quote\n\n\n"
        "def run_job(job):\n"
        '    """Run a job."""\n'
        "    print(quote(job.name))\n"
        "    return schedule(job)\n\n\n"
        "def schedule(job):\n"
        '    """Put it on the queue."""\n'
        "    if job.retries > MAX_RETRIES:\n"
        "        raise GiveUp('too many retries')\n"
        "    return push(job)\n"
    ),
    "app/util.py": 'def quote(s):\n    """Quote names of too many retries."""\n    return repr(s)\n',
    # a utility: called from everywhere
    "app/views.py": "from app.util import quote\n\n\n" + "".join(
        f"def view_{n}(x):\n    return quote(x)\n\n\n" for n in range(10)),
}


def test_the_chain_ends_where_the_outline_covers_the_question_and_a_utility_weighs_less(tmp_path, monkeypatch):
    g = build(tmp_path, JOBS)
    question = "How does running a job deal with too many retries?"
    start = [hit("app/jobs.py", 4, 7, "function", "app.jobs.run_job")]
    path = flow.best_flow(g, start, question, tmp_path)
    assert [d.qname for d in path.chain] == ["app.jobs.run_job", "app.jobs.schedule"]
    # without the outline's words, nothing the entry calls covers the question
    assert [d.qname for d in flow.best_flow(g, start, question).chain] == ["app.jobs.run_job"]
    # a utility is not weighed down: its docstring's words win the tie
    monkeypatch.setattr(flow, "UTILITY_FAN_IN", 1000)
    assert [d.qname for d in flow.best_flow(g, start, question, tmp_path).chain][-1] == "app.util.quote"
