"""Use cases: each takes a Services object and a request, and returns a result."""
