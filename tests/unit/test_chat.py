"""The chat's behaviour through Textual's pilot: send, stream, cancel, slash commands, history,
and /fix confirmed and refused. A scripted assistant stands in for the model, except in the
/fix tests, which run the real fix path (flake8, the verifier, the atomic write)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from codeasst.access import alone
from codeasst.answer.ask import follow_up_query
from codeasst.chat import commands
from codeasst.chat.app import ChatApp, SourcesList, make_app
from codeasst.chat.assistant import ChatAssistant, fit_history
from codeasst.chat.history import History, Source, Turn, to_markdown
from codeasst.chat.widgets import ConfirmScreen, ExcerptScreen, PromptArea, TurnView, editor_command
from codeasst.errors import UsageError
from codeasst.paths import data_dir
from tests.unit.chat_fakes import ScriptedAssistant

SIZE = (80, 24)


@pytest.fixture
def history(tmp_path):
    store = History(data_dir() / "chat.sqlite", tmp_path)
    yield store
    store.close()


def answers(app: ChatApp) -> list[str]:
    return [view.answer.source for view in app.query(TurnView)]


async def settle(app: ChatApp, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()


async def type_and_send(pilot, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


def test_sends_streams_and_keeps_the_turn(history):
    assistant = ScriptedAssistant(["`load_config` reads the settings [1]."])

    async def run():
        app = make_app(assistant, history, "demo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "where are settings read?")
            await settle(app, pilot)
            assert answers(app) == ["`load_config` reads the settings [1]."]
            assert app.query_one(PromptArea).text == ""  # the box is cleared for the next question
            sources = app.query_one(SourcesList)
            assert [s.place for s in sources.sources] == ["pkg/config.py:3-9", "README.md:1-4"]
            assert sources.display
            assert "30.0 tok/s" in str(app.query_one("#status").render())
            return app.conversation.id

    conversation = asyncio.run(run())
    stored = history.load(conversation)
    assert [(t.question, t.answer) for t in stored.turns] == [
        ("where are settings read?", "`load_config` reads the settings [1].")]
    assert stored.turns[0].sources[0].place == "pkg/config.py:3-9"


def test_an_answer_while_embedding_is_under_way_says_how_much_dense_search_covered(history):
    assistant = ScriptedAssistant(["`load_config` reads the settings [1]."],
                                  stats={"dense_embedded": 4210, "dense_total": 33012})

    async def run():
        app = make_app(assistant, history, "demo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "where are settings read?")
            await settle(app, pilot)
            meta = str(app.query_one(TurnView).meta.render())
            assert "1 citation checked" in meta
            assert "not yet embedded: dense search covered 4,210 of 33,012 chunks" in meta

    asyncio.run(run())


def test_follow_ups_carry_the_earlier_turns(history):
    assistant = ScriptedAssistant(["First answer.", "Second answer."])

    async def run():
        app = make_app(assistant, history, "demo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "what loads the config?")
            await settle(app, pilot)
            await type_and_send(pilot, "and where is it tested?")
            await settle(app, pilot)

    asyncio.run(run())
    assert assistant.asked == [("what loads the config?", []),
                               ("and where is it tested?", ["what loads the config?"])]


def test_escape_stops_the_answer_at_once(history):
    words = " ".join(f"word{i}" for i in range(400))
    assistant = ScriptedAssistant([words], delay_s=0.02)

    async def run():
        app = make_app(assistant, history, "demo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "explain everything")
            await asyncio.get_running_loop().run_in_executor(None, assistant.started.wait, 5)
            assert app.busy
            await pilot.press("escape")
            await settle(app, pilot)
            assert not app.busy
            shown = answers(app)[0]
            assert 0 < len(shown.split()) < 100  # stopped long before the 400 words
            assert "stopped" in str(app.query_one(TurnView).meta.render())
            # the app answers again after a cancel
            assistant.replies.append("Next.")
            await type_and_send(pilot, "short one")
            await settle(app, pilot)
            assert answers(app)[-1] == "Next."
            return app.conversation.id

    conversation = asyncio.run(run())
    states = [t.state for t in history.load(conversation).turns]
    assert states == ["cancelled", "done"]


def test_a_question_sent_while_one_is_answered_waits_in_the_box(history):
    hold = threading.Event()
    assistant = ScriptedAssistant(["first answer", "second answer"], hold=hold)

    async def run():
        app = make_app(assistant, history, "demo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "first")
            await asyncio.get_running_loop().run_in_executor(None, assistant.started.wait, 5)
            await type_and_send(pilot, "second")
            assert app.query_one(PromptArea).text == "second"  # refused, and not lost
            hold.set()
            await settle(app, pilot)
            await pilot.press("enter")
            await settle(app, pilot)
            assert answers(app) == ["first answer", "second answer"]

    asyncio.run(run())
    assert [q for q, _ in assistant.asked] == ["first", "second"]  # one after the other, never two at once


def test_slash_commands(history):
    assistant = ScriptedAssistant()

    async def run():
        app = make_app(assistant, history, "demo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "/help")
            await pilot.pause()
            assert "/search QUERY" in answers(app)[-1] and "Ctrl+J" in answers(app)[-1]
            await type_and_send(pilot, "/search config loading")
            await settle(app, pilot)
            assert "`pkg/config.py:3-9` load_config" in answers(app)[-1]
            assert [s.path for s in app.query_one(SourcesList).sources] == ["pkg/config.py", "README.md"]
            await type_and_send(pilot, "/model bundled-1.5b")
            await settle(app, pilot)
            assert "Now using **bundled-1.5b**" in answers(app)[-1]
            await type_and_send(pilot, "/model nonsense")
            await settle(app, pilot)
            assert "unknown model 'nonsense'" in str(list(app.query(TurnView))[-1].meta.render())
            await type_and_send(pilot, "/frobnicate")
            await pilot.pause()
            assert "No command /frobnicate" in str(list(app.query(TurnView))[-1].meta.render())
            await type_and_send(pilot, "/clear")
            await pilot.pause()
            assert answers(app) == []
            assert not app.query_one(SourcesList).display

    asyncio.run(run())


def test_tab_completes_a_slash_command_and_the_popup_lists_matches(history):
    async def run():
        app = make_app(ScriptedAssistant(), history, "demo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("/", "s")
            popup = app.query_one("#suggestions")
            assert popup.display and popup.option_count == 1
            await pilot.press("tab")
            assert app.query_one(PromptArea).text == "/search "
            await pilot.press("ctrl+a")  # not a command key: the popup stays consistent with the text
            app.query_one(PromptArea).text = "where"
            await pilot.pause()
            assert not popup.display

    asyncio.run(run())


def test_up_and_down_recall_what_was_typed_across_sessions(history):
    assistant = ScriptedAssistant(["One.", "Two."])

    async def first_session():
        app = make_app(assistant, history, "demo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "first question")
            await settle(app, pilot)
            await type_and_send(pilot, "second question")
            await settle(app, pilot)

    async def second_session():
        app = make_app(assistant, history, "demo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            prompt = app.query_one(PromptArea)
            await pilot.press(*"draft")
            await pilot.press("up")
            assert prompt.text == "second question"
            await pilot.press("up")
            assert prompt.text == "first question"
            await pilot.press("down", "down")
            assert prompt.text == "draft"  # back to what was being typed

    asyncio.run(first_session())
    asyncio.run(second_session())


def test_ctrl_j_inserts_a_newline_and_enter_sends_both_lines(history):
    assistant = ScriptedAssistant(["Ok."])

    async def run():
        app = make_app(assistant, history, "demo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*"line one", "ctrl+j", *"line two")
            assert app.query_one(PromptArea).text == "line one\nline two"
            await pilot.press("enter")
            await settle(app, pilot)

    asyncio.run(run())
    assert assistant.asked[0][0] == "line one\nline two"


def test_resume_and_export(history, tmp_path):
    assistant = ScriptedAssistant(["It is in `pkg/config.py`."])

    async def talk():
        app = make_app(assistant, history, "demo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "where is the config?")
            await settle(app, pilot)
            target = tmp_path / "talk.md"
            await type_and_send(pilot, f"/export {target}")
            await pilot.pause()
            return app.conversation.id, target

    conversation, target = asyncio.run(talk())
    text = target.read_text()
    assert "## where is the config?" in text and "It is in `pkg/config.py`." in text
    assert "- `pkg/config.py:3-9` load_config" in text

    async def resume():
        app = make_app(assistant, history, "demo", latest=True, blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert app.conversation.id == conversation
            assert answers(app) == ["It is in `pkg/config.py`."]
            await type_and_send(pilot, "/history")
            await pilot.pause()
            assert f"**{conversation}**" in answers(app)[-1]

    asyncio.run(resume())
    with pytest.raises(UsageError):
        make_app(assistant, history, "demo", resume=9999)
    with pytest.raises(UsageError, match="no theme 'nonsense'"):
        make_app(assistant, history, "demo", theme="nonsense")


def test_enter_on_a_source_shows_its_code(history):
    async def run():
        app = make_app(ScriptedAssistant(["Here [1]."]), history, "demo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "where?")
            await settle(app, pilot)
            app.query_one(SourcesList).focus()
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, ExcerptScreen)
            assert app.screen.start_line == 3 and "def load_config" in app.screen.code
            await pilot.press("escape")
            assert not isinstance(app.screen, ExcerptScreen)

    asyncio.run(run())


# /fix through the real fix path: flake8, the verifier and the atomic write.

BROKEN = "import os,sys\n\n\ndef f(a,b):\n    return os.path.join(a,b)   \n"


@pytest.fixture
def fix_repo(make_repo):
    from codeasst.backends.fake import HashingEmbedder, ScriptedLLM
    from codeasst.services import build_services

    root = make_repo({"pkg/mod.py": BROKEN, "pkg/__init__.py": ""})
    services = build_services(root, embedder=HashingEmbedder(), llm=ScriptedLLM())
    return root, ChatAssistant(alone(services))


@pytest.mark.parametrize("confirm", [True, False])
def test_fix_shows_the_diff_and_applies_only_when_confirmed(fix_repo, history, confirm):
    root, assistant = fix_repo

    async def run():
        app = make_app(assistant, history, "repo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "/fix pkg/mod.py")
            for _ in range(100):
                await pilot.pause(0.1)
                if isinstance(app.screen, ConfirmScreen):
                    break
            assert isinstance(app.screen, ConfirmScreen)
            shown = answers(app)[-1]
            assert shown.startswith("```diff") and "-import os,sys" in shown and "+import os" in shown
            await pilot.press("y" if confirm else "n")
            await settle(app, pilot)
            return str(list(app.query(TurnView))[-1].meta.render())

    note = asyncio.run(run())
    text = (root / "pkg/mod.py").read_text()
    if confirm:
        assert "Wrote pkg/mod.py" in note
        assert "import os,sys" not in text and "def f(a, b):" in text and text.endswith("join(a, b)\n")
    else:
        assert "Not applied" in note
        assert text == BROKEN


def test_fix_of_a_missing_file_is_one_line_in_the_conversation(fix_repo, history):
    _, assistant = fix_repo

    async def run():
        app = make_app(assistant, history, "repo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "/fix nowhere.py")
            await settle(app, pilot)
            assert not isinstance(app.screen, ConfirmScreen)
            return str(list(app.query(TurnView))[-1].meta.render())

    note = asyncio.run(run())
    assert note.startswith("error:") and "nowhere.py" in note and "\n" not in note


# Logic

def test_fit_history_keeps_the_latest_turns_within_the_budget():
    turns = [Turn(f"q{i}", "a" * 40) for i in range(5)] + [Turn("stopped", "x", state="cancelled")]

    def count(text):
        return len(text) // 4 + 1

    kept = fit_history(turns, budget_tokens=25, answer_chars=1000, count=count)
    assert [q for q, _ in kept] == ["q3", "q4"]  # 12 tokens a turn; the cancelled one is left out
    assert fit_history(turns, 5, 1000, count) == []
    assert fit_history(turns, 100, 8, count)[-1] == ("q4", "a" * 8)


def test_a_short_follow_up_is_retrieved_with_the_question_before_it():
    history = [("how does the indexer pick files?", "It uses IgnoreRules.")]
    assert follow_up_query("and where is it tested?", history) == "how does the indexer pick files?\nand where is it tested?"
    long = "what does the function that embeds chunks in batches do with very long chunks"
    assert follow_up_query(long, history) == long
    assert follow_up_query("where is it tested?", []) == "where is it tested?"


def test_command_parsing_and_completion():
    assert commands.parse("how do I /search?") is None
    assert commands.parse("//not a command") is None
    inv = commands.parse("/fix  pkg/mod.py ")
    assert inv.command.name == "fix" and inv.argument == "pkg/mod.py"
    assert commands.parse("/nope").command is None
    assert commands.complete("/se") == "/search "
    assert commands.complete("/h") is None  # help and history share only the h: nothing to add
    assert commands.complete("/he") == "/help"
    assert commands.complete("/cl") == "/clear"
    assert commands.complete("/zz") is None
    assert commands.matching("/search x") == []


def test_history_migrates_once_and_keeps_repositories_apart(tmp_path):
    db = tmp_path / "chat.sqlite"
    one = History(db, tmp_path / "one")
    conv = one.new_conversation()
    one.add_turn(conv, Turn("q", "a", [Source("a.py", 1, 2, "f")]))
    one.add_input("q")
    one.close()
    again = History(db, tmp_path / "one")  # reopening does not re-run the migration
    other = History(db, tmp_path / "two")
    assert again.latest().turns[0].sources == [Source("a.py", 1, 2, "f")]
    assert other.latest() is None and other.inputs() == []
    assert again.inputs() == ["q"]
    assert "## q" in to_markdown(again.latest())


def test_a_damaged_history_file_is_one_clear_error(tmp_path):
    from codeasst.errors import CodeasstError

    damaged = tmp_path / "chat.sqlite"
    damaged.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CodeasstError, match="cannot read the chat history"):
        History(damaged, tmp_path)


def test_editor_commands():
    assert editor_command("vim", Path("/r/a.py"), 12) == ["vim", "+12", "/r/a.py"]
    assert editor_command("code -w", Path("/r/a.py"), 3) == ["code", "-w", "--goto", "/r/a.py:3"]
    assert editor_command("/usr/bin/subl", Path("a.py"), 3) == ["/usr/bin/subl", "a.py:3"]


def test_source_labels_drop_the_module_the_path_already_names():
    from codeasst.chat.assistant import short_name

    assert short_name("codeasst.chat.history.History.latest", "codeasst/chat/history.py") == "History.latest"
    assert short_name("codeasst.chat.history", "codeasst/chat/history.py") == ""
    assert short_name("codeasst.index", "codeasst/index/__init__.py") == ""
    assert short_name("README.codeasst > What gets indexed", "README.md") == "codeasst > What gets indexed"


def test_quitting_while_an_answer_is_written_stops_the_model(history):
    hold = threading.Event()  # never set: only a cancel ends this answer
    assistant = ScriptedAssistant(["a b c d e f"], hold=hold)

    async def run():
        app = make_app(assistant, history, "demo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "long one")
            await asyncio.get_running_loop().run_in_executor(None, assistant.started.wait, 5)
            await pilot.press("ctrl+q")
            await app.workers.wait_for_complete()

    started = time.perf_counter()
    asyncio.run(run())
    assert assistant.saw_cancel and time.perf_counter() - started < 8


def test_an_unexpected_failure_is_one_line_and_the_app_goes_on(history):
    class Broken(ScriptedAssistant):
        def search(self, query, progress=None):
            raise RuntimeError("the disk fell off")

    from codeasst.chat.failures import log_file, setup_logging

    setup_logging()
    assistant = Broken(["Still here."])

    async def run():
        app = make_app(assistant, history, "demo", blink=False)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "/search anything")
            await settle(app, pilot)
            note = str(list(app.query(TurnView))[-1].meta.render())
            await type_and_send(pilot, "still answering?")
            await settle(app, pilot)
            return note, answers(app)[-1]

    note, last = asyncio.run(run())
    assert note.startswith("unexpected error: RuntimeError: the disk fell off") and "\n" not in note
    assert last == "Still here."
    assert "RuntimeError: the disk fell off" in log_file().read_text()  # the traceback, for a bug report
