"""`codeasst lsp`: codeasst in any editor, through the Language Server Protocol (server.py)."""
