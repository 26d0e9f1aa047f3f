"""The serve's A/B test: requests alternate between two model variants, each suggestion's
events are filed under the variant that wrote it, and `stats` compares the two with a
significance test. Scripted models stand in for the two variants; the split, the event
bookkeeping and the statistics are what is tested."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from codeasst.backends.fake import HashingEmbedder, ScriptedLLM
from codeasst.serve.app import create_app
from codeasst.services import build_services
from codeasst.wire.events import EventStore, two_proportion_p, welch_p

MODULE = "def add(a, b):\n    \n"


@pytest.fixture
def ab_server(make_repo, tmp_path, monkeypatch):
    from codeasst import models

    root = make_repo({"mod.py": MODULE})
    default = ScriptedLLM(["return a + b"] * 4)
    default.name = "bundled"
    other = ScriptedLLM(["return b + a"] * 4)
    other.name = "alt"
    built = []

    def fake_build(spec, settings, progress=None):
        built.append(spec.name)
        return other

    monkeypatch.setattr(models, "build_llm", fake_build)
    monkeypatch.setattr(models, "resolve", lambda settings, name=None: models.ModelSpec(name or "bundled", "gguf", "test"))
    services = build_services(root, {"complete.variants": ["bundled", "alt"]}, embedder=HashingEmbedder(), llm=default)
    monkeypatch.setattr(type(services), "model_spec", models.ModelSpec("bundled", "gguf", "test"))
    events = EventStore(tmp_path / "events.sqlite")
    return TestClient(create_app(services, events=events), base_url="http://127.0.0.1"), events, built


def test_requests_alternate_between_the_variants_and_events_follow_the_writer(ab_server):
    client, events, built = ab_server
    at = {"path": "mod.py", "line": 2, "col": 5}
    first = client.post("/v1/complete", json={**at, "client": "one"}).json()
    second = client.post("/v1/complete", json={**at, "client": "two"}).json()
    assert {first["model"], second["model"]} == {"bundled", "alt"}
    assert built == ["alt"]  # the other variant's model is built once, the default one reused
    by_model = {first["model"]: first, second["model"]: second}
    assert by_model["bundled"]["text"] == "return a + b" and by_model["alt"]["text"] == "return b + a"
    for reply in (first, second):
        assert client.post("/v1/events", json={"kind": "shown", "id": reply["id"], "shown_length": 12}).status_code == 200
    client.post("/v1/events", json={"kind": "accepted", "id": by_model["alt"]["id"], "accepted_length": 12})
    client.post("/v1/events", json={"kind": "discarded", "id": by_model["bundled"]["id"]})
    days = {d.variant: d for d in events.days()}
    assert (days["alt"].accepted, days["alt"].discarded) == (1, 0)
    assert (days["bundled"].accepted, days["bundled"].discarded) == (0, 1)
    comparison = events.compare()
    assert {comparison.a.variant, comparison.b.variant} == {"bundled", "alt"}


def test_the_comparison_tells_a_real_difference_from_chance(tmp_path):
    store = EventStore(tmp_path / "events.sqlite")
    for i in range(200):
        for variant, accepts in (("a", i % 2 == 0), ("b", i % 5 == 0)):  # 50% against 20% accepted
            sid = f"{variant}-{i}"
            store.record("shown", sid, variant, shown_length=20)
            if accepts:
                store.record("accepted", sid, variant, accepted_length=20)
            else:
                store.record("discarded", sid, variant)
    comparison = store.compare()
    assert (comparison.a.accept_rate, comparison.b.accept_rate) in ((0.5, 0.2), (0.2, 0.5))
    assert comparison.accept_p < 1e-6 and comparison.happiness_p < 1e-6
    assert "not significant" not in "\n".join(comparison.lines())


def test_the_statistics():
    assert two_proportion_p(50, 100, 30, 100) == pytest.approx(0.0039, abs=2e-4)  # z = 2.89
    assert two_proportion_p(30, 100, 30, 100) == pytest.approx(1.0)
    assert two_proportion_p(0, 0, 3, 10) == 1.0
    assert welch_p((1.0, 2.0, 3.0) * 20, (1.0, 2.0, 3.0) * 20) == pytest.approx(1.0)
    assert welch_p((0.0, 1.0) * 50, (5.0, 6.0) * 50) < 1e-9


def test_one_variant_has_nothing_to_compare(tmp_path):
    store = EventStore(tmp_path / "events.sqlite")
    store.record("shown", "s1", "bundled", shown_length=5)
    assert store.compare() is None


def test_a_separate_completion_model_completes_and_warms_while_the_other_answers(make_repo):
    root = make_repo({"mod.py": MODULE})
    answering, completing = ScriptedLLM(), ScriptedLLM(["return a + b"])
    answering.name, completing.name = "bundled", "bundled-1.5b"
    services = build_services(root, embedder=HashingEmbedder(), llm=answering)
    services.__dict__["complete_llm"] = completing  # what complete.model resolved to, built
    client = TestClient(create_app(services, events=EventStore(root.parent / "events.sqlite")), base_url="http://127.0.0.1")
    assert client.post("/v1/open", json={"path": "mod.py", "line": 2, "col": 5}).status_code == 200
    reply = client.post("/v1/complete", json={"path": "mod.py", "line": 2, "col": 5}).json()
    assert (reply["text"], reply["model"]) == ("return a + b", "bundled-1.5b")
    assert completing.history and not answering.history
    health = client.get("/v1/health").json()
    assert (health["model"], health["complete_model"]) == ("bundled", "bundled-1.5b")


class Warming(ScriptedLLM):
    def __init__(self, replies):
        super().__init__(replies)
        self.warmed: list[str] = []

    def warm(self, text, cancelled=None):
        self.warmed.append(text)
        return 0


def test_the_warm_up_at_column_one_is_the_start_of_the_prompt_complete_then_sends(make_repo):
    # At column 1 complete() asks with the block's indentation added: /v1/open warms that prompt, not another.
    root = make_repo({"mod.py": "def add(a, b):\n    c = a + b\n\n\nprint(add(1, 2))\n"})
    llm = Warming(["return c"])
    services = build_services(root, embedder=HashingEmbedder(), llm=llm)
    client = TestClient(create_app(services, events=EventStore(root.parent / "events.sqlite")), base_url="http://127.0.0.1")
    assert client.post("/v1/open", json={"path": "mod.py", "line": 3, "col": 1}).status_code == 200
    reply = client.post("/v1/complete", json={"path": "mod.py", "line": 3, "col": 1}).json()
    assert reply["candidate"] == "    return c"
    assert llm.warmed[-1].endswith("    c = a + b\n    <|fim_suffix|>\n\nprint(add(1, 2))\n")
    assert llm.history[-1].startswith(llm.warmed[-1])


def test_a_request_the_user_asked_for_goes_to_the_invoked_model(make_repo, tmp_path, monkeypatch):
    from codeasst import models

    root = make_repo({"mod.py": MODULE})
    default = ScriptedLLM(["return a + b"] * 4)
    default.name = "bundled"
    larger = ScriptedLLM(["return b + a"] * 4)
    monkeypatch.setattr(models, "build_llm", lambda spec, settings, progress=None: larger)
    monkeypatch.setattr(models, "resolve", lambda settings, name=None: models.ModelSpec(name or "bundled", "gguf", "test"))
    services = build_services(root, {"complete.invoked_model": "bundled-1.5b"}, embedder=HashingEmbedder(), llm=default)
    monkeypatch.setattr(type(services), "model_spec", models.ModelSpec("bundled", "gguf", "test"))
    client = TestClient(create_app(services, events=EventStore(tmp_path / "events.sqlite")), base_url="http://127.0.0.1")
    at = {"path": "mod.py", "line": 2, "col": 5}
    typed = client.post("/v1/complete", json={**at, "client": "one"}).json()
    asked = client.post("/v1/complete", json={**at, "client": "two", "trigger": "invoked"}).json()
    assert (typed["model"], typed["text"]) == ("bundled", "return a + b")
    assert (asked["model"], asked["text"]) == ("bundled-1.5b", "return b + a")
