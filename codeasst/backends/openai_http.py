"""An OpenAI-compatible server (llama-server, vLLM, Ollama, llama_cpp.server) over HTTP.

Raw prompts go to /v1/completions, which FIM needs; chat goes to
/v1/chat/completions so the server applies its own template; embeddings to
/v1/embeddings. Connection failures and 5xx answers are retried a bounded
number of times, and only before the first token has been passed on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

from codeasst.backends.base import LLM, Embedder, GenerationParams, Message, Token, Vector, cut_at_stop
from codeasst.errors import ModelError

RETRY_STATUS = {429, 500, 502, 503, 504}


class _Client:
    def __init__(self, base_url: str, api_key: str | None, timeout: float, retries: int) -> None:
        self.base_url = base_url.rstrip("/")
        if not self.base_url.endswith("/v1"):
            self.base_url += "/v1"
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = timeout
        self.retries = retries

    def _send(self, path: str, body: dict[str, Any], stream: bool):
        import httpx

        url = f"{self.base_url}{path}"
        timeout = httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0))
        for attempt in range(self.retries + 1):
            try:
                client = httpx.Client(timeout=timeout, headers=self.headers)
                response = client.send(client.build_request("POST", url, json=body), stream=stream)
            except httpx.HTTPError as exc:
                failure = f"cannot reach the model server at {self.base_url}: {exc}"
            else:
                if response.status_code < 400:
                    return client, response
                response.read()
                failure = f"the model server answered {response.status_code}: {response.text[:200]}"
                client.close()
                if response.status_code not in RETRY_STATUS:
                    break
            if attempt < self.retries:
                time.sleep(0.5 * 2**attempt)
        raise ModelError(failure)

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        client, response = self._send(path, body, stream=False)
        try:
            return response.json()
        except ValueError as exc:
            raise ModelError(f"the model server at {self.base_url} sent invalid JSON: {exc}") from None
        finally:
            client.close()

    def events(self, path: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        import httpx

        client, response = self._send(path, {**body, "stream": True}, stream=True)
        try:
            try:
                for line in response.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    yield json.loads(data)
            except httpx.HTTPError as exc:
                raise ModelError(f"the model server at {self.base_url} broke off: {exc}") from None
        finally:
            response.close()
            client.close()


def _body(params: GenerationParams, model: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": params.max_tokens, "temperature": params.temperature}
    if params.stop:
        body["stop"] = list(params.stop)
    return body


class OpenAICompatibleLLM(LLM):
    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, timeout: float = 120.0,
                 retries: int = 2, context_length: int = 4096) -> None:
        self.client = _Client(base_url, api_key, timeout, retries)
        self.model = model
        self.name = f"{model}@{self.client.base_url}"
        self.context_length = context_length

    def describe(self) -> dict[str, object]:
        return {"backend": "OpenAI-compatible server", "url": self.client.base_url, "model": self.model,
                "device": "remote"}

    def stream(self, prompt: str, params: GenerationParams) -> Iterator[Token]:
        body = {**_body(params, self.model), "prompt": prompt}
        if params.logprobs is not None:
            body["logprobs"] = params.logprobs
        for event in self.client.events("/completions", body):
            for choice in event.get("choices", []):
                if choice.get("text"):
                    yield _token_with_logprobs(choice)

    def chat_stream(self, messages: Sequence[Message], **params) -> Iterator[Token]:
        generation = GenerationParams(**params)
        body = {**_body(generation, self.model), "messages": list(messages)}
        tokens = (
            Token(choice["delta"]["content"])
            for event in self.client.events("/chat/completions", body)
            for choice in event.get("choices", [])
            if choice.get("delta", {}).get("content")
        )
        return cut_at_stop(tokens, generation.stop) if generation.stop else tokens


def _token_with_logprobs(choice: dict[str, Any]) -> Token:
    info = choice.get("logprobs") or {}
    logprobs = info.get("token_logprobs") or [None]
    top = (info.get("top_logprobs") or [None])[0]
    return Token(choice["text"], logprobs[0], dict(top) if top else None)


class OpenAICompatibleEmbedder(Embedder):
    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, timeout: float = 60.0,
                 retries: int = 2, batch_size: int = 64) -> None:
        self.client = _Client(base_url, api_key, timeout, retries)
        self.model = model
        self.name = f"openai:{model}@{self.client.base_url}"
        self.batch_size = batch_size

    def embed_batch(self, texts: Sequence[str]) -> list[Vector]:
        answer = self.client.post("/embeddings", {"model": self.model, "input": list(texts)})
        rows = sorted(answer.get("data", []), key=lambda row: row["index"])
        return [_pooled(row["embedding"]) for row in rows]


def _pooled(embedding: list) -> Vector:
    """Some servers (llama_cpp.server with a model that has no pooling) send one vector per
    token; average them, as sentence embedders do."""
    if embedding and isinstance(embedding[0], list):
        dims = len(embedding[0])
        return [sum(row[i] for row in embedding) / len(embedding) for i in range(dims)]
    return embedding
