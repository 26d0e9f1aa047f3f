"""`eval fix-modules`: the checks on hand-made before/after pairs, the set file, and `clean` under a
package's own flake8 config."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from codeasst.errors import UsageError
from codeasst.evals.fix_modules import evaluate
from codeasst.evals.module_checks import docs_changed, names_lost, public_names
from codeasst.evals.packages import fetch, load_set
from codeasst.services import build_services


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


INIT = _src('''
    """A package."""
    import logging
    from .models import Request, Response
    from .helpers import *
    from ._compat import _py2
    try:
        import simplejson as json
    except ImportError:
        json = None
    __all__ = ["Request", "_py2"]
    if logging:
        debug = lambda message: None
    _private = 1
''')


def test_public_names_are_every_top_level_binding_not_spelt_private_or_listed_in_all():
    assert public_names(__import__("ast").parse(INIT)) == {
        "logging", "Request", "Response", "* from .helpers", "_py2", "json", "__all__", "debug"} - {"__all__"}


@pytest.mark.parametrize(("after", "lost"), [
    # The F401 "fix" that broke a real package: re-exported imports removed.
    (INIT.replace("from .models import Request, Response\n", ""), ["Request", "Response"]),
    (INIT.replace("from .helpers import *\n", ""), ["* from .helpers"]),
    (INIT.replace("from ._compat import _py2\n", ""), ["_py2"]),  # private by name, public by __all__
    (INIT.replace("    json = None\n", "    pass\n").replace("import simplejson as json", "import os"),
     ["json"]),
    # What a fix may do: a lambda becomes a def, a private name goes, lines are rewrapped.
    (INIT.replace("debug = lambda message: None", "def debug(message):\n        return None"), []),
    (INIT.replace("_private = 1\n", ""), []),
    (INIT.replace("from .models import Request, Response", "from .models import (\n    Request,\n    Response,\n)"),
     []),
])
def test_names_lost(after, lost):
    assert names_lost(INIT, after) == lost


def test_a_fix_that_does_not_parse_loses_every_public_name():
    assert names_lost("import os\nVALUE = 1\n", "import os\nVALUE = (\n") == ["VALUE", "os"]


CLASS = _src('''
    class Session:
        """Keeps settings across requests.

        Provides cookie persistence.
        """

        #: A case-insensitive dictionary of headers to be sent on each request sent from this session.
        headers = {}
        verify = True  #: whether TLS certificates are checked

        def send(self):
            """Send it."""
            #: The hooks, by event.
            self.hooks = {}
''')


@pytest.mark.parametrize(("after", "changed"), [
    (CLASS, []),
    # Wrapped onto two #: lines: the same words in order, still over `headers`.
    (CLASS.replace("headers to be sent on each request sent from this session.",
                   "headers to be sent on each\n    #: request sent from this session."), []),
    # Docstring rewrapped and reindented: the same words.
    (CLASS.replace("across requests.\n\n    Provides", "across\n            requests.\n\n    Provides"), []),
    # The code under a trailing #: reformatted.
    (CLASS.replace("verify = True  #:", "verify = (True)  #:"), []),
    # Continued as a plain comment: Sphinx shows only the first line.
    (CLASS.replace("headers to be sent on each request sent from this session.",
                   "headers to be sent on each\n    # request sent from this session."),
     ["#: for headers"]),
    (CLASS.replace("#: The hooks", "# The hooks"), ["#: for self.hooks"]),
    (CLASS.replace("  #: whether TLS certificates are checked", ""), ["#: for verify"]),
    # Moved away from the attribute it documents.
    (CLASS.replace("    headers = {}\n", "").replace("class Session:\n", "class Session:\n    headers = {}\n"),
     ["#: for headers"]),
    (CLASS.replace('"""Send it."""', '"""Send the request."""'), ["docstring in Session.send"]),
    (CLASS.replace("    Provides cookie persistence.\n", ""), ["docstring in Session"]),
])
def test_docs_changed(after, changed):
    assert docs_changed(CLASS, after) == changed


def test_a_lambda_turned_def_under_a_doc_comment_loses_it_for_sphinx():
    # Sphinx reads #: only over assignments: over a def the comment documents nothing.
    before = "#: Called with every response.\nhook = lambda r: r\n"
    assert docs_changed(before, "#: Called with every response.\ndef hook(r):\n    return r\n") == ["#: for hook"]


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


LONG = "VALUE = " + repr("x" * 75) + "\n"  # 85 columns: over flake8's 79, under the package's 100


@pytest.mark.parametrize(("config", "clean"), [(None, 0), ("[flake8]\nmax-line-length = 100\n", 1)])
def test_clean_is_judged_by_the_package_own_flake8_config(tmp_path, config, clean):
    files = {"pkg/mod.py": LONG, **({"setup.cfg": config} if config else {})}
    root = _package(tmp_path / "pkg-src", files)
    report = evaluate(build_services(tmp_path), root, systems=["none"], use_llm=False)
    (none,) = report.systems
    assert (none.clean, none.left, none.names_kept, none.docs_kept) == (clean, 1 - clean, 1, 1)
    assert report.files[0].file == "pkg/mod.py" and report.files[0].import_checked  # pkg.mod imports alone


@pytest.mark.parametrize(("toml", "message"), [
    ('[[package]]\nname = "x"\nfiles = ["a.py"]\n', "give either version (from PyPI) or path"),
    ('[[package]]\nname = "x"\nversion = ">=1"\nfiles = ["a.py"]\n', "version must be one exact release"),
    ('[[package]]\nname = "x"\nversion = "1.0"\nfiles = ["../a.py"]\n', "must be a path inside the package"),
    ('[[package]]\nname = "x"\nversion = "1.0"\nfiles = ["a.py"]\ndeps = ["y>=2"]\n', "is not NAME==VERSION"),
    ('[[package]]\nname = "x"\nversion = "1.0"\nfile = ["a.py"]\n', "unknown key 'file'"),
    ("name = 1\n", "expected [[package]] tables"),
    ("[[package]\n", "not TOML"),
])
def test_a_bad_set_is_a_one_line_usage_error(tmp_path, toml, message):
    path = tmp_path / "set.toml"
    path.write_text(toml)
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        load_set(path)


def test_the_real_set_parses():
    specs = load_set(Path(__file__).parents[1] / "data" / "fix" / "modules.toml")
    assert [s.name for s in specs] == ["requests", "flask", "click", "jinja2", "six"]
    assert sum(len(s.files) for s in specs) == 13
    assert sum(f.endswith("__init__.py") for s in specs for f in s.files) == 2


@pytest.fixture
def package_index(tmp_path, monkeypatch):
    """A package index on a local HTTP server (PEP 691 JSON), holding one sdist whose setup.py,
    if anything ran it, would leave a file behind."""
    import hashlib
    import http.server
    import io
    import json
    import tarfile
    import threading

    ran = tmp_path / "setup-py-ran"
    setup = f"open({str(ran)!r}, 'w').write('yes')\n".encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in {"evil-1.0/setup.py": setup, "evil-1.0/evil/__init__.py": b"x = 1\n"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    sdist = buffer.getvalue()
    files = {"/evil-1.0.tar.gz": sdist}

    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/simple/evil/":
                listing = {"files": [{"filename": "evil-1.0.tar.gz", "url": f"http://127.0.0.1:{port}/evil-1.0.tar.gz",
                                      "hashes": {"sha256": files.get("sha256", hashlib.sha256(sdist).hexdigest())}}]}
                body = json.dumps(listing).encode()
            elif self.path in files:
                body = files[self.path]
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Index)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{port}/simple")
    yield files, ran
    server.shutdown()


def test_the_held_out_set_follows_its_rule():
    """tests/data/fix/heldout.toml: six packages the fix work never touched, three modules each."""
    held_out = load_set(Path(__file__).parents[1] / "data" / "fix" / "heldout.toml")
    development = load_set(Path(__file__).parents[1] / "data" / "fix" / "modules.toml")
    assert len(held_out) >= 5 and sum(len(s.files) for s in held_out) >= 15
    assert all(len(s.files) == 3 for s in held_out)
    assert not {s.name for s in held_out} & {s.name for s in development}


def test_a_package_is_fetched_and_unpacked_without_running_its_setup_py(package_index):
    _, ran = package_index
    top = fetch("evil==1.0")
    assert (top / "evil" / "__init__.py").read_text() == "x = 1\n" and (top / "setup.py").is_file()
    assert not ran.exists()


def test_an_sdist_that_does_not_match_the_index_hash_is_refused(package_index):
    files, _ = package_index
    files["sha256"] = "0" * 64
    with pytest.raises(Exception, match=r"^cannot fetch evil==1\.0: evil-1\.0\.tar\.gz does not match"):
        fetch("evil==1.0")


def test_a_release_that_cannot_be_fetched_says_why_in_one_line(package_index):
    with pytest.raises(Exception, match=r"^cannot fetch nosuchpackage==1\.0: .*Not Found") as caught:
        fetch("nosuchpackage==1.0")
    assert "\n" not in caught.value.one_line()
    with pytest.raises(Exception, match=r"^cannot fetch evil==2\.0: the index has no sdist of that release"):
        fetch("evil==2.0")


