"""`codeasst eval fix-modules` through the CLI, offline, on tests/data/fix/modules/local.toml: a small
package written for it (re-exports, `#:` comments, an import kept at the bottom of a module against an
import cycle, its own flake8 config and tests), with real flake8, autopep8 and the pipeline without
the model."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import assert_one_line_error, run_cli, run_json

DATA = Path(__file__).resolve().parents[1] / "data" / "fix" / "modules"


def test_fix_modules_scores_each_system_on_each_file(tmp_path):
    out = tmp_path / "files.jsonl"
    report = run_json("eval", "fix-modules", str(DATA / "local.toml"), "--systems", "none,autopep8,pipeline",
                      "--no-llm", "--out", str(out), cwd=tmp_path)
    assert report["model"] == "off"
    (package,) = report["packages"]
    assert package["flake8_config"] == "setup.cfg" and package["imports"] == 3
    assert package["tests"].startswith("passed: 4 passed")
    rows = {(r["file"], r["system"]): r for r in report["files"]}
    assert len(rows) == 9 and len(out.read_text().splitlines()) == 9
    scores = {s["system"]: s for s in report["systems"]}
    # The floor: nothing fixed, so nothing lost and the tests pass; findings counted under the
    # package's limit of 90 columns, so its 85-column lines are not among them.
    none = scores["none"]
    assert (none["clean"], none["names_kept"], none["docs_kept"], none["tests_passed"], none["tests_run"]) == \
        (0, 3, 3, 3, 3)
    assert none["left"] == report["findings_before"] == 29
    # autopep8 moves the imports kept at the bottom of helpers.py and __init__.py to the top, which
    # closes an import cycle: the modules no longer import and the package's tests fail.
    for name in ("minipkg/__init__.py", "minipkg/helpers.py"):
        broken = rows[(name, "autopep8")]
        assert broken["names_lost"] == ["(the module no longer imports)"] and broken["tests"] is False
    # It turns the lambda under a #: comment into a def, which Sphinx does not document with #:.
    assert rows[("minipkg/settings.py", "autopep8")]["docs_changed"] == ["#: for default_hook"]
    pipeline = scores["pipeline"]
    assert pipeline["errors"] == 0 and pipeline["left"] < none["left"]


def test_fix_modules_text_report_is_markdown(tmp_path):
    proc = run_cli("eval", "fix-modules", str(DATA / "local.toml"), "--systems", "none", "--no-tests",
                   "--only", "minipkg/settings.py", cwd=tmp_path)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("1 files from 1 packages in ") and "model: off" in lines[0]
    assert lines[1].startswith("split: unmarked") and lines[2].startswith("imports and tests: ")
    assert lines[4].startswith("| system | clean | clean, noqa added counted as left | findings left (of 5) |")
    assert lines[6].startswith("| none | 0/1 | 0/1 | 5 | 0 | 1/1 | 1/1 | n/a |")
    assert "| minipkg (local) | 1 | setup.cfg | 1 | not run (--no-tests) |" in lines
    assert "| minipkg/settings.py | none | 5 of 5 | kept | kept | n/a | 0.00 |" in lines


def test_fix_modules_bad_input_is_one_line(tmp_path):
    unfetchable = tmp_path / "set.toml"
    unfetchable.write_text('[[package]]\nname = "nosuchpackage"\nversion = "1.0"\nfiles = ["a.py"]\n')
    proc = run_cli("eval", "fix-modules", str(unfetchable), "--no-llm", cwd=tmp_path, check_rc=None,
                   env={"PIP_NO_INDEX": "1"})  # offline: pip looks in no index at all
    assert_one_line_error(proc, 1, "cannot fetch nosuchpackage==1.0")
    proc = run_cli("eval", "fix-modules", str(DATA / "local.toml"), "--systems", "black", cwd=tmp_path,
                   check_rc=None)
    assert_one_line_error(proc, 2, "unknown system 'black'")
    proc = run_cli("eval", "fix-modules", str(tmp_path / "missing.toml"), cwd=tmp_path, check_rc=None)
    assert_one_line_error(proc, 2, "cannot read")
