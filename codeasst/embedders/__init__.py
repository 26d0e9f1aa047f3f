"""Static embedding models shipped as package data (built by scripts/build_static_embedder.py and
scripts/train_static_embedder.py)."""

# The folders here, the default first: distilled from MiniLM (issue 45), and the same trained on code with
# tokenlearn (issue 53; not the default: on the two tune splits together its first hits were no better,
# docs/benchmarks.md). Read by the static embedder and by trust (a repository's config may name these).
SHIPPED = ("static-minilm", "static-code")
