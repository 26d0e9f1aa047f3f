"""Static embedding models shipped as package data (built by scripts/build_static_embedder.py)."""
