"""Prompt files, installed as codeasst.prompts and read by codeasst.prompt."""
