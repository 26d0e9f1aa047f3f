"""`codeasst fix` on a library's modules, through the real CLI and real flake8: the package's public
names stay importable (an unused import in a library is often its API), and comments keep their
words and form (Sphinx `#:` documentation, `# type:`), as on an old release of requests."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.e2e.conftest import CLI, run_cli

REEXPORTED = ["Request", "Response", "PreparedRequest", "request", "get", "head", "post", "patch", "put", "delete",
              "options", "session", "Session", "codes", "utils", "RequestException", "Timeout", "URLRequired",
              "TooManyRedirects", "HTTPError", "ConnectionError", "__version__"]

# The package's __init__ re-exports 22 names, none used in it: all F401, with some lint around them.
INIT = '''\
"""lib: HTTP for tests."""
from .__version__ import __version__
from . import utils
from .models import Request, Response, PreparedRequest
from .api import request, get, head, post, patch, put, delete, options
from .sessions import session, Session
from .status_codes import codes
from .exceptions import (
    RequestException, Timeout, URLRequired,
    TooManyRedirects, HTTPError, ConnectionError
)
def check_compatibility(version):
    # Compare the major version only, since a minor release never breaks the interface we use here.
    return version.split('.')[0] == '2'    
'''  # E302, E501 (a comment), W291

MODELS = '''\
"""Models."""

#: The set of HTTP status codes that indicate an automatically
#: processable redirect.
REDIRECT_STATI = (301, 302)


class Request:
    #:Default headers of every request.
    default_headers = {}

    def __init__(self, url):
        #: Dictionary mapping protocol or protocol and host to the URL of the proxy
        #: to be used on each request.
        self.proxies = {}
        self.url = url  # type: str
        self.hooks = []  #:Event-handling hooks.


class Response:
    pass


class PreparedRequest(Request):
    pass
'''  # E265 and E262 on the `#:` comments, E501 on the long `#:` one

SESSIONS = '''\
"""Sessions."""
from .models import Request

# formerly defined here, reexposed here for backward compatibility
from .models import REDIRECT_STATI


class Session:
    def send(self, url) :
        return Request(url)


def session():
    return Session()
'''  # F401 on REDIRECT_STATI, E203

FILES = {
    "lib/__init__.py": INIT,
    "lib/__version__.py": "__version__ = '2.19.1'\n",
    "lib/utils.py": "ANSWER = 42\n",
    "lib/models.py": MODELS,
    "lib/sessions.py": SESSIONS,
    "lib/api.py": "".join(f"def {n}(url):\n    return '{n} ' + url\n\n\n" for n in
                          ["request", "get", "head", "post", "patch", "put", "delete", "options"]).rstrip() + "\n",
    "lib/status_codes.py": "codes = {'ok': 200}\n",
    "lib/exceptions.py": "".join(f"class {n}(Exception):\n    pass\n\n\n" for n in
                                 ["RequestException", "Timeout", "URLRequired", "TooManyRedirects", "HTTPError",
                                  "ConnectionError"]).rstrip() + "\n",
}

USES_THE_PACKAGE = f"""
import lib
missing = [n for n in {REEXPORTED!r} if not hasattr(lib, n)]
assert not missing, missing
assert lib.get('u') == 'get u' and lib.session().send('u').url == 'u' and lib.utils.ANSWER == 42
from lib.sessions import REDIRECT_STATI
assert REDIRECT_STATI == (301, 302)
print('ok')
"""


def python(root, code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=False)


def flake8(root, *names: str) -> str:
    return subprocess.run([sys.executable, "-m", "flake8", *names], cwd=root, capture_output=True, text=True,
                          check=False).stdout


def sphinx_words(text: str) -> list[str]:
    return [w for line in text.splitlines() if (m := re.search(r"#:(.*)", line)) for w in m.group(1).split()]


def test_write_keeps_every_name_the_package_offers(make_repo):
    root = make_repo(FILES)
    assert python(root, USES_THE_PACKAGE).stdout == "ok\n"  # the package works before the fix
    proc = run_cli("fix", "--no-llm", "--write", "lib/__init__.py", "lib/sessions.py", cwd=root)
    assert "lib/__init__.py: fixed and wrote 25 of 25 diagnostics" in proc.stderr, proc.stderr
    used = python(root, USES_THE_PACKAGE)
    assert used.stdout == "ok\n", used.stderr
    assert flake8(root, "lib/__init__.py", "lib/sessions.py") == ""
    init = (root / "lib" / "__init__.py").read_text()
    assert "from .models import Request, Response, PreparedRequest  # noqa: F401\n" in init
    # The module's unused import keeps its place under the comment that says why it is there.
    assert "# formerly defined here, reexposed here for backward compatibility\n" \
           "from .models import REDIRECT_STATI  # noqa: F401\n" in (root / "lib" / "sessions.py").read_text()


def test_stdin_keeps_every_name_too(make_repo):
    """Piped, the file has no place; its relative imports still say it belongs to a package."""
    root = make_repo(FILES)
    proc = subprocess.run([*CLI, "fix", "--no-llm", "-"], input=INIT, cwd=root, capture_output=True, text=True,
                          timeout=600, check=False, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert "stdin.py: fixed 25 of 25 diagnostics" in proc.stderr, proc.stderr
    (root / "lib" / "__init__.py").write_text(proc.stdout)
    used = python(root, USES_THE_PACKAGE)
    assert used.stdout == "ok\n", used.stderr


def test_sphinx_and_type_comments_keep_their_form(make_repo):
    root = make_repo(FILES)
    run_cli("fix", "--no-llm", "--write", "lib/models.py", cwd=root)
    fixed = (root / "lib" / "models.py").read_text()
    assert flake8(root, "lib/models.py") == ""
    assert "# :" not in fixed  # autopep8's respelling of `#:` for E262/E265
    assert sphinx_words(fixed) == sphinx_words(MODELS)  # the documentation, word for word, in order
    assert "    #: Default headers of every request.\n" in fixed
    assert "        self.hooks = []  #: Event-handling hooks.\n" in fixed
    assert "        self.url = url  # type: str\n" in fixed
    # The long `#:` comment wraps into its paragraph, `#:` on every line, no stray fragment line.
    assert ("        #: Dictionary mapping protocol or protocol and host to the URL of the\n"
            "        #: proxy to be used on each request.\n") in fixed


def test_remove_unused_imports_lets_them_go(make_repo):
    root = make_repo(FILES)
    run_cli("fix", "--no-llm", "--write", "--remove-unused-imports", "lib/sessions.py", cwd=root)
    fixed = (root / "lib" / "sessions.py").read_text()
    assert "REDIRECT_STATI" not in fixed and "from .models import Request\n" in fixed
    assert flake8(root, "lib/sessions.py") == ""
    # The setting does the same.
    root = make_repo(FILES, name="with-setting")
    run_cli("fix", "--no-llm", "--write", "lib/sessions.py", cwd=root,
            env={"CODEASST_FIX__REMOVE_UNUSED_IMPORTS": "true"})
    assert "REDIRECT_STATI" not in (root / "lib" / "sessions.py").read_text()


# A module as six and flask write them: the project's own flake8 config (`ignore =` turns W503 and W504
# both on, 100 columns), a condition broken after its operators, docstrings past the limit, and a
# package __init__ that re-exports with backslash-continued imports.
SETUP_CFG = "[flake8]\nmax-line-length = 100\nignore = F821\n"

COMPAT = '''\
"""Compatibility helpers."""


def write(fp, data):
    """Write `data` to `fp`."""
    if (isinstance(fp, file) and
            isinstance(data, unicode) and
            fp.encoding is not None):
        data = data.encode(fp.encoding)
    fp.write(data)
'''

DOCS = '''\
def put(fp, data):
    """Write `data` to `fp`, encoding text with the file's own encoding when the file has one set, as print does.

    :param data: the text or bytes to write out; anything else is converted with :func:`str` before it is written.
    """
'''

PKG_INIT = '''\
"""pkg."""
from .compat import write, \\
     write as put
from .docs import put as _put
'''


def test_a_project_config_docstrings_and_continued_re_exports_end_clean(make_repo):
    root = make_repo({"setup.cfg": SETUP_CFG, "pkg/__init__.py": PKG_INIT, "pkg/compat.py": COMPAT,
                      "pkg/docs.py": DOCS})
    assert flake8(root, "pkg").count("\n") == 8  # 3 F401, E126 (back on with `ignore =`), 2 E501, 2 W504
    proc = run_cli("fix", "--no-llm", "--write", "pkg/__init__.py", "pkg/compat.py", "pkg/docs.py", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert flake8(root, "pkg") == ""
    # no E501 in compat.py: the 100 columns it may use are the project's, as flake8 reports them
    joined = "    if isinstance(fp, file) and isinstance(data, unicode) and fp.encoding is not None:\n"
    assert joined in (root / "pkg" / "compat.py").read_text()
    fixed = (root / "pkg" / "docs.py").read_text()
    docs = python(root, "import pkg.docs as d; print(' '.join(d.put.__doc__.split()))").stdout
    assert docs == " ".join(DOCS.split('"""')[1].split()) + "\n"  # every word of the docstring, in order
    assert "    :param data: the text or bytes to write out; anything else is converted with :func:`str` before\n" \
           "        it is written.\n" in fixed  # the field's text goes on under it, within the project's 100
    assert python(root, "import pkg; print(pkg.put is pkg.write)").stdout == "True\n"


FORMATTED = '''\
GREETING = 'hello'


def redirect(resp, max_redirects):
    if resp.status_code not in (301, 302):
        raise TooManyRedirects('Exceeded %s redirects for the response.' % max_redirects, response=resp)
    return resp
'''


def test_the_projects_formatter_lays_out_the_changed_lines_only(make_repo):
    """ruff format is configured (and installed, as a development dependency): the wrapped statement
    gets its layout, double quotes included; the line fix did not touch keeps its single quotes."""
    root = make_repo({"pyproject.toml": '[tool.ruff.format]\nquote-style = "double"\n', "mod.py": FORMATTED})
    run_cli("fix", "--no-llm", "--write", "mod.py", cwd=root)
    fixed = (root / "mod.py").read_text()
    assert fixed.startswith("GREETING = 'hello'\n")
    assert '        raise TooManyRedirects(\n            "Exceeded %s redirects for the response." % max_redirects,\n' \
           "            response=resp,\n        )\n" in fixed
    assert flake8(root, "mod.py").count("F821") == 1 and "E501" not in flake8(root, "mod.py")
    (root / ".codeasst.toml").write_text('[fix]\nformatter = "off"\n')
    (root / "mod.py").write_text(FORMATTED)
    run_cli("fix", "--no-llm", "--write", "mod.py", cwd=root)
    assert "'Exceeded %s redirects for the response.' % max_redirects" in (root / "mod.py").read_text()
