"""A definition's outline (index/outline.py): the lines that carry its logic, true by construction, within
its budget, for every language the graph reads; and the calls' targets placed in their files as they are
now (tasks/refs.py)."""

from __future__ import annotations

import time

import pytest

from codeasst.index.graphdb import DefRow
from codeasst.index.outline import MAX_LINES, Focus, outline
from codeasst.tasks.refs import _Files, outline_of

RUN = '''import json


def load(path, retries=3):
    """Read a config file, trying again while it is locked."""
    attempts = 0
    while attempts < retries:
        attempts += 1
        try:
            with open(path) as fh:
                data = json.load(fh)
        except BlockingIOError:
            continue
        if not data:
            raise ValueError(
                f"{path} is empty")
        CACHE[path] = data
        return normalise(data)
    return None
'''


def true_lines(text: str, result) -> None:
    lines = text.splitlines()
    assert all(lines[line.number - 1].rstrip() == line.text for line in result.lines)
    assert [line.number for line in result.lines] == sorted(line.number for line in result.lines)


def test_the_loop_its_exits_and_the_raise_with_its_message_are_kept():
    got = outline("cfg.py", RUN, 4, 19, {18: ["cfg.normalise at cfg.py:30"]})
    true_lines(RUN, got)
    kinds = {line.number: line.kind for line in got.lines}
    assert kinds[4] == "first" and kinds[7] == "loop" and kinds[13] == "exit"
    assert kinds[15] == kinds[16] == "raise"  # the message, on the next line, is part of what it says
    assert kinds[18] == "return" and got.lines[-1].number == 19  # a return that calls in: ranked as a return
    assert [line.targets for line in got.lines if line.number == 18] == [("cfg.normalise at cfg.py:30",)]
    assert kinds[17] == "assign"  # CACHE[path] = ...: the store it writes
    assert 6 not in kinds  # a local's assignment is folded
    rendered = "\n".join(got.render())
    assert "    18          return normalise(data)    → cfg.normalise at cfg.py:30" in rendered
    assert "    …7      while attempts < retries:" in rendered  # lines 5-6 folded: the number after is marked
    assert "… " not in rendered  # a fold takes no line of its own
    assert "     8          attempts += 1" in rendered and kinds[8] == "fill"  # a fold never hides one line


def test_the_docstrings_first_sentence_is_the_headings_not_the_outlines():
    text = ('def kron(a, b):\n    """\n    The Kronecker product of two\n    matrices.\n\n'
            '    A Kronecker product of matrices is a matrix.\n    """\n    if not a:\n        return b\n'
            '    return product(a, b)\n')
    got = outline("k.py", text, 1, 10, focus=Focus.of("What is the Kronecker product of two matrices?"))
    shown = {line.number for line in got.lines}
    assert not shown & {2, 3, 4}  # the heading shows "The Kronecker product of two matrices."
    assert 6 in shown  # a later sentence that holds the question's words is the outline's


def test_a_line_of_punctuation_alone_is_folded_not_shown():
    text = "function f(x) {\n  if (x) {\n    return 1;\n  }\n  return 2;\n}\n"
    got = outline("f.js", text, 1, 6)
    assert [line.number for line in got.lines] == [1, 2, 3, 5]  # `}` alone: folded, the next number marked
    assert got.render()[-1] == "    …5    return 2;"


def test_a_blank_line_alone_is_folded_not_shown():
    text = "def f(x):\n    y = x.get()\n\n    return y\n"
    got = outline("f.py", text, 1, 4, max_lines=2)
    assert [line.number for line in got.lines] == [1, 4]
    assert got.render()[-1] == "    …4      return y"


def test_a_definition_of_2000_lines_stays_within_its_budget():
    body = "".join(f"    x{i} = step({i})\n    if x{i} > {i}:\n        return x{i}\n" for i in range(700))
    text = "def huge():\n" + body
    started = time.perf_counter()
    got = outline("huge.py", text, 1, 2101)
    assert time.perf_counter() - started < 2
    assert len(got.lines) == MAX_LINES and got.folded == 2101 - MAX_LINES
    true_lines(text, got)
    assert got.lines[0].kind == "first" and all(line.kind in ("first", "return") for line in got.lines)


def test_a_body_with_no_calls_shows_its_branches():
    text = "def sign(n):\n    if n < 0:\n        return -1\n    elif n == 0:\n        return 0\n    return 1\n"
    got = outline("s.py", text, 1, 6)
    assert [line.number for line in got.lines] == [1, 2, 3, 4, 5, 6] and got.folded == 0


def test_a_nested_function_or_a_lambda_that_does_the_work():
    text = ("def outer(items):\n    total = 0\n\n    def add(item):\n        if item.ok:\n"
            "            return item.value\n        raise KeyError(item)\n\n    key = lambda x: x.rank\n"
            "    return sorted(map(add, items), key=key)\n")
    inner = outline("n.py", text, 4, 7)  # the nested function as the definition
    assert [line.number for line in inner.lines] == [4, 5, 6, 7]
    whole = outline("n.py", text, 1, 10)
    kinds = {line.number: line.kind for line in whole.lines}
    assert kinds[4] == "def" and kinds[9] == "def" and kinds[10] == "return"


def test_a_decorated_definition_starts_at_the_line_the_graph_gives():
    text = "@cache\ndef rate(region):\n    return lookup(region)\n"
    got = outline("d.py", text, 2, 3, {3: ["d.lookup at d.py:9"]})
    assert [(line.number, line.kind) for line in got.lines] == [(2, "first"), (3, "return")]
    assert got.lines[1].targets == ("d.lookup at d.py:9",)


def test_a_generated_file_of_50000_lines():
    text = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(25000))
    started = time.perf_counter()
    got = outline("gen/table.py", text, 49999, 50000)
    assert time.perf_counter() - started < 5
    assert [line.text for line in got.lines] == ["def f24999(x):", "    return x + 24999"]


@pytest.mark.parametrize(("path", "text", "start", "end", "expected"), [
    ("a.ts", ("function pay(order: Order) {\n  if (!order.ok) {\n    throw new Error('unpaid');\n  }\n"
             "  const fee = 2;\n  this.total = order.sum + fee;\n  return charge(order);\n}\n"), 1, 8,
     {1: "first", 2: "branch", 3: "raise", 6: "assign", 7: "return"}),
    ("b.go", ("func Pay(o Order) error {\n\tif !o.Ok {\n\t\tpanic(\"unpaid\")\n\t}\n\tfor _, i := range o.Items {\n"
             "\t\to.Sum += i\n\t}\n\treturn charge(o)\n}\n"), 1, 9,
     {1: "first", 2: "branch", 3: "raise", 5: "loop", 8: "return"}),
])
def test_other_languages(path, text, start, end, expected):
    got = outline(path, text, start, end)
    true_lines(text, got)
    kinds = {line.number: line.kind for line in got.lines}
    assert {n: kinds.get(n) for n in expected} == expected


def test_a_language_the_graph_does_not_read_has_no_outline():
    assert outline("notes.md", "# x\n", 1, 1) is None


def _def(path: str, qname: str, line: int, end: int) -> DefRow:
    return DefRow(0, path, qname, qname.rsplit(".", 1)[-1], "function", line, end, "", "")


def test_a_target_is_placed_in_its_file_as_it_is_now_or_left_out(tmp_path):
    (tmp_path / "app.py").write_text("from lib import helper, gone\n\n\ndef main():\n    helper()\n    gone()\n")
    # lib.py changed since the graph was built: helper moved down two lines; gone was removed
    (tmp_path / "lib.py").write_text("# a comment\n\n\ndef helper():\n    return 1\n")
    main = _def("app.py", "app.main", 4, 6)
    callees = [(type("E", (), {"line": 5})(), [_def("lib.py", "lib.helper", 2, 3)]),
               (type("E", (), {"line": 6})(), [_def("lib.py", "lib.gone", 5, 6)])]
    got = outline_of(_Files(tmp_path), main, callees)
    targets = {line.number: line.targets for line in got.lines}
    assert targets[5] == ("lib.helper at lib.py:4",)  # the line it is on now, not the graph's 2
    assert targets[6] == ()  # its target cannot be found in the file now: no place is claimed


def test_the_lead_shows_each_definitions_outline_under_it_without_its_first_line_again():
    from codeasst.answer.checking import Definition, render_lead

    d = Definition("load", "cfg.py", 4, 19, "def load(path, retries=3)", "Read a config file.")
    lead = render_lead([d], {("cfg.py", 4): outline("cfg.py", RUN, 4, 19)})
    assert lead.startswith("In the code:\n- `load` at cfg.py:4-19, `def load(path, retries=3)`: Read a config file.\n")
    assert "     4  def load" not in lead  # the signature is already the definition's line
    assert "\n      …7      while attempts < retries:\n" in lead
    assert render_lead([d]) == "In the code:\n" + d.render() + "\n\n"  # no outline: as before


CLIENT = '''class Client:
    """A client."""

    #: seconds before a request gives up
    timeout = 10
    retries: int = 3

    def __init__(self, base_url, session=None):
        self.base_url = base_url
        if session is None:
            session = make()
        self.session = session

    def get(self, path):
        if not path:
            raise ValueError("no path")
        return self.session.get(self.base_url + path)
'''


def test_a_class_shows_its_members_and_attributes_not_what_its_methods_do():
    got = outline("c.py", CLIENT, 1, 17)
    true_lines(CLIENT, got)
    shown = [line.number for line in got.lines if line.kind != "fill"]
    assert shown == [1, 4, 5, 6, 8, 9, 12, 14]  # attributes with their #: comment, the constructor's, the methods
    assert {line.kind for line in got.lines} - {"fill"} == {"first", "assign", "def"}
    method = outline("c.py", CLIENT, 14, 17)  # a method's own outline has its body
    assert [line.number for line in method.lines] == [14, 15, 16, 17]


REDIRECT = '''def carry_auth(self, prepared, response):
    """A redirect to another host must not take the user's credentials along."""
    headers = prepared.headers
    url = prepared.url
    log.debug("redirect to %s", url)
    if "Authorization" in headers and self.other_host(response.request.url, url):
        log.debug("other host")
        del headers["Authorization"]
    fresh = lookup_netrc(url) if self.trust_env else None
    if fresh is not None:
        prepared.prepare_auth(fresh)
    for hook in self.hooks:
        hook(prepared)
    return prepared
'''


def test_a_branch_keeps_the_statement_that_does_its_work():
    got = outline("s.py", REDIRECT, 1, 14, max_lines=4)
    true_lines(REDIRECT, got)
    kinds = {line.number: line.kind for line in got.lines if line.kind != "fill"}
    assert kinds[6] == "branch" and kinds[8] == "delete"  # the del under it, not the log call before it
    assert 7 not in kinds


def test_the_line_that_answers_the_question_is_kept_with_its_branch():
    focus = Focus.of("When is the Authorization header removed?")
    assert focus.forms == {"delete"}
    asked = outline("s.py", REDIRECT, 1, 14, max_lines=3, focus=focus)
    true_lines(REDIRECT, asked)
    kept = [line.number for line in asked.lines if line.kind != "fill"]
    assert kept == [1, 6, 8]  # `del headers[...]`, and the condition that says when


RAISE = '''def raise_for_status(self):
    """Raise an error for a bad status."""
    reason = self.reason
    msg = ""
    if 400 <= self.status < 500:
        msg = f"{self.status} Client Error: {reason} for url: {self.url}"
    elif 500 <= self.status < 600:
        msg = f"{self.status} Server Error: {reason} for url: {self.url}"
    if msg:
        raise StatusError(msg, response=self)
'''


def test_a_message_asked_for_keeps_the_strings_assigned_under_their_branches():
    got = outline("r.py", RAISE, 1, 10, max_lines=8, focus=Focus.of("With what message does it raise?"))
    true_lines(RAISE, got)
    assert {5, 6, 7, 8, 10} <= {line.number for line in got.lines}
    plain = outline("r.py", RAISE, 1, 10, max_lines=8)  # no question: the branches still show their work
    assert {5, 6, 7, 8} <= {line.number for line in plain.lines}


@pytest.mark.parametrize("body", ["del cache[key]", "pass", "return"])
def test_a_branch_whose_only_statement_is_small(body):
    text = f"def f(cache, key):\n    if key in cache:\n        {body}\n    x = 1\n    y = 2\n    return x + y\n"
    got = outline("f.py", text, 1, 6, max_lines=4)
    true_lines(text, got)
    assert {1, 2, 3} <= {n.number for n in got.lines if n.kind != "fill"}


@pytest.mark.parametrize(("path", "text"), [
    ("a.js", "function drop(m, k) {\n  if (m.has(k)) {\n    log(k);\n    delete m[k];\n  }\n  return m;\n}\n"),
    ("a.go", "func Drop(m map[string]int, k string) {\n\tif ok(k) {\n\t\tlog(k)\n\t\tdelete(m, k)\n\t}\n}\n"),
])
def test_deletes_in_javascript_and_go_are_kept_under_their_branch(path, text):
    got = outline(path, text, 1, len(text.splitlines()), max_lines=4)
    kinds = {n.number: n.kind for n in got.lines}
    assert kinds.get(4) == "delete" and kinds.get(2) == "branch"


def _big_class(methods: int) -> str:
    body = "".join(f"    def step{i}(self, x):\n        if x > {i}:\n            return x - {i}\n        return x\n\n"
                   for i in range(methods - 2))
    return ("class Stack:\n    \"\"\"A stack of contexts.\"\"\"\n\n    def __init__(self):\n        self.items = []\n\n"
            "    def push(self, item):\n        if item is None:\n            raise ValueError('no item')\n"
            "        self.items.append(item)\n\n"
            "    def pop(self):\n        if not self.items:\n            raise LookupError('empty')\n"
            "        return self.items.pop()\n\n" + body)


def test_a_class_asked_about_shows_the_methods_the_question_names_and_lists_the_others():
    text = _big_class(60)
    end = len(text.splitlines())
    got = outline("s.py", text, 1, end, max_lines=20, focus=Focus.of("When is a context pushed and popped?"))
    true_lines(text, got)
    shown = "\n".join(got.render())
    assert "raise ValueError('no item')" in shown and "raise LookupError('empty')" in shown
    assert "def step3" not in shown  # not a wall of members
    assert "… and 58 more methods: step0, step1" in shown
    assert got.chosen <= 20
    wall = outline("s.py", text, 1, end, max_lines=20)  # no question: the members, as refs shows them
    assert "def step3" in "\n".join(wall.render()) and not wall.more
