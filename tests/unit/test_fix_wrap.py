"""E501 on code: each long statement is laid out as black / ruff format would (before and after, golden
style), keeps its AST, and passes pycodestyle; what cannot be wrapped without changing behaviour is left."""

from __future__ import annotations

import ast
import textwrap

import pytest

from codeasst.fixing.mechanical import fix_overlong
from codeasst.lint import Linter

# (name, before, after), at flake8's default limit of 79. The method around each statement gives it the
# indentation it has in real code, which is what makes it too long.
CASES = [
    ("subscript target: the call opens, not `headers[`", """
        class Session:
            def rebuild_proxies(self, username, password, headers):
                if username and password:
                    headers['Proxy-Authorization'] = _basic_auth_str(username, password)
        """, """
        class Session:
            def rebuild_proxies(self, username, password, headers):
                if username and password:
                    headers['Proxy-Authorization'] = _basic_auth_str(
                        username, password
                    )
        """),
    ("subscript target, no bracket in the value: the value is bracketed", """
        def f(headers, settings):
            headers['X-Some-Very-Long-Header-Name-For-Testing'] = settings.default_header_value
        """, """
        def f(headers, settings):
            headers['X-Some-Very-Long-Header-Name-For-Testing'] = (
                settings.default_header_value
            )
        """),
    ("a subscript in the value is not opened while the value fits in brackets", """
        def f(table, headers):
            headers['Proxy-Authorization-Header-Name-X'] = table[username_value_longer_xy]
        """, """
        def f(table, headers):
            headers['Proxy-Authorization-Header-Name-X'] = (
                table[username_value_longer_xy]
            )
        """),
    ("arguments that fit on one indented line stay together", """
        def f(self, request, stream, timeout, verify):
            return self.adapter.send(request, stream=stream, timeout=timeout, verify=verify)
        """, """
        def f(self, request, stream, timeout, verify):
            return self.adapter.send(
                request, stream=stream, timeout=timeout, verify=verify
            )
        """),
    ("else one argument per line, with a magic trailing comma", """
        def f(self, request):
            self.add_headers(request, stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=proxies)
        """, """
        def f(self, request):
            self.add_headers(
                request,
                stream=stream,
                timeout=timeout,
                verify=verify,
                cert=cert,
                proxies=proxies,
            )
        """),
    ("parameters: one per line, no comma after **kwargs (a syntax error before Python 3.6)", """
        class Session:
            def resolve_redirects(self, resp, req, stream=False, timeout=None, verify=True, **adapter_kwargs):
                pass
        """, """
        class Session:
            def resolve_redirects(
                self,
                resp,
                req,
                stream=False,
                timeout=None,
                verify=True,
                **adapter_kwargs
            ):
                pass
        """),
    ("a condition splits before `and`, in brackets of its own", """
        def f(cookie):
            if hasattr(cookie.value, 'startswith') and cookie.value.startswith('"') and cookie.value.endswith('"'):
                return cookie
        """, """
        def f(cookie):
            if (
                hasattr(cookie.value, 'startswith')
                and cookie.value.startswith('"')
                and cookie.value.endswith('"')
            ):
                return cookie
        """),
    ("a literal with commas is one element per line", """
        def f(prepared_request):
            if prepared_request:
                purged_headers = ('Content-Length', 'Content-Type', 'Transfer-Encoding')
        """, """
        def f(prepared_request):
            if prepared_request:
                purged_headers = (
                    'Content-Length',
                    'Content-Type',
                    'Transfer-Encoding',
                )
        """),
    ("an import list is bracketed", """
        from urllib.parse import urlparse, urlunparse, urljoin, urlsplit, urlencode, quote
        """, """
        from urllib.parse import (
            urlparse,
            urlunparse,
            urljoin,
            urlsplit,
            urlencode,
            quote,
        )
        """),
    ("a ternary splits before `if` and `else`", """
        def f(new_fields, field, v):
            for i in range(3):
                new_fields.append((field.decode('utf-8') if isinstance(field, (bytes, bytearray)) else field, v.encode('utf-8')))
        """, """
        def f(new_fields, field, v):
            for i in range(3):
                new_fields.append(
                    (
                        field.decode('utf-8')
                        if isinstance(field, (bytes, bytearray))
                        else field,
                        v.encode('utf-8'),
                    )
                )
        """),
    ("an assert's message goes in brackets", """
        def f(view_func):
            assert '.' not in view_func.__name__, "Blueprint view function name should not contain dots"
        """, """
        def f(view_func):
            assert '.' not in view_func.__name__, (
                "Blueprint view function name should not contain dots"
            )
        """),
    ("a lambda's parameters are not split, and a trailing comment stays last", """
        class A:
            def f(self):
                self.some_callback = lambda request, response, exception: handle(request, response)  # hook
        """, """
        class A:
            def f(self):
                self.some_callback = lambda request, response, exception: handle(
                    request, response
                )  # hook
        """),
    ("a string is split only when nothing else fits, at spaces, inside the call's brackets", """
        def f():
            raise ValueError('the server answered with a status code that this client does not understand')
        """, """
        def f():
            raise ValueError(
                'the server answered with a status code that this client does not '
                'understand'
            )
        """),
    ("a keyword's string value gets brackets of its own", """
        def f(parser):
            parser.add_argument('--verbose', help='print every request and every response as they are sent and received')
        """, """
        def f(parser):
            parser.add_argument(
                '--verbose',
                help=(
                    'print every request and every response as they are sent and '
                    'received'
                ),
            )
        """),
]

CASES += [
    ("a string after an operator gets brackets of its own", """
        class TestRequests:
            def test_invalid_ca_certificate_path(self, e):
                assert str(e.value) == 'Could not find a suitable TLS CA certificate bundle, invalid path: {0}'.format(INVALID_PATH)
        """, """
        class TestRequests:
            def test_invalid_ca_certificate_path(self, e):
                assert (
                    str(e.value)
                    == (
                        'Could not find a suitable TLS CA certificate bundle, invalid '
                        'path: {0}'.format(INVALID_PATH)
                    )
                )
        """),
    ("a string with escapes is split at a space, never inside an escape", r"""
        class TestRequests:
            def test_conflicting_post_params(self, url):
                with open('Pipfile') as f:
                    pytest.raises(ValueError, "requests.post(url, data='[{\"some\": \"data\"}]', files={'some': f})")
        """, r"""
        class TestRequests:
            def test_conflicting_post_params(self, url):
                with open('Pipfile') as f:
                    pytest.raises(
                        ValueError,
                        "requests.post(url, data='[{\"some\": \"data\"}]', "
                        "files={'some': f})",
                    )
        """),
]

# Too long, and no layout keeps what the code does: a URL, a docstring line, a comment inside brackets.
UNWRAPPABLE = [
    "def f():\n    return 'https://example.com/a/very/long/path/that/cannot/be/split/anywhere/at/all/x'\n",
    'def f():\n    """A docstring line far longer than the limit of seventy-nine characters, to say it."""\n',
    "CODES = {\n    200: ('ok', 'okay', 'all_ok', 'all_okay', 'all_good', 'fine', 'well', 'good'),  # a comment\n}\n",
]


def _wrapped(before: str) -> str | None:
    return fix_overlong(textwrap.dedent(before).lstrip("\n"), 79)


@pytest.mark.parametrize(("before", "after"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_long_statements_are_laid_out_as_a_formatter_would(before, after):
    fixed = _wrapped(before)
    assert fixed == textwrap.dedent(after).lstrip("\n")
    assert ast.dump(ast.parse(fixed)) == ast.dump(ast.parse(textwrap.dedent(before)))


def test_no_wrapped_line_ends_in_a_subscript_bracket():
    for _, before, _ in CASES:
        assert not any(line.rstrip().endswith("[") for line in _wrapped(before).splitlines())


def test_every_layout_passes_pycodestyle(tmp_path):
    # One flake8 run over all the results (a run costs about a second): each case as its own function.
    module = "\n\n".join(_wrapped(before) for _, before, _ in CASES)
    found = Linter(tmp_path, "mod.py", isolated=True).check(module)
    assert [d for d in found if d.code[0] in "EW" and d.code != "E402"] == []  # (the import is mid-module)


@pytest.mark.parametrize("source", UNWRAPPABLE)
def test_what_cannot_be_wrapped_without_changing_behaviour_is_left(source):
    assert fix_overlong(source, 79) is None
