"""Static embedding models shipped as package data (built by scripts/build_static_embedder.py and
scripts/train_static_embedder.py)."""

# The folders here, the default first: trained on code with tokenlearn (issue 53), and the distillation
# it starts from (issue 45). Read by the static embedder and by trust (a repository's config may name these).
SHIPPED = ("static-code", "static-minilm")
