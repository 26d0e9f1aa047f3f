"""JSON-RPC faults that pygls 2.1 would only log, answered as JSON-RPC says: a request whose params do
not fit its method gets InvalidParams (its id known), a body that is no JSON a ParseError (id null)."""

from __future__ import annotations

import logging
from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcParseError
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger("codeasst.lsp")

_DROPPED = object()  # a message answered (or not worth answering) already: nothing for a handler


class CodeasstProtocol(LanguageServerProtocol):
    """pygls's protocol, answering the messages it cannot structure instead of only logging them."""

    def structure_message(self, data: dict[str, Any]):
        # pygls reads every message through this hook; a failure raised here reaches the server's
        # report_server_error without the request's id, so the id is read (and answered) here.
        if "method" in data and "jsonrpc" in data and "params" not in data:
            data = {**data, "params": None}  # JSON-RPC lets a request leave its params out
        try:
            return super().structure_message(data)
        except JsonRpcException:
            request_id = data.get("id") if "method" in data else None
            if isinstance(request_id, int | str) and not isinstance(request_id, bool):
                log.info("refused %s (id %s): its params do not fit", str(data.get("method"))[:80], request_id)
                self.send_error(request_id, JsonRpcInvalidParams.CODE,
                                f"invalid params for {str(data['method'])[:200]}")
            return _DROPPED

    def handle_message(self, message: Any) -> None:
        if message is _DROPPED or not hasattr(message, "jsonrpc"):
            if message is not _DROPPED:
                log.info("dropped a message that is no JSON-RPC object")
            return
        super().handle_message(message)

    def parse_error(self) -> None:
        """A body that is no JSON at all: a ParseError, to nobody's request."""
        self.send_error(None, JsonRpcParseError.CODE, "Parse error: not JSON")

    def send_error(self, request_id: int | str | None, code: int, message: str) -> None:
        """An error response to `request_id` (None: JSON-RPC's id null).

        pygls 2.1 has no public way to answer a message that never reached a handler (it answers
        only a handler's result), so this is the one place that uses its private `_send_data`. The
        body is a plain dict, not lsprotocol's ResponseErrorMessage: its converter leaves a None id
        out, and a ParseError must carry `"id": null`."""
        self._send_data({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})
