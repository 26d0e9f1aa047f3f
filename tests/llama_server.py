"""llama-cpp-python's OpenAI-compatible server, started as codeasst loads its own models: on a CPU with
AMX, without llama.cpp's weight repacking (codeasst.backends.llama_cpp.no_weight_repacking; with it,
the first decode crashes there). Run as `python -m tests.llama_server ARGS...`, ARGS as llama_cpp.server's."""

from __future__ import annotations

import runpy

from codeasst.backends.llama_cpp import amx_cpu, no_weight_repacking

if __name__ == "__main__":
    with no_weight_repacking(amx_cpu()):
        runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
