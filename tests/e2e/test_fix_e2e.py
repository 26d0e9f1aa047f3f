"""`fix` with the real bundled model and real flake8 on files a user would have."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from codeasst.lint import Linter
from codeasst.services import build_services
from codeasst.tasks.fix import fix_file, write_fix

pytestmark = pytest.mark.slow

E741_E501 = """\
def window_sums(l, k):
    O = []
    for I in range(len(l) - k + 1):
        O.append(sum(l[I:I + k]) if all(isinstance(v, int) for v in l[I:I + k]) else None)
    return O
"""

# An undefined name (a typo) has no deterministic fix: the model must find `ranked`.
NEEDS_MODEL = """\
def top_words(text, n):
    words = text.lower().split()
    ranked = sorted(set(words), key=lambda w: (-words.count(w), w))
    return rankd[:n]
"""


def _behaviour(path, calls: list[str]) -> list[str]:
    script = "import importlib.util as u, sys\n" \
             f"s = u.spec_from_file_location('m', {str(path)!r}); m = u.module_from_spec(s); s.loader.exec_module(m)\n" \
             + "".join(f"print(repr(m.{call}))\n" for call in calls)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.splitlines()


@pytest.mark.parametrize("source, calls", [
    (E741_E501, ["window_sums([1, 2, 3, 4], 2)", "window_sums([1, 'a', 3], 2)", "window_sums([], 1)"]),
    (NEEDS_MODEL, ["top_words('b a b c a b', 2)", "top_words('', 3)"]),
])
def test_fixed_files_are_clean_parse_and_behave_the_same(tmp_path, source, calls):
    path = tmp_path / "mod.py"
    path.write_text(source)
    before = _behaviour(path, calls) if source is not NEEDS_MODEL else ["['b', 'a']", "[]"]
    result = fix_file(build_services(tmp_path), path, for_write=True)
    assert result.clean, (result.after, result.rejected)
    write_fix(result)
    fixed = path.read_text()
    compile(fixed, str(path), "exec")
    assert Linter.for_path(path, tmp_path).check(fixed) == []
    assert _behaviour(path, calls) == before
    if source is NEEDS_MODEL:
        assert result.llm_calls >= 1 and "rankd" not in fixed
    print(textwrap.indent(fixed, "    "))
