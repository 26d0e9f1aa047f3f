"""`codeasst chat` with the real parts: the embedded model, the embedder, Chroma, ripgrep.

One conversation in the TUI (through the pilot) on a repository never indexed, so the
first answer indexes it first; and the pipe fallback through the CLI entry point."""

from __future__ import annotations

import asyncio

import pytest

from codeasst.access import alone
from codeasst.chat.app import SourcesList, make_app
from codeasst.chat.assistant import ChatAssistant
from codeasst.chat.history import History
from codeasst.chat.widgets import TurnView
from codeasst.services import build_services
from tests.e2e.conftest import assert_one_line_error, run_cli

SETTINGS_PY = '''"""Settings for the shop."""
import os
import tomllib


def load_settings(path):
    """Read the shop's TOML settings file, then let SHOP_* environment variables override it."""
    with open(path, "rb") as handle:
        settings = tomllib.load(handle)
    for key, value in os.environ.items():
        if key.startswith("SHOP_"):
            settings[key.removeprefix("SHOP_").lower()] = value
    return settings
'''

CART_PY = '''"""The shopping cart."""


class Cart:
    def __init__(self):
        self.items = []

    def add(self, name, price, quantity=1):
        """Put an item in the cart."""
        self.items.append((name, price, quantity))

    def total(self):
        """The sum of price times quantity over the items."""
        return sum(price * quantity for _, price, quantity in self.items)
'''


@pytest.fixture
def shop(make_repo):
    return make_repo({"shop/settings.py": SETTINGS_PY, "shop/cart.py": CART_PY, "shop/__init__.py": ""}, name="shop")


@pytest.mark.slow
def test_a_conversation_with_the_real_model(shop):
    services = build_services(shop)
    history = History.open_default(shop)

    async def talk():
        app = make_app(ChatAssistant(alone(services)), history, "shop", blink=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press(*"How are the shop settings loaded?", "enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
            view = list(app.query(TurnView))[-1]
            sources = app.query_one(SourcesList).sources
            status = str(app.query_one("#status").render())
            return view.answer.source, str(view.meta.render()), sources, status, app.conversation.id

    answer, meta, sources, status, conversation = asyncio.run(talk())
    assert answer.strip(), meta
    assert not meta.startswith(("error", "unexpected")), meta
    assert any(s.path == "shop/settings.py" and s.verified for s in sources), sources
    assert "files" in status and "chunks" in status and "tok/s" in status  # indexed on the way, speed shown
    stored = history.load(conversation).turns
    assert stored[0].question == "How are the shop settings loaded?" and stored[0].answer == answer
    history.close()


@pytest.mark.slow
def test_a_piped_question_gets_one_answer_on_stdout(shop):
    proc = run_cli("chat", "-C", str(shop), input_text="How does the cart compute its total?\n")
    assert "Sources (* drawn on by the answer):" in proc.stdout
    assert "shop/cart.py" in proc.stdout


def test_chat_without_a_terminal_or_a_question_is_one_line_error(shop):
    assert_one_line_error(run_cli("chat", "-C", str(shop), input_text="  \n", check_rc=None), 2,
                          "the question on stdin is empty")
