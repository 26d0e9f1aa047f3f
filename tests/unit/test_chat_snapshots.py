"""What the chat looks like at 80×24, dark and light, as SVG snapshots (pytest-textual-snapshot).

Stable by construction: a scripted assistant with fixed replies and figures, no cursor blink,
no clock, no absolute paths. Update after a deliberate change of the screen with
`pytest tests/unit/test_chat_snapshots.py --snapshot-update`, and look at the new SVGs."""

from __future__ import annotations

import pytest

from codeasst.chat.app import make_app
from codeasst.chat.history import History
from codeasst.paths import data_dir
from tests.unit.chat_fakes import ScriptedAssistant

SIZE = (80, 24)
REPLY = ("`load_config` reads `.codeasst.toml` and the user's config [1], then applies the "
         "environment:\n\n```python\nsettings = load_config(root)\n```\n\nSee also `pkg/env.py:4`.")


@pytest.fixture
def app_for(tmp_path):
    stores = []

    def build(theme: str = "textual-dark", replies: list[str] | None = None):
        history = History(data_dir() / "chat.sqlite", tmp_path / "demo")
        stores.append(history)
        return make_app(ScriptedAssistant(replies or [REPLY]), history, "demo", theme=theme, blink=False)

    yield build
    for store in stores:
        store.close()


async def ask(pilot, text: str = "where is the config loaded?") -> None:
    await pilot.press(*text, "enter")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_first_screen(snap_compare, app_for):
    assert snap_compare(app_for(), terminal_size=SIZE)


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
def test_an_answer_with_its_sources(snap_compare, app_for, theme):
    assert snap_compare(app_for(theme), terminal_size=SIZE, run_before=ask)


def test_slash_command_popup(snap_compare, app_for):
    assert snap_compare(app_for(), terminal_size=SIZE, press=["/", "s"])


def test_fix_asks_before_it_writes(snap_compare, app_for):
    async def fix(pilot):
        await pilot.press(*"/fix pkg/mod.py", "enter")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(app_for(), terminal_size=SIZE, run_before=fix)
