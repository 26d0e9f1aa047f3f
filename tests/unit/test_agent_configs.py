"""The agent setups in the docs parse, and each one that names a command runs `codeasst mcp`.

Users copy these blocks into their agents' config files as they are; a stray comma or a wrong
key shows up there as a server that silently never starts.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("docs/agents/README.md", "docs/commands/mcp.md")
PARSED = ("json", "toml", "yaml")

# A fenced block: its opening fence (indented under a list item or not), its tag, its body.
_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<tag>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.MULTILINE | re.DOTALL
)


def fenced_blocks(text: str) -> list[tuple[str, int, str]]:
    """(tag, line number, body) of every fenced block, its indentation removed."""
    blocks = []
    for match in _FENCE.finditer(text):
        indent = len(match["indent"])
        body = "".join(line[indent:] for line in match["body"].splitlines(keepends=True))
        blocks.append((match["tag"].lower(), text.count("\n", 0, match.start()) + 1, body))
    return blocks


def parse(tag: str, body: str) -> object:
    if tag == "json":
        return json.loads(body)
    if tag == "toml":
        return tomllib.loads(body)
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed: the yaml blocks are not checked")
    return yaml.safe_load(body)


def servers(config: object) -> list[dict]:
    """Every mapping in the config that names a command, at any depth."""
    if isinstance(config, dict):
        found = [config] if "command" in config else []
        return found + [s for value in config.values() for s in servers(value)]
    if isinstance(config, list):
        return [s for item in config for s in servers(item)]
    return []


def runs_codeasst_mcp(server: dict) -> bool:
    command, args = server["command"], server.get("args", [])
    # Zed's settings once nested the command: {"command": {"path": ..., "args": [...]}}.
    if isinstance(command, dict):
        command, args = command.get("path"), command.get("args", [])
    return isinstance(command, str) and Path(command).name == "codeasst" and isinstance(args, list) and "mcp" in args


BLOCKS = [
    pytest.param(tag, body, id=f"{page}:{line}:{tag}")
    for page in PAGES
    for tag, line, body in fenced_blocks((ROOT / page).read_text(encoding="utf-8"))
    if tag in PARSED
]


def test_the_pages_have_config_blocks():
    tags = [param.values[0] for param in BLOCKS]
    assert {"json", "toml", "yaml"} <= set(tags), tags


@pytest.mark.parametrize(("tag", "body"), BLOCKS)
def test_config_block_parses_and_runs_codeasst_mcp(tag, body):
    config = parse(tag, body)
    assert isinstance(config, dict), "a config file is a mapping at the top"
    for server in servers(config):
        assert runs_codeasst_mcp(server), f"runs {server['command']!r} {server.get('args')!r}, not codeasst mcp"


def test_fenced_blocks_reads_indented_fences_and_tags():
    text = "a\n\n```json\n{}\n```\n\n1. step:\n\n   ```toml\n   x = 1\n   ```\n\n```\nplain\n```\n"
    assert fenced_blocks(text) == [("json", 3, "{}\n"), ("toml", 9, "x = 1\n"), ("", 13, "plain\n")]


@pytest.mark.parametrize(
    ("server", "ok"),
    [
        ({"command": "codeasst", "args": ["mcp", "-C", "${workspaceFolder}"]}, True),
        ({"command": "/home/me/.venv/bin/codeasst", "args": ["mcp"]}, True),
        ({"command": "codeasst", "args": ["lsp"]}, False),
        ({"command": "npx", "args": ["codeasst", "mcp"]}, False),
        ({"command": "codeasst"}, False),
    ],
)
def test_runs_codeasst_mcp(server, ok):
    assert runs_codeasst_mcp(server) is ok
