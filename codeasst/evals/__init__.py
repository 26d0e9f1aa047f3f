"""Evaluation harnesses behind `codeasst eval ...`."""
