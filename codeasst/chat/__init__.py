"""`codeasst chat`: the terminal UI for conversations about the repository."""
