"""`codeasst eval retrieval --localize` end to end: bug reports over an installed package (mdurl,
six small files), the real embedder, Chroma and ripgrep, the BM25 baseline in the same run."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import run_json

pytestmark = pytest.mark.slow

PARSE_REPORT = """url_parse loses the port of an IPv6 host

Parsing `http://[::1]:8080/x` gives a host without brackets and the port is dropped. I traced it to
MutableURL.parse_host, which strips the brackets before the port is split off.

Traceback (most recent call last):
  File "repro.py", line 2, in <module>
    print(mdurl.parse("http://[::1]:8080/x"))
  File "/venv/lib/python3.11/site-packages/mdurl/_parse.py", line 300, in url_parse
    u.parse(url, slashes_denote_host)
AssertionError: port missing
"""

ENCODE_REPORT = """encode() double-escapes an existing percent sequence

Calling mdurl.encode on a string that is already partly escaped, like "a%20b c", escapes the percent
sign again when keep_escaped is False, and the cache built by get_encode_cache never includes it.
I expected "%20" to stay as it is, as markdown-it's JavaScript version does.
"""


def test_bug_reports_are_scored_per_split_beside_the_bm25_baseline(tmp_path):
    rows = [
        {"repo": "mdurl", "question": PARSE_REPORT, "expected": ["_parse.py"], "source": "mdurl-1"},
        {"repo": "mdurl", "question": ENCODE_REPORT, "expected": ["_encode.py"], "source": "mdurl-2"},
        {"repo": "mdurl", "question": "old report", "expected": ["removed_long_ago.py"], "source": "mdurl-3"},
        {"repo": "no_such_package_xyz", "question": "x", "expected": ["a.py"], "source": "x-1"},
    ]
    data = tmp_path / "localize.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = run_json("eval", "retrieval", "--localize", str(data))["localize"]
    assert report["rows"] == 2
    assert report["dropped"] == {"mdurl: expected file not in the installed version": 1,
                                 "no_such_package_xyz not installed": 1}
    stages = report["stages"]
    assert {"fused", "bm25", "named", "dense", "bm25-files baseline"} <= set(stages)
    assert stages["fused"]["recall@1"] == 1.0, stages
    assert stages["bm25-files baseline"]["recall@5"] == 1.0  # six files: the baseline finds both too
    assert set(report["splits"]) == {"tune", "test"}
    assert report["splits"]["tune"]["rows"] == report["splits"]["test"]["rows"] == 1
