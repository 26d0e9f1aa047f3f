"""What `codeasst lsp` tells a client it can do, in its initialize answer: each feature module registers
its own handlers (codeasst/lsp/server.py joins them), so a module left out shows here as a capability
gone, before any editor finds it missing."""

from __future__ import annotations

from tests.lsp_client import INLINE_CAPS, LspProcess


def test_initialize_declares_every_feature_and_command(make_repo):
    root = make_repo({"mod.py": "x = 1\n"})
    lsp = LspProcess(root, "--no-start")  # no `codeasst serve` is needed to say what it can do
    try:
        result = lsp.initialize(root, INLINE_CAPS)
    finally:
        assert lsp.close() == 0
    caps = result["capabilities"]
    assert result["serverInfo"]["name"] == "codeasst"
    assert caps["textDocumentSync"]["change"] == 2  # incremental
    assert caps["textDocumentSync"]["openClose"] is True and caps["textDocumentSync"]["save"] is not None
    assert caps["inlineCompletionProvider"] is not None
    assert caps["completionProvider"]["triggerCharacters"] == [".", "(", " "]
    assert caps["codeActionProvider"] == {"codeActionKinds": ["quickfix", "source.fixAll.codeasst"],
                                          "resolveProvider": True}
    assert caps["workspaceSymbolProvider"] is not None
    assert sorted(caps["executeCommandProvider"]["commands"]) == [
        "codeasst.accept", "codeasst.ask", "codeasst.discard", "codeasst.fixFile", "codeasst.fixLine"]
