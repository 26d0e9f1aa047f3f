"""The model runtime with the real bundled model: in process, through the CLI, and behind
a real OpenAI-compatible server (llama_cpp.server) started on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from codeasst import paths
from codeasst.backends import bundled
from codeasst.backends.openai_http import OpenAICompatibleEmbedder, OpenAICompatibleLLM
from codeasst.services import build_services
from tests.e2e.conftest import assert_one_line_error, free_port, run_cli, run_json, wait_for_port

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def gguf(tmp_path_factory):
    return bundled.ensure_gguf(bundled.DEFAULT, tmp_path_factory.mktemp("models"))


def test_the_bundled_model_generates_greedily(tmp_path):
    llm = build_services(tmp_path).llm
    completion = llm.complete("def add(a, b):\n    return", max_tokens=8, stop=("\n",))
    assert completion.text.strip() == "a + b"
    answer = llm.chat([{"role": "user", "content": "What is the capital of France? Answer in one word."}],
                      max_tokens=8)
    assert answer.text.strip().rstrip(".") == "Paris"
    scored = llm.complete("The capital of France is", max_tokens=1, logprobs=3)
    (token,) = scored.tokens
    assert token.text == " Paris" and -1.0 < token.logprob < 0
    assert " Paris" in token.top and len(token.top) == 3
    assert (paths.cache_dir() / "models" / bundled.DEFAULT.filename()).is_file()


def test_models_list_and_check_through_the_cli(tmp_path):
    listed = run_json("models", "-C", str(tmp_path))
    assert listed["current"] == "bundled"
    (bundled_spec,) = [m for m in listed["models"] if m["name"] == "bundled"]
    assert bundled_spec["available"] and bundled_spec["size"] == bundled.DEFAULT.size
    checked = run_json("models", "--check", "-C", str(tmp_path))
    assert checked["details"]["device"] in ("CPU", "CUDA", "Metal")
    assert checked["prompt_tokens"] > 10 and checked["generated_tokens"] > 5
    assert checked["prompt_tok_s"] > 0 and checked["generation_tok_s"] > 0
    assert "def add_numbers" in checked["text"]


def test_a_corrupt_gguf_is_a_one_line_error(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + os.urandom(4096))
    proc = run_cli("models", "--check", "--model", str(bad), "-C", str(tmp_path), check_rc=None)
    assert_one_line_error(proc, 4, f"cannot load {bad}")


@pytest.fixture(scope="module")
def llama_server(gguf):
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.llama_server", "--model", str(gguf), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "2048", "--embedding", "true", "--verbose", "false"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    wait_for_port(port, 120)
    yield f"http://127.0.0.1:{port}/v1"
    server.terminate()
    server.wait(timeout=30)


def test_the_openai_compatible_backend_against_a_real_server(llama_server):
    llm = OpenAICompatibleLLM(llama_server, "bundled")
    assert llm.complete("def add(a, b):\n    return", max_tokens=8, stop=("\n",)).text.strip() == "a + b"
    answer = llm.chat([{"role": "user", "content": "What is the capital of France? Answer in one word."}],
                      max_tokens=8)
    assert "Paris" in answer.text
    (token,) = llm.complete("The capital of France is", max_tokens=1, logprobs=2).tokens
    assert token.text == " Paris" and token.logprob < 0
    vectors = OpenAICompatibleEmbedder(llama_server, "bundled").embed(["def add(a, b)", "class Invoice"])
    assert len(vectors) == 2 and len(vectors[0]) == len(vectors[1]) > 100
    assert vectors[0] != vectors[1]


def test_a_configured_server_model_through_the_cli(llama_server, tmp_path):
    env = {"CODEASST_MODELS__LOCAL__URL": llama_server, "CODEASST_MODELS__LOCAL__MODEL": "bundled"}
    checked = run_json("models", "--check", "--model", "local", "-C", str(tmp_path), env=env)
    assert checked["details"]["backend"] == "OpenAI-compatible server"
    assert checked["generated_tokens"] > 5
    down = {"CODEASST_MODELS__DOWN__URL": "http://127.0.0.1:9/v1", "CODEASST_LLM__RETRIES": "0"}
    proc = run_cli("models", "--check", "--model", "down", "-C", str(tmp_path), env=down, check_rc=None)
    assert_one_line_error(proc, 4, "cannot reach the model server at http://127.0.0.1:9/v1")


def test_a_prefix_restored_from_disk_gives_the_same_answer(tmp_path):
    llm = build_services(tmp_path).llm
    messages = [{"role": "system", "content": "You answer in one word."},
                {"role": "user", "content": "What is the capital of Italy?"}]
    prefix = llm.chat_prompt(messages[:1]).removesuffix("<|im_start|>assistant\n")
    llm.llama.reset()
    cold = llm.chat(messages, max_tokens=6).text
    llm.llama.reset()
    llm.reuse_prefix(prefix)  # computes and saves the state
    saved = list((paths.cache_dir() / "kv-states").glob("*.npz"))
    assert len(saved) == 1
    llm.llama.reset()
    llm.reuse_prefix(prefix)  # restores it from disk
    assert llm.llama.n_tokens == llm.count_tokens(prefix)
    assert llm.chat(messages, max_tokens=6).text == cold


def test_a_client_coming_back_finds_its_own_cache_and_the_same_answer(tmp_path):
    """The server's completions switch the context between clients: each finds its KV cache as it
    left it, and the answer from a restored cache is the one a fresh evaluation gives."""
    llm = build_services(tmp_path).llm
    mine = "".join(f"def f{i}(x):\n    return x * {i}\n\n" for i in range(40)) + "def add(a, b):\n    return"
    theirs = "".join(f"class C{i}:\n    value = {i}\n\n" for i in range(40)) + "class Point:\n    def __init__"
    llm.switch("me", keep=2)
    first = llm.complete(mine, max_tokens=6, stop=("\n",)).text
    llm.switch("them", keep=2)
    llm.complete(theirs, max_tokens=6, stop=("\n",))
    assert llm.cached_tokens(mine) < 10, "the other client's prompt now fills the context"
    llm.switch("me", keep=2)
    assert llm.cached_tokens(mine) == llm.count_tokens(mine), "mine came back whole"
    assert llm.complete(mine, max_tokens=6, stop=("\n",)).text == first
    llm.switch("nobody kept", keep=0)
    llm.switch("me", keep=0)
    assert llm.cached_tokens(mine) == llm.count_tokens(mine), "with keep=0 nothing is set aside or restored"


def test_text_still_in_the_cache_further_on_is_shifted_into_place_not_read_again(tmp_path):
    """A prompt whose window of the file moved down (its first lines gone, new ones at the end) reuses the
    KV of the lines both hold, shifted to their new positions (llama.cpp's --cache-reuse); the answer is
    the one a cold evaluation gives."""
    llm = build_services(tmp_path).llm
    lines = [f"def f{i}(x):\n    return x * {i} + {i * 7}\n\n" for i in range(60)]
    old = "<|fim_prefix|>" + "".join(lines[:40])
    new = "<|fim_prefix|>" + "".join(lines[12:52]) + "def add(a, b):\n    return"
    llm.warm(old)
    evaluated = llm.warm(new)
    total = llm.count_tokens(new)
    assert evaluated < total / 2, (evaluated, total)  # lines 12 to 39 were shifted, not read again
    reused = llm.complete(new, max_tokens=8, stop=("\n",)).text
    llm.llama.reset()
    assert llm.complete(new, max_tokens=8, stop=("\n",)).text == reused


def test_a_prompt_that_is_a_prefix_of_the_last_one_is_answered_from_its_own_logits(tmp_path):
    """The cache holds a longer prompt and its answer: a prompt it holds whole is read to its last token
    again, never answered from the logits the longer one left."""
    llm = build_services(tmp_path).llm
    short = "def add(a, b):\n    return"
    cold = llm.complete(short, max_tokens=6, stop=("\n",)).text
    llm.complete(short + " a + b\n\n\ndef mul(a, b):\n    return", max_tokens=6, stop=("\n",))
    assert llm.complete(short, max_tokens=6, stop=("\n",)).text == cold
