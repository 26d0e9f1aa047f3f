"""What a request must show before `codeasst serve` reads any code for it.

A local server that holds private code is attacked through the browser: a web page the user
opens can send requests to 127.0.0.1, and by DNS rebinding (its own name resolving to
127.0.0.1) can read the answers. So, as Jupyter and Ollama do:
- the Host header must name the loopback address the server listens on (or a name the user
  allowed), which a rebinding page cannot fake: its Host is its own name;
- a request from a web page (an Origin header, or Sec-Fetch-Site saying cross-site) is refused
  unless its origin is one the user allowed;
- every route but the API description needs the bearer token, which only the 0600
  discovery record holds;
- every path a request names goes through `guard_path`: resolved, inside the repository, and
  not excluded by the index's ignore rules, on the name given and on the file it leads to.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Iterable
from pathlib import Path

from codeasst.errors import UsageError
from codeasst.index.files import may_read

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
OPEN_ROUTES = frozenset({"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})


class PathRefused(UsageError):
    """A path a request names that the server will not read: `status` is the HTTP answer."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(value: str) -> str:
    """The name in a Host header, without its port: "[::1]:8765" -> "[::1]"."""
    value = value.strip().lower()
    if value.startswith("["):
        return value.split("]", 1)[0] + "]"
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class RequestGuard:
    """ASGI middleware: the Host, Origin and token checks, before any route runs."""

    def __init__(self, app, *, token: str | None, port: int | None, bound: str = "127.0.0.1",
                 allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = ()) -> None:
        self.app = app
        self.token = token
        self.port = port  # None: any port (a server whose port is not known yet, e.g. in tests)
        names = {*LOOPBACK_NAMES, *(h.lower() for h in allowed_hosts)}
        if not is_loopback(bound) and bound not in ("0.0.0.0", "::"):
            names.add(f"[{bound}]" if ":" in bound else bound)
        # Bound to every interface, the server cannot know each name it is reached by: the token,
        # which such a server always requires, is then what keeps a page out.
        self.any_host = bound in ("0.0.0.0", "::")
        self.hosts = frozenset(names)
        own = {f"http://{name}:{port}" for name in LOOPBACK_NAMES} if port else set()
        self.origins = frozenset({*(o.rstrip("/").lower() for o in allowed_origins), *own})

    def host_allowed(self, host: str | None) -> bool:
        if host is None:
            return False
        if self.any_host:
            return True
        name = _host_name(host)
        port = host.strip().lower().removeprefix(name).lstrip(":")
        return name in self.hosts and (self.port is None or port in ("", str(self.port)))

    def origin_allowed(self, origin: str | None, fetch_site: str | None) -> bool:
        if origin is None:
            return fetch_site not in ("cross-site", "same-site")
        return origin.rstrip("/").lower() in self.origins

    def token_ok(self, authorization: str | None) -> bool:
        if self.token is None:
            return True
        return hmac.compare_digest((authorization or "").encode(), f"Bearer {self.token}".encode())

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        if not self.host_allowed(headers.get("host")):
            return await _refuse(send, 403, f"Host {headers.get('host')!r} is not allowed: codeasst serve answers "
                                            "requests addressed to 127.0.0.1, localhost or [::1] (serve.allowed_hosts)")
        if not self.origin_allowed(headers.get("origin"), headers.get("sec-fetch-site")):
            return await _refuse(send, 403, f"requests from web pages ({headers.get('origin') or 'cross-site'}) "
                                            "are refused unless serve.allowed_origins lists them")
        # A CORS preflight carries no token; the CORS middleware answers it for an allowed origin.
        preflight = scope.get("method") == "OPTIONS"
        if not preflight and scope.get("path") not in OPEN_ROUTES and not self.token_ok(headers.get("authorization")):
            return await _refuse(send, 401, "a bearer token is required (the server's discovery record holds it: "
                                            "`codeasst serve --info`)", [(b"www-authenticate", b"Bearer")])
        return await self.app(scope, receive, send)


async def _refuse(send, status: int, detail: str, headers: list[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


def guard_path(root: Path, path: str) -> tuple[Path, str]:
    """The file `path` names (relative to `root`, or absolute), and its name relative to `root`;
    PathRefused (403) when it, or the file it resolves to through any symlinks, lies outside the
    repository or is excluded by the index's ignore rules. The one check every route that takes a
    path calls."""
    try:
        return may_read(root, path)
    except ValueError as exc:
        raise PathRefused(str(exc), 403) from None
