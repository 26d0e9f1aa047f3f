"""`codeasst mcp`: the index, the code graph, checked answers, lint and fix as tools for coding agents,
over the Model Context Protocol on stdio (tools.py: what each tool does; server.py: the protocol)."""
