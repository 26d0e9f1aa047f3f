"""Answers that start from the right code (issue 51), through the CLI with the real embedder, Chroma,
tree-sitter, ripgrep and code graph: "where do I add X?" leads with where the existing Xs are
registered (over a copy of codeasst's own package, its route function renamed, so nothing here names
the answer's place); the outline keeps the line that answers (a `del` under its branch) and a class
asked about shows the methods the question names; one answer with the real model, whose shown
sentences each stand on the line they cite."""

from __future__ import annotations

import re
import textwrap

import pytest

from tests.e2e.conftest import run_json
from tests.e2e.test_ask_grounded_e2e import _codeasst_copy

NONE = {"CODEASST_ASK__MODEL": "none"}  # the lead alone: no model asked


@pytest.mark.slow
def test_where_to_add_an_endpoint_or_a_command_leads_with_their_registrations(tmp_path):
    root = _codeasst_copy(tmp_path / "codeasst")
    app = root / "codeasst/serve/app.py"
    app.write_text(app.read_text().replace("_routes(", "_wire_up_handlers("))  # nothing here may know the name
    answer = run_json("ask", "where do I add an endpoint?", "-C", str(root), env=NONE)
    first = answer["registrations"]["places"][0]
    assert first["path"].startswith("codeasst/serve/"), answer["answer"]
    shown = (root / first["path"]).read_text().splitlines()[first["start_line"] - 1]
    assert re.match(r"\s*@app\.(get|post)\(\"/v1/", shown), shown  # a route of the table, not a helper
    assert answer["answer"].startswith("Where the existing endpoints are registered:\n- codeasst/serve/")
    assert "One to copy" in answer["answer"] and not answer["abstained"]
    assert {(c["path"], c["start_line"]) for c in answer["citations"] if c["verified"]} >= {
        (first["path"], first["start_line"])}

    command = run_json("ask", "where do I add a command?", "-C", str(root), env=NONE)
    assert command["registrations"]["places"][0]["path"].startswith("codeasst/cli/"), command["answer"]
    # as a user phrases it: what is wanted, then where
    wanted = run_json("ask", "I need an endpoint that lists the indexed files. Where are the server's routes defined?",
                      "-C", str(root), env=NONE)
    assert wanted["registrations"]["places"][0]["path"].startswith("codeasst/serve/"), wanted["answer"]

    # its schema migrations are a table named for them (index/manifest.py's _MIGRATIONS); cron jobs it has none
    migration = run_json("ask", "Where do I add a database migration?", "-C", str(root), env=NONE)
    assert migration["registrations"]["places"][0]["path"] == "codeasst/index/manifest.py", migration["answer"]
    none = run_json("ask", "Where do I add a new cron job?", "-C", str(root), env=NONE)
    assert none["registrations"] == {"thing": "cron job", "places": [], "found": 0}
    assert none["answer"].startswith("No place in this repository registers cron jobs")
    assert "In the code:" not in none["answer"]  # no unrelated helper named instead


def test_where_no_registration_names_them_the_best_code_that_names_them_is_shown(make_repo):
    from tests.unit.test_registrations import SCREEN, TOKENS

    root = make_repo({"lib/format.js": TOKENS, "app/screen.py": SCREEN})
    answer = run_json("ask", "Where do I add a new token, like :request-id?", "-C", str(root), env=NONE)
    assert answer["registrations"]["places"] == [{"path": "lib/format.js", "start_line": 2, "end_line": 3}], answer
    assert answer["answer"].startswith("No place in this repository registers tokens"), answer["answer"]
    assert "names them:\n- lib/format.js:2-3\n" in answer["answer"] and "      3      switch (token) {" in answer["answer"]
    assert ("lib/format.js", 2) in {(c["path"], c["start_line"]) for c in answer["citations"] if c["verified"]}


def test_the_lead_names_other_files_definitions_beyond_what_the_models_context_holds(make_repo):
    steps = "".join(f"    total = total + price * {i}  # add the tax of band {i}\n" for i in range(20))
    root = make_repo({"tax.py": f'def compute_tax(price):\n    """Compute the sales tax of a price."""\n    total = 0\n'
                                f"{steps}    return total\n",
                      "rates.py": 'def tax_rate(region):\n    """The sales tax rate of a region."""\n    return 0.2\n'})
    env = {**NONE, "CODEASST_ASK__CONTEXT_CHARS": "400"}  # the model's context holds one of them
    answer = run_json("ask", "How is the sales tax of a price computed?", "-C", str(root), env=env)
    assert len(answer["excerpts"]) == 1, answer["excerpts"]
    listed = {c["path"] for c in answer["citations"] if c["reason"] == "codeasst's definition listing"}
    assert listed == {"tax.py", "rates.py"}, answer["answer"]


def _session() -> str:
    """tests/unit/test_outline.py's REDIRECT as a method of a class in a module, lines 7 to 20."""
    from tests.unit.test_outline import REDIRECT

    return ('"""Sending requests on to other hosts."""\n\n\nclass Redirects:\n    """Follows a response\'s redirects."""\n\n'
            + textwrap.indent(REDIRECT, "    ") + "\n    def other_host(self, old, new):\n"
            '        """Whether two addresses name different hosts."""\n        return host_of(old) != host_of(new)\n')


@pytest.mark.slow
def test_the_outline_keeps_the_line_that_answers_and_the_model_stands_on_lines(make_repo):
    from tests.unit.test_outline import _big_class

    root = make_repo({"net/redirects.py": _session(), "net/stack.py": _big_class(60), "net/__init__.py": ""})
    question = "When is the Authorization header removed on a redirect?"
    answer = run_json("ask", question, "-C", str(root))  # the real 0.5B
    text = answer["answer"]
    assert '    14              del headers["Authorization"]' in text, text  # the answering line, not folded
    assert "    12          if \"Authorization\" in headers" in text, text  # with the condition that says when
    # the model's sentences, after the lead: at most three, each citing a line of the file that holds its names
    model = text.split("\n\n", 1)[-1].split("\nSources")[0]
    cited = re.findall(r"([^\[\]\n]*?)\[([\w/.]+):(\d+)\]", model)
    assert len(cited) <= 3, model
    for sentence, path, line in cited:
        rows = (root / path).read_text().splitlines()
        window = "\n".join(rows[max(0, int(line) - 3):int(line) + 2])
        for name in re.findall(r"`([A-Za-z_][\w.]*)`", sentence):
            assert name.split(".")[-1] in window or name in question, (sentence, window)

    stack = run_json("ask", "What does the stack do when a context is pushed or popped?", "-C", str(root), env=NONE)
    shown = stack["answer"]
    assert "raise ValueError('no item')" in shown and "raise LookupError('empty')" in shown, shown
    assert "more methods: step0, step1" in shown and "def step7" not in shown, shown


@pytest.mark.slow
def test_a_question_naming_what_the_repository_does_not_have_says_so(make_repo):
    root = make_repo({"w.py": 'def make_widget(size):\n    """Build a widget."""\n    return {"size": size}\n'})
    missing = run_json("ask", "What does frobnicate_widget return?", "-C", str(root), env=NONE)
    assert missing["answer"].startswith("Nothing in this repository is named `frobnicate_widget`"), missing["answer"]
    assert "In the code:" not in missing["answer"]  # no unrelated definition named instead
    found = run_json("ask", "What does make_widget return?", "-C", str(root), env=NONE)
    assert found["answer"].startswith("In the code:\n- `make_widget` at w.py:1-3"), found["answer"]
    quoted = run_json("ask", "What does make_widget do with 'Foo_Bar.baz' as its size?", "-C", str(root), env=NONE)
    assert quoted["answer"].startswith("In the code:\n- `make_widget`"), quoted["answer"]  # a quoted example is no name


CART_RS = '''//! A shopping cart.

/// What a cart holds, and how many items it takes.
pub struct Cart {
    limit: usize,
    items: Vec<u32>,
}

impl Cart {
    /// A cart that takes at most `limit` items.
    pub fn new(limit: usize) -> Self {
        Cart { limit, items: Vec::new() }
    }

    /// Adds an item to the cart.
    pub fn add(&mut self, item: u32) -> Result<(), String> {
        let count = self.items.len();
        let room = self.limit;
        let kept = self.items.clone();
        let first = kept.first();
        if count >= room {
            return Err(format!("the cart is full: {} items", count));
        }
        validate(item)?;
        self.items.push(item);
        log_added(item);
        Ok(())
    }
}

fn validate(item: u32) -> Result<(), String> {
    if item == 0 { return Err("no item 0".into()); }
    Ok(())
}

fn log_added(item: u32) {
    println!("added {}", item);
}
'''


@pytest.mark.slow
def test_a_rust_answer_leads_with_the_definition_and_its_outline(make_repo):
    root = make_repo({"src/cart.rs": CART_RS})
    found = run_json("ask", "What happens when I add an item to a full cart?", "-C", str(root), env=NONE)
    assert found["answer"].startswith("In the code:\n- `add` at src/cart.rs:16"), found["answer"]
    (lead, *_) = found["outlines"]
    kinds = {line["line"]: line["kind"] for line in lead["lines"]}
    assert (lead["path"], lead["start_line"]) == ("src/cart.rs", 16)
    assert kinds[22] == "return" and kinds[21] == "branch", lead  # the answering line, with its branch
    assert kinds[24] == "raise", lead  # Rust's `?`
    assert "src/cart.rs:31" in {t.split(" at ")[-1] for line in lead["lines"] for t in line["targets"]}, lead


@pytest.mark.slow
def test_a_definition_the_question_names_leads(make_repo):
    notes = ('"""Ledger reminders: how the ledger keeps its order when reminders are sent, which reminder\n'
             'goes first, and why the order of the ledger matters for reminders and for the ledger."""\n\n'
             "ORDER = ['ledger', 'reminders']\n")
    helper = ("def zq_apply(entries, send):\n    \"\"\"Each entry, sent once.\"\"\"\n"
              "    for entry in sorted(entries, key=lambda e: e.due):\n        send(entry)\n    return len(entries)\n")
    root = make_repo({"ledger/notes.py": notes, "ledger/apply.py": helper})
    found = run_json("ask", "Does zq_apply keep the ledger's order when reminders are sent?", "-C", str(root),
                     env=NONE)
    assert found["answer"].startswith("In the code:\n- `zq_apply` at ledger/apply.py:1-5"), found["answer"]
