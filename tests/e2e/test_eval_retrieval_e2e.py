"""`codeasst eval retrieval` end to end: real LLM, embedder, Chroma and ripgrep over a corpus where
a wrong ranking is easy, so the figures can fail; and the question set's tune/test split."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.conftest import assert_one_line_error, run_cli, run_json

QUESTIONS = Path(__file__).resolve().parents[1] / "data" / "retrieval" / "questions.jsonl"

# 33 validators that look alike: the same imports, a constant or two, `is_valid(value: str) -> bool`.
# Several are near neighbours (ISBN-10 and ISBN-13, IPv4 and IPv6, port, age and percentage, SSN and
# VAT number), so only a ranking that reads the code puts the right file first.
VALIDATORS = {
    "email": (r'PATTERN = re.compile(r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$")', "return bool(PATTERN.match(value))"),
    "phone_us": (r'DIGITS = re.compile(r"\D")', """
        digits = DIGITS.sub("", value)
        if len(digits) == 11 and digits[0] == "1":
            digits = digits[1:]
        return len(digits) == 10"""),
    "zip_code": (r'PATTERN = re.compile(r"^\d{5}(-\d{4})?$")', "return bool(PATTERN.match(value))"),
    "credit_card": ("MIN_DIGITS = 12", """
        digits = [int(c) for c in value if c.isdigit()]
        if len(digits) < MIN_DIGITS:
            return False
        total = 0
        for i, d in enumerate(reversed(digits)):
            if i % 2 == 1:
                d = d * 2 - 9 if d * 2 > 9 else d * 2
            total += d
        return total % 10 == 0"""),
    "iban": ("MAX_LENGTH = 34", """
        text = value.replace(" ", "").upper()
        if not 15 <= len(text) <= MAX_LENGTH:
            return False
        moved = text[4:] + text[:4]
        number = "".join(str(int(c, 36)) for c in moved)
        return int(number) % 97 == 1"""),
    "isbn10": ("LENGTH = 10", """
        text = value.replace("-", "")
        if len(text) != LENGTH or not text[:-1].isdigit():
            return False
        last = 10 if text[-1] in "xX" else int(text[-1])
        total = sum((10 - i) * int(c) for i, c in enumerate(text[:-1])) + last
        return total % 11 == 0"""),
    "isbn13": ("LENGTH = 13", """
        text = value.replace("-", "")
        if len(text) != LENGTH or not text.isdigit():
            return False
        total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(text))
        return total % 10 == 0"""),
    "ipv4": ("PARTS = 4", """
        parts = value.split(".")
        if len(parts) != PARTS:
            return False
        for part in parts:
            if not part.isdigit() or (len(part) > 1 and part[0] == "0"):
                return False
            if int(part) > 255:
                return False
        return True"""),
    "ipv6": ("GROUPS = 8", """
        if value.count("::") > 1:
            return False
        head, _, tail = value.partition("::")
        groups = [g for g in head.split(":") + tail.split(":") if g]
        if "::" not in value and len(groups) != GROUPS:
            return False
        return len(groups) <= GROUPS and all(len(g) <= 4 and set(g) <= HEX for g in groups)"""),
    "hex_color": ('PATTERN = re.compile(r"^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")', "return bool(PATTERN.match(value))"),
    "uuid": ('PATTERN = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)',
             "return bool(PATTERN.match(value))"),
    "iso_date": ('FORMAT = "%Y-%m-%d"', """
        try:
            datetime.strptime(value, FORMAT)
        except ValueError:
            return False
        return True"""),
    "slug": ('PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")', "return bool(PATTERN.match(value))"),
    "password": ("MIN_LENGTH = 12", """
        return (len(value) >= MIN_LENGTH and any(c.isupper() for c in value)
                and any(c.islower() for c in value) and any(c.isdigit() for c in value)
                and any(not c.isalnum() for c in value))"""),
    "username": ('PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]{2,19}$")', "return bool(PATTERN.match(value))"),
    "url": ('SCHEMES = {"http", "https"}', """
        parts = urlparse(value)
        return parts.scheme in SCHEMES and bool(parts.netloc)"""),
    "mac_address": ('PATTERN = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$")', "return bool(PATTERN.match(value))"),
    "time_24h": (r'PATTERN = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")', "return bool(PATTERN.match(value))"),
    "coordinates": ("LIMITS = (90.0, 180.0)", """
        try:
            lat, lon = (float(x) for x in value.split(","))
        except ValueError:
            return False
        return abs(lat) <= LIMITS[0] and abs(lon) <= LIMITS[1]"""),
    "port": ("HIGHEST = 65535", "return value.isdigit() and 1 <= int(value) <= HIGHEST"),
    "semver": (r'PATTERN = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[\w.]+)?$")',
               "return bool(PATTERN.match(value))"),
    "hostname": ("MAX_TOTAL = 253", """
        labels = value.rstrip(".").split(".")
        return len(value) <= MAX_TOTAL and all(
            0 < len(label) <= 63 and label[0] != "-" and label[-1] != "-" for label in labels)"""),
    "vat_number": ('PATTERN = re.compile(r"^[A-Z]{2}[0-9A-Z]{8,12}$")',
                   'return bool(PATTERN.match(value.replace(" ", "")))'),
    "ssn": (r'PATTERN = re.compile(r"^(\d{3})-(\d{2})-(\d{4})$")', """
        match = PATTERN.match(value)
        if not match:
            return False
        area, group, serial = match.groups()
        return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"
        """),
    "roman_numeral": ('PATTERN = re.compile(r"^M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})$")',
                      "return bool(value) and bool(PATTERN.match(value))"),
    "json_text": ("MAX_BYTES = 1_000_000", """
        if len(value) > MAX_BYTES:
            return False
        try:
            json.loads(value)
        except ValueError:
            return False
        return True"""),
    "base64_text": ("BLOCK = 4", """
        if len(value) % BLOCK:
            return False
        try:
            base64.b64decode(value, validate=True)
        except binascii.Error:
            return False
        return True"""),
    "leap_day": ("FEBRUARY = 2", """
        year, month, day = (int(x) for x in value.split("-"))
        if (month, day) != (FEBRUARY, 29):
            return True
        return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)"""),
    "currency_amount": (r'PATTERN = re.compile(r"^\d{1,3}(,\d{3})*(\.\d{1,2})?$")', "return bool(PATTERN.match(value))"),
    "file_extension": ('ALLOWED = {".png", ".jpg", ".jpeg", ".gif", ".pdf"}',
                       "return Path(value).suffix.lower() in ALLOWED"),
    "country_code": ('KNOWN = {"DE", "FR", "GB", "IT", "NL", "US", "JP", "CN"}', "return value.upper() in KNOWN"),
    "age": ("OLDEST = 130", "return value.isdigit() and 0 <= int(value) <= OLDEST"),
    "percentage": ("HUNDRED = 100.0", """
        try:
            number = float(value.rstrip("%"))
        except ValueError:
            return False
        return 0.0 <= number <= HUNDRED"""),
}
HEADER = """import base64
import binascii
import json
import re
from datetime import datetime
from pathlib import Path
from urllib.parse import urlparse

HEX = set("0123456789abcdefABCDEF")
"""

# Behaviour, mostly without the file's name: the expected file has to come first.
ROWS = [
    ("tune", "how is a card number checked by doubling every second digit?", "credit_card"),
    ("tune", "which check rejects an address like 192.168.01.1 because of a leading zero?", "ipv4"),
    ("tune", "how is an IBAN checked by moving its first four characters to the end and taking it mod 97?", "iban"),
    ("tune", "how do we check a book number whose last character may be an X?", "isbn10"),
    ("tune", "in which years is February 29th a valid date?", "leap_day"),
    ("test", "how is a 13-digit book number validated with alternating weights of one and three?", "isbn13"),
    ("test", "where do we reject social security numbers whose area is 666?", "ssn"),
    ("test", "how are IPv6 addresses that use a double colon validated?", "ipv6"),
    ("test", "how is a hexadecimal colour code such as #fff or #a1b2c3 checked?", "hex_color"),
    ("test", "which validation makes sure latitude and longitude are within range?", "coordinates"),
]


def validator_repo() -> dict[str, str]:
    files = {}
    for name, (constant, body) in VALIDATORS.items():
        body = textwrap.indent(textwrap.dedent(body).strip(), "    ")
        files[f"validators/{name}.py"] = f"{HEADER}\n{constant}\n\n\ndef is_valid(value: str) -> bool:\n{body}\n"
    return files


@pytest.mark.slow
def test_eval_retrieval_ranks_the_right_file_first_among_lookalikes(make_repo, tmp_path):
    root = make_repo(validator_repo())
    rows = [{"repo": str(root), "question": q, "expected": [f"validators/{name}.py"], "lang": "en", "split": split}
            for split, q, name in ROWS]
    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))

    # HyDE and the model's keywords are off by default (issue 28); turned on, every stage is scored.
    report = run_json("eval", "retrieval", str(data),
                      env={"CODEASST_RETRIEVAL__HYDE": "true", "CODEASST_RETRIEVAL__LLM_KEYWORDS": "true"})

    assert report["split"] == "all" and report["rows"] == len(ROWS) == 10
    assert {"dense", "dense-en", "hyde", "rg", "fused", "fused without hyde"} <= set(report["stages"])
    assert (report["splits"]["tune"]["rows"], report["splits"]["tune"]["in_sample_rows"]) == (5, 5)
    assert (report["splits"]["test"]["rows"], report["splits"]["test"]["in_sample_rows"]) == (5, 0)
    assert report["in_sample_rows"] == 5
    fused = report["stages"]["fused"]
    # Out of 33 lookalike files, a ranker that does not read the question gets recall@1 near 1/33.
    # The shipped pipeline got 9 of 10 first (it ranks ipv4.py above ipv6.py for the IPv6 question)
    # and all 10 in the top 3; the thresholds leave room for two more misses at rank 1.
    assert fused["recall@1"] >= 0.7, fused
    assert fused["recall@3"] >= 0.9, fused
    assert fused["f1"] >= 0.5, fused


def test_question_set_split_is_reproducible_and_its_test_part_never_tuned_on():
    proc = subprocess.run([sys.executable, str(QUESTIONS.with_name("split.py")), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines()]
    tuned_on = {"click", "rich", "httpx"}  # the fusion settings were chosen on all of these rows
    assert {r["split"] for r in rows if r["repo"] in tuned_on} == {"tune"}
    assert {r["split"] for r in rows if r["repo"] not in tuned_on} == {"test"}
    test_repos = Counter(r["repo"] for r in rows if r["split"] == "test")
    assert sum(n for repo, n in test_repos.items() if repo.startswith("npm:")) >= 12
    assert sum(n for repo, n in test_repos.items() if not repo.startswith("npm:")) >= 30  # Python, held out


def test_eval_retrieval_bad_split_or_repo_is_a_one_line_error(tmp_path):
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"repo": "npm:left-pad@latest", "question": "q", "expected": ["a.js"]}) + "\n")
    assert_one_line_error(run_cli("eval", "retrieval", str(data), "--split", "dev", check_rc=None), 2,
                          "--split must be one of all, tune, test")
    assert_one_line_error(run_cli("eval", "retrieval", str(data), "--split", "tune", check_rc=None), 2,
                          'no question rows with "split": "tune"')
    assert_one_line_error(run_cli("eval", "retrieval", str(data), check_rc=None), 2,
                          "expected npm:NAME@VERSION[/SUBDIR] with an exact version")
