"""Workspace trust: what a repository's own config may do, and the files the user has allowed.

A repository is untrusted input. Its `.codeasst.toml` may tune how codeasst reads
it (chunking, ignore rules, retrieval weights, prompt knobs), but the settings
that run a program, send data off the machine or read a secret come only from
the user's own config, the environment or flags, unless the user has trusted
that exact file with `codeasst trust`, as direnv's `allow` does. A trust record
is the file's resolved path and the sha256 of its bytes, kept in the user's
data directory: any edit of the file revokes it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codeasst import paths
from codeasst.embedders import SHIPPED
from codeasst.errors import ConfigError

# The models shipped with codeasst; a repository may pick one of these by name.
BUNDLED_MODELS = ("auto", "bundled", "bundled-1.5b")

WHY = "a repository's config may not run programs, send data off the machine or read secrets"


def guarded_keys(values: Mapping[str, Any], known_models: set[str]) -> list[str]:
    """The dotted keys in a repository's config that need the user's trust.

    `values` is the parsed file; `known_models` the [models] names the user's own
    config and environment define (a repository may choose among those)."""
    found = []
    fix = values.get("fix") or {}
    if isinstance(fix, dict) and "linter" in fix:
        found.append("fix.linter")  # runs a program
    store = values.get("store") or {}
    if isinstance(store, dict) and "chroma_url" in store:
        found.append("store.chroma_url")  # ships the code to that server
    models = values.get("models") or {}
    if isinstance(models, dict):
        # A server url sends prompts off the machine, api_key_env reads a secret, a path loads a file.
        found += [f"models.{name}" for name in models]
    # A model choice may name a bundled model, one the user defined, or "llm" (complete.model's
    # "whatever llm.model picks"); anything else is a path or a model the repository itself defines.
    allowed = {*BUNDLED_MODELS, "llm", *known_models}
    for section, key in (("llm", "model"), ("complete", "model"), ("complete", "invoked_model"),
                         ("complete", "variants")):
        table = values.get(section) or {}
        if isinstance(table, dict) and key in table:
            chosen = table[key] if isinstance(table[key], list) else [table[key]]
            if any(not isinstance(choice, str) or choice not in allowed for choice in chosen):
                found.append(f"{section}.{key}")
    serve = values.get("serve") or {}
    if isinstance(serve, dict):
        # Each lets a web page, or a host name the user never chose, reach the code through the server.
        found += [f"serve.{key}" for key in ("allowed_origins", "allowed_hosts") if key in serve]
    embedder = values.get("embedder") or {}
    # 'bundled' and 'static' are models codeasst ships; anything else is a folder to load.
    if isinstance(embedder, dict) and embedder.get("model", "bundled") not in ("bundled", "static"):
        found.append("embedder.model")  # loading a model folder can run code it ships
    if isinstance(embedder, dict) and embedder.get("static_model", SHIPPED[0]) not in SHIPPED:
        found.append("embedder.static_model")  # a folder of the machine's, not one codeasst ships
    return found


def without(values: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    """A copy of `values` with the dotted `keys` removed (empty tables too)."""
    pruned = copy.deepcopy(values)
    for key in keys:
        *parents, leaf = key.split(".")
        node = pruned
        for part in parents:
            node = node.get(part, {})
        node.pop(leaf, None)
    return {k: v for k, v in pruned.items() if not (isinstance(v, dict) and not v)}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _store_file() -> Path:
    return paths.data_dir() / "trusted.json"


def _records() -> dict[str, str]:
    try:
        data = json.loads(_store_file().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{_store_file()}: unreadable trust records: {exc}",
                          hint="delete the file; every config file is then untrusted again") from None
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _save(records: dict[str, str]) -> None:
    target = _store_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".trusted-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(records, fh, indent=1, sort_keys=True)
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


def is_trusted(path: Path, data: bytes) -> bool:
    """Whether the user trusted exactly these bytes at this path."""
    return _records().get(str(path.resolve())) == digest(data)


def trust(path: Path) -> str:
    """Record the file's current content as trusted; returns its sha256."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    records = _records()
    records[str(path.resolve())] = digest(data)
    _save(records)
    return digest(data)


def revoke(path: Path) -> bool:
    """Forget the file's trust record; False when there was none."""
    records = _records()
    if records.pop(str(path.resolve()), None) is None:
        return False
    _save(records)
    return True


def trusted_files() -> list[dict[str, Any]]:
    """Each trust record, and whether the file still holds the trusted bytes."""
    rows = []
    for name, sha in sorted(_records().items()):
        try:
            current = digest(Path(name).read_bytes())
        except OSError:
            current = None
        state = "trusted" if current == sha else "missing" if current is None else "edited since: not trusted"
        rows.append({"path": name, "sha256": sha, "state": state})
    return rows
