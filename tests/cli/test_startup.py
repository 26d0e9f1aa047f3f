"""`codeasst --help` stays fast: no heavy module is imported to answer it, or any command's
`--help`. (How fast it is, is measured by bench/help.py, not asserted here.)"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch", "chromadb", "llama_cpp", "textual", "sentence_transformers", "fastapi", "uvicorn",
         "onnxruntime", "transformers", "numpy")

# In a fresh interpreter: import the CLI, answer --help for the app and for every command, then
# report which heavy modules got imported along the way.
PROBE = f"""
import json, sys, contextlib, io
import typer.main
from codeasst.cli import app

after_import = sorted(m for m in {HEAVY!r} if m in sys.modules)
command = typer.main.get_command(app)
lines = [[]]

def walk(group, path):
    for name, sub in getattr(group, "commands", {{}}).items():
        lines.append([*path, name])
        walk(sub, [*path, name])

walk(command, [])
for args in lines:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            app([*args, "--help"])
        except SystemExit as exc:
            assert exc.code == 0, (args, exc.code)
print(json.dumps({{"after_import": after_import, "after_help": sorted(m for m in {HEAVY!r} if m in sys.modules),
                  "helped": len(lines)}}))
"""


def test_no_heavy_module_is_imported_by_the_cli_or_any_help():
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found["after_import"] == [], f"importing codeasst.cli imports {found['after_import']}"
    assert found["after_help"] == [], f"--help imports {found['after_help']}"
    assert found["helped"] >= 15
