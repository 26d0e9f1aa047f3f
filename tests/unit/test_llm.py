"""The LLM base class's concrete behaviour, the prompt loader and model resolution."""

from __future__ import annotations

import http.server
import threading

import pytest

from codeasst import prompt
from codeasst.backends.base import Token, cut_at_stop
from codeasst.backends.fake import ScriptedLLM
from codeasst.backends.openai_http import OpenAICompatibleLLM
from codeasst.config import load_settings
from codeasst.errors import ModelError
from codeasst.models import build_llm, resolve
from codeasst.prompt import PromptError


def texts(tokens):
    return [t.text for t in tokens]


@pytest.mark.parametrize(
    ("pieces", "stops", "expected"),
    [
        (["def", " f", "():", "\n\n", "de", "f g"], ["\n\ndef"], ["def", " f", "():"]),
        (["a", "b", "c"], ["zz"], ["a", "b", "c"]),
        (["ret", "urn x", "<|im", "_end|>", "more"], ["<|im_end|>"], ["ret", "urn x"]),
        (["x = 1\ny", " = 2"], ["\n"], ["x = 1"]),
        (["STOP", "a"], ["STOP"], []),
        (["ab", "cd"], ["cd", "bc"], ["a"]),
    ],
)
def test_stop_sequences_are_cut_even_across_tokens(pieces, stops, expected):
    assert texts(cut_at_stop(iter(Token(p) for p in pieces), stops)) == expected


def test_cut_at_stop_streams_without_waiting_for_the_end():
    def endless():
        while True:
            yield Token("word ")

    first = next(iter(cut_at_stop(endless(), ["never"])))
    assert first.text == "word "


def test_complete_and_chat_on_the_scripted_model():
    llm = ScriptedLLM(["x + y", "Paris<|im_end|>ignored", "one two three four"])
    assert llm.complete("def add(x, y): return ").text == "x + y"
    answer = llm.chat([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital?"}])
    assert answer.text == "Paris"
    assert llm.history[1] == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nCapital?<|im_end|>\n<|im_start|>assistant\n")
    capped = llm.complete("count", max_tokens=2)
    assert (capped.text, capped.finish_reason) == ("one two", "length")


def test_prompt_files_load_and_missing_variables_are_errors():
    probe = prompt.load("probe")
    assert probe.variables() == {"name"}
    assert "named add_numbers" in probe.messages(name="add_numbers")[1]["content"]
    with pytest.raises(PromptError, match="needs name"):
        probe.messages()
    with pytest.raises(PromptError, match="no prompt named 'nope'"):
        prompt.load("nope")


@pytest.mark.parametrize(("installed", "cores", "gpu", "chosen"), [
    (False, 16, True, "bundled"),  # the 1.5B is optional: without it, always the 0.5B
    (True, 2, False, "bundled"),  # 2 CPU cores: the 1.5B's first token comes too late
    (True, 4, False, "bundled-1.5b"),
    (True, 2, True, "bundled-1.5b"),
])
def test_auto_picks_the_1_5b_only_where_it_answers_in_time(monkeypatch, installed, cores, gpu, chosen):
    from codeasst import models
    from codeasst.backends import bundled, llama_cpp

    monkeypatch.setattr(bundled, "is_installed", lambda model: installed or model is bundled.DEFAULT)
    monkeypatch.setattr(llama_cpp, "default_threads", lambda: cores)
    monkeypatch.setattr(llama_cpp, "gpu_offload_supported", lambda: gpu)
    settings = load_settings(None).settings
    assert settings.llm.model == "auto"
    assert resolve(settings).name == chosen
    assert resolve(settings, "bundled").name == "bundled"  # a named model is never second-guessed
    assert models.auto_choice() == chosen


@pytest.mark.parametrize(("installed", "cores", "completing", "answering"), [
    (False, 2, "bundled", "bundled"),  # without the 1.5B, the 0.5B does everything
    (True, 2, "bundled", "bundled"),  # 2 cores: the 1.5B cannot answer inside the typing budget (Happiness)
    (True, 8, "bundled-1.5b", "bundled-1.5b"),
])
def test_the_completion_model_is_chosen_apart_from_the_answering_one(monkeypatch, tmp_path, installed, cores,
                                                                     completing, answering):
    from codeasst import models
    from codeasst.backends import bundled, llama_cpp
    from codeasst.services import build_services

    monkeypatch.setattr(bundled, "is_installed", lambda model: installed or model is bundled.DEFAULT)
    monkeypatch.setattr(llama_cpp, "default_threads", lambda: cores)
    monkeypatch.setattr(llama_cpp, "gpu_offload_supported", lambda: False)
    monkeypatch.delenv("CODEASST_COMPLETE__MODEL")  # the suite's pin (conftest.py): the default here
    settings = load_settings(None).settings
    assert (models.resolve_complete(settings).name, resolve(settings).name) == (completing, answering)
    assert models.resolve_complete(settings, "bundled").name == "bundled"  # --model sets both
    monkeypatch.setenv("CODEASST_COMPLETE__MODEL", "llm")
    assert models.resolve_complete(load_settings(None).settings).name == answering

    monkeypatch.delenv("CODEASST_COMPLETE__MODEL")
    services = build_services(tmp_path)
    monkeypatch.setattr("codeasst.services.build_llm", lambda *_: pytest.fail("no second model for one name"))
    if completing == answering:
        services.__dict__["llm"] = sentinel = object()  # the answering model, already built
        assert services.complete_llm is sentinel
    else:
        assert services.complete_spec != services.model_spec


def test_model_resolution(tmp_path, monkeypatch):
    from codeasst import models

    monkeypatch.setattr(models, "auto_choice", lambda: "bundled")
    settings = load_settings(None).settings
    assert resolve(settings).name == "bundled"
    with pytest.raises(ModelError, match="unknown model 'gpt-9'") as info:
        resolve(settings, "gpt-9")
    assert "bundled" in info.value.one_line()
    with pytest.raises(ModelError, match="model file not found"):
        resolve(settings, str(tmp_path / "missing.gguf"))
    gguf = tmp_path / "my-model.Q5_K_M.gguf"
    gguf.write_bytes(b"GGUF")
    spec = resolve(settings, str(gguf))
    assert (spec.kind, spec.quantization, spec.size) == ("gguf", "Q5_K_M", 4)

    monkeypatch.setenv("CODEASST_MODELS__TEAM__URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("CODEASST_MODELS__TEAM__MODEL", "qwen-7b")
    monkeypatch.setenv("CODEASST_MODELS__TEAM__API_KEY_ENV", "TEAM_KEY")
    monkeypatch.setenv("TEAM_KEY", "s3cret")
    settings = load_settings(None).settings
    spec = resolve(settings, "team")
    assert (spec.kind, spec.server_model) == ("server", "qwen-7b")
    llm = build_llm(spec, settings)
    assert isinstance(llm, OpenAICompatibleLLM)
    assert llm.client.headers == {"Authorization": "Bearer s3cret"}
    assert "s3cret" not in repr(spec.to_json())

    monkeypatch.setenv("CODEASST_MODELS__BROKEN__CONTEXT_LENGTH", "100")
    with pytest.raises(ModelError, match=r"\[models.broken\] needs a `path`"):
        resolve(load_settings(None).settings, "broken")


class _Flaky(http.server.BaseHTTPRequestHandler):
    """A real HTTP server that fails a set number of times before answering."""

    failures = 0
    requests = 0

    def do_POST(self):
        type(self).requests += 1
        self.rfile.read(int(self.headers["Content-Length"]))
        if type(self).requests <= type(self).failures:
            self.send_response(503)
            self.end_headers()
            self.wfile.write(b"busy")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b'data: {"choices": [{"text": "hello"}]}\n\ndata: [DONE]\n\n')

    def log_message(self, *args):
        pass


@pytest.fixture
def flaky_server():
    server = http.server.HTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


def test_server_backend_retries_a_bounded_number_of_times(flaky_server):
    url = f"http://127.0.0.1:{flaky_server.server_port}/v1"
    _Flaky.failures, _Flaky.requests = 2, 0
    assert OpenAICompatibleLLM(url, "m", retries=2).complete("hi").text == "hello"
    assert _Flaky.requests == 3

    _Flaky.failures, _Flaky.requests = 10, 0
    with pytest.raises(ModelError, match="answered 503"):
        OpenAICompatibleLLM(url, "m", retries=1).complete("hi")
    assert _Flaky.requests == 2


def test_an_unreachable_server_is_a_model_error():
    llm = OpenAICompatibleLLM("http://127.0.0.1:9", "m", retries=0, timeout=2)
    with pytest.raises(ModelError, match="cannot reach the model server at http://127.0.0.1:9/v1"):
        llm.complete("hi")


def test_every_prompt_file_loads_and_renders_with_its_variables():
    from importlib import resources

    names = [p.name.removesuffix(".toml") for p in resources.files("codeasst.prompts").iterdir()
             if p.name.endswith(".toml")]
    assert {"ask", "probe", "query_analysis", "rerank"} <= set(names)
    for name in names:
        loaded = prompt.load(name)
        values = {v: f"<{v}>" for v in loaded.variables()}
        for part in loaded.parts:
            assert "$" not in loaded.render(part, **values).replace("$$", "")


def test_the_answering_model_is_a_setting_apart_from_fix(monkeypatch, tmp_path):
    from codeasst import models
    from codeasst.services import build_services

    settings = load_settings(None).settings
    assert settings.ask.model == "llm" and models.resolve_ask(settings) == resolve(settings)  # fix's model
    monkeypatch.setenv("CODEASST_ASK__MODEL", "none")
    quiet = load_settings(None).settings
    assert models.resolve_ask(quiet) is None  # the lead and outline alone
    assert models.resolve_ask(quiet, "bundled").name == "bundled"  # --model sets it
    assert resolve(quiet).name == resolve(settings).name  # fix keeps its model
    assert build_services(tmp_path).ask_llm is None
    monkeypatch.setenv("CODEASST_ASK__MODEL", "bundled")
    built = []
    monkeypatch.setattr("codeasst.services.build_llm", lambda spec, *_: built.append(spec) or object())
    services = build_services(tmp_path)
    if services.model_spec == services.ask_spec:  # llm.model picks the 0.5B here too: one model, loaded once
        assert services.ask_llm is services.llm and len(built) == 1
    (tmp_path / "other.gguf").write_bytes(b"GGUF")
    monkeypatch.setenv("CODEASST_ASK__MODEL", str(tmp_path / "other.gguf"))
    apart = build_services(tmp_path)
    assert apart.ask_llm is not apart.llm and apart.ask_spec.name != apart.model_spec.name


def test_ask_model_auto_is_the_model_with_a_gpu_and_none_without(monkeypatch):
    from codeasst import models

    monkeypatch.setenv("CODEASST_ASK__MODEL", "auto")
    settings = load_settings(None).settings
    monkeypatch.setattr("codeasst.backends.llama_cpp.gpu_offload_supported", lambda: False)
    assert models.resolve_ask(settings) is None  # on the CPU: the lead and outline alone
    monkeypatch.setattr("codeasst.backends.llama_cpp.gpu_offload_supported", lambda: True)
    assert models.resolve_ask(settings) == resolve(settings)  # on a GPU: llm.model's
    assert models.resolve_ask(settings, "none") is None  # --model still decides
