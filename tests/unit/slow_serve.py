"""A real `codeasst serve` process on a scripted model that takes a second a token, for the tests of
stopping: `python -m tests.unit.slow_serve REPO`."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from codeasst.backends.base import GenerationParams, Token
from codeasst.backends.fake import HashingEmbedder, ScriptedLLM


class SlowLLM(ScriptedLLM):
    """A scripted model that takes `delay` seconds a token, and says when it stopped."""

    def __init__(self, replies: list[str], delay: float) -> None:
        super().__init__(replies)
        self.delay = delay
        self.stopped = threading.Event()

    def stream(self, prompt: str, params: GenerationParams) -> Iterator[Token]:
        try:
            for token in super().stream(prompt, params):
                time.sleep(self.delay)
                yield token
        finally:
            self.stopped.set()


if __name__ == "__main__":
    from codeasst.serve.run import run_server
    from codeasst.services import build_services

    services = build_services(Path(sys.argv[1]), embedder=HashingEmbedder(),
                              llm=SlowLLM(["return a + b + 0 + 0 + 0"] * 20, delay=1.0))
    run_server(services, host="127.0.0.1", port=0, token=None, no_token=False,
               note=lambda message: print(message, file=sys.stderr))
