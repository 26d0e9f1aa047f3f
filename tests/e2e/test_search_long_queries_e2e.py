"""Queries as people paste them, through the real CLI with the real embedder, LLM, Chroma and
ripgrep: Windows line endings, regex metacharacters, control characters, NUL bytes, any length,
and a pasted traceback or bug report that must find the file it names."""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.e2e.conftest import CLI, run_cli, run_json

pytestmark = pytest.mark.slow

FILES = {
    "shop/config.py": (
        "import json\n\n\nclass ConfigError(Exception):\n    pass\n\n\ndef load_config(path):\n"
        '    """Read the JSON configuration file."""\n    with open(path) as handle:\n'
        "        data = json.load(handle)\n    if 'name' not in data:\n"
        "        raise ConfigError('configuration has no name field')\n    return data\n"
    ),
    "shop/router.py": (
        "class Router:\n    def __init__(self):\n        self.routes = {}\n\n"
        "    def add_route(self, path, handler):\n        if path in self.routes:\n"
        "            raise ValueError('route already registered: ' + path)\n        self.routes[path] = handler\n"
    ),
    "shop/billing.py": (
        "TAX = 0.2\n\n\ndef invoice_total(lines):\n    subtotal = sum(l.price * l.qty for l in lines)\n"
        "    return subtotal * (1 + TAX)\n"
    ),
    "shop/mailer.py": "def send_receipt(email, total):\n    return f'sent {total} to {email}'\n",
}

TRACEBACK_REPORT = """Startup fails when the name is missing

After upgrading, the service stops at startup. The docs say the name is optional, and older
releases accepted a configuration without one. Steps: remove "name" from settings.json and start.

Traceback (most recent call last):
  File "/srv/app/main.py", line 3, in <module>
    cfg = load_config("settings.json")
  File "/srv/venv/lib/python3.11/site-packages/shop/config.py", line 13, in load_config
    raise ConfigError('configuration has no name field')
shop.config.ConfigError: configuration has no name field

Expected: a default name is used.
"""


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    root = tmp_path_factory.mktemp("shop")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_a_pasted_traceback_with_windows_line_endings_finds_the_file_it_names(shop):
    crlf = TRACEBACK_REPORT.replace("\n", "\r\n")
    started = time.perf_counter()
    hits = run_json("search", crlf, "-k", "3", "-C", str(shop))
    assert hits[0]["path"] == "shop/config.py", hits
    assert "named" in hits[0]["sources"]
    assert time.perf_counter() - started < 120  # no LLM pass over a long report


def test_a_short_question_with_windows_line_endings_regex_and_control_characters(shop):
    # A code span across a line break became an rg pattern holding a newline: rg refused it.
    for query in ("why does `add_route(path,\r\nhandler)` raise?", "where is a route\r\nregistered twice?\r\n",
                  "add_route( [a-z]* ^$ \\d+ (?<x> | \\ \x01\x07\x1b[31m"):
        hits = run_json("search", query, "-k", "3", "-C", str(shop))
        assert hits and all(h["path"] in FILES for h in hits)


def test_nul_bytes_in_piped_context_and_a_query_of_any_length(shop):
    # argv cannot carry NUL, so a NUL reaches search through piped text.
    piped = b'Traceback:\r\n  File "shop/router.py", line 7, in add_route\r\n\x00\x00ValueError: route\x00\r\n'
    proc = subprocess.run([*CLI, "search", "why does this fail?", "-k", "3", "-C", str(shop), "--json"],
                          input=piped, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"shop/router.py" in proc.stdout
    huge = ("The invoice total is wrong when a line has a discount. " * 600) + "\n`invoice_total`\n"
    assert len(huge) > 30_000
    proc = run_cli("search", huge, "-k", "3", "-C", str(shop), "--json")
    assert "Traceback" not in proc.stderr
    assert '"shop/billing.py"' in proc.stdout
