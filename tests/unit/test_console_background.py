"""What `codeasst index` and `codeasst status` print about the background embedder (codeasst.console)."""

from __future__ import annotations

from codeasst.console import index_summary_lines, status_lines


def _summary(**fields) -> dict:
    base = {"rebuilt": None, "added": 3, "changed": 0, "deleted": 0, "unchanged": 0, "files": 3, "chunks": 60,
            "elapsed_s": 2.5, "embed_s": 0.1, "first_embed_s": 0.1, "embedded": 60, "vectors_reused": 0,
            "final_embedded": 0, "dense": {"embedded": 60, "total": 60}, "skipped": [], "skipped_by_reason": {}}
    return {**base, **fields}


def test_index_says_the_rest_continues_in_the_background_with_its_pid_and_log():
    lines = index_summary_lines(_summary(final_waiting=60, background={"pid": 4242, "log": "/x/background.log"}))
    said = [line for line in lines if "background" in line]
    assert len(said) == 1 and "60 chunks" in said[0] and "pid 4242" in said[0] and "/x/background.log" in said[0]
    assert not [line for line in lines if line.startswith("Not yet embedded")], "every chunk has a vector"


def test_index_says_nothing_of_a_background_where_nothing_waits_or_it_did_not_start():
    assert not [line for line in index_summary_lines(_summary(final_waiting=0, background=None)) if "background" in line]
    # the CLI says why it did not start, once, on stderr (codeasst.cli.indexing)
    failed = _summary(final_waiting=60, background={"error": "cannot start a process: EAGAIN"})
    assert not [line for line in index_summary_lines(failed) if "background" in line]


def _status(background: dict | None, first_phase: bool = True) -> dict:
    return {"root": "/r", "is_git": True, "store": "embedded", "indexed": True, "files": 3, "chunks": 60,
            "updated_at": None, "embedder": "minilm", "dense": {"embedded": 60, "total": 60}, "lexical_only": 0,
            "first_phase": {"embedder": "static", "final": "minilm", "final_embedded": 20, "total": 60}
            if first_phase else None, "background": background, "embedder_changed": None, "store_problem": None,
            "settings_changed": False, "stale": {"added": [], "modified": [], "deleted": []}}


def test_status_shows_a_running_background_and_why_a_stopped_one_stopped():
    running = status_lines(_status({"running": True, "pid": 7, "log": "/x/log", "embedded": 20, "started_at": 1.0,
                                    "stopped": None}))
    assert any(line.startswith("Background  making them (pid 7): 20 chunks so far") for line in running), running
    assert any("the background embedder makes the rest" in line for line in running), running
    stopped = status_lines(_status({"running": False, "pid": 7, "log": "/x/log", "embedded": 20, "started_at": 1.0,
                                    "stopped": "stopped (SIGTERM): the next `codeasst index` resumes"}))
    assert any(line.startswith("Background  not running (stopped (SIGTERM)") for line in stopped), stopped
    done = status_lines(_status({"running": False, "pid": 7, "log": "/x/log", "embedded": 60, "started_at": 1.0,
                                 "stopped": "done: every chunk has its vector"}, first_phase=False))
    assert not [line for line in done if line.startswith("Background")], "complete: nothing to say"
