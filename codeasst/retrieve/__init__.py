"""Retrievers over the index."""
