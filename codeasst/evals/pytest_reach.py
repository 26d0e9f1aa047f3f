"""Run pytest in a fresh interpreter for `eval unittest`, and, if asked, record which lines of the
repository's own code each test runs: `python -I -B pytest_reach.py SPEC.json`.

It is run by path, not imported: it needs only the standard library and pytest, and codeasst's
own modules must not load into the test process. SPEC: {"paths": sys.path entries to put first,
"args": pytest arguments, "trace": absolute paths of the files to trace, or null, "out": where
to write {"tests": {node id: {"outcome": ..., "lines": {file: [line, ...]}}}}}.

Why a tracer of its own rather than coverage.py: it needs no package beyond pytest, and it files
lines under pytest's node ids (coverage's dynamic contexts name the test function, so the cases
of a parametrized test would merge). On Python 3.11 there is no sys.monitoring, so it is
sys.settrace, with line events only in the traced files; its cost is paid once per run.
"""

from __future__ import annotations

import json
import sys
import threading

import pytest


class Reach:
    """A pytest plugin: the outcome of each test and the traced lines it ran."""

    def __init__(self, files: set[str] | None) -> None:
        self.files = files
        self.tests: dict[str, dict] = {}
        self._lines: set[tuple[str, int]] = set()

    def _call(self, frame, event, arg):  # the global tracer: line events only inside the traced files
        return self._line if frame.f_code.co_filename in self.files else None

    def _line(self, frame, event, arg):
        if event == "line":
            self._lines.add((frame.f_code.co_filename, frame.f_lineno))
        return self._line

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        # setup, call and teardown alike: a fixture's code is reached by the test that needs it
        self.tests[item.nodeid] = {"outcome": "passed", "lines": {}}
        if not self.files:
            return (yield)
        self._lines = set()
        sys.settrace(self._call)
        threading.settrace(self._call)
        try:
            return (yield)
        finally:
            sys.settrace(None)
            threading.settrace(None)
            by_file: dict[str, list[int]] = {}
            for file, line in sorted(self._lines):
                by_file.setdefault(file, []).append(line)
            self.tests[item.nodeid]["lines"] = by_file

    def pytest_runtest_logreport(self, report):
        test = self.tests.setdefault(report.nodeid, {"outcome": "passed", "lines": {}})
        if report.failed:
            test["outcome"] = "failed"
        elif report.skipped and test["outcome"] == "passed":
            test["outcome"] = "skipped"  # xfail too: neither can tell a good statement from a bad one


def main(spec_path: str) -> int:
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    sys.path[:0] = spec["paths"]
    plugin = Reach(set(spec["trace"]) if spec.get("trace") else None)
    code = pytest.main(spec["args"], plugins=[plugin])
    if spec.get("out"):
        with open(spec["out"], "w", encoding="utf-8") as f:
            json.dump({"tests": plugin.tests}, f)
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
