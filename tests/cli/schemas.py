"""The JSON Schemas of every command's `--json` output (tests/data/json_schemas), and
docs/json.md rendered from them, so the document cannot drift from what the tests check.

`python -m tests.cli.schemas > docs/json.md` (or `make json-docs`) rewrites the document."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "data" / "json_schemas"
URN = "urn:codeasst:json:"

INTRO = """\
# JSON output

Every command that takes `--json` prints one JSON document on stdout (nothing else goes
to stdout; notes and errors go to stderr) and exits with the codes in the README. The
shapes below are stable: a field may be added, but none is renamed, retyped or removed
without a note here. Each has a machine-checkable JSON Schema (draft 2020-12) in
`tests/data/json_schemas/`, and `tests/cli/test_json_schemas.py` runs every command
through the CLI and validates its output against it.

This file is generated from those schemas: edit a schema, then run `make json-docs`.

Types: `integer|null` means the field is always present and may be null. A field marked
"optional" may be absent. `NAME.*` is an object whose keys vary (stage names, reasons,
languages); `NAME[]` is a list.
"""


def names() -> list[str]:
    return sorted(p.stem for p in SCHEMA_DIR.glob("*.json"))


@cache
def load(name: str) -> dict:
    return json.loads((SCHEMA_DIR / f"{name}.json").read_text(encoding="utf-8"))


def validator(name: str):
    """A validator for one command's output; `$ref`s between schemas resolve by their `$id`."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    registry = Registry().with_resources((load(n)["$id"], Resource.from_contents(load(n))) for n in names())
    schema = load(name)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, registry=registry)


def errors(name: str, data: Any) -> list[str]:
    """Every way `data` breaks the schema, one line each ("" when it fits)."""
    found = sorted(validator(name).iter_errors(data), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in found]


def _type(schema: dict) -> str:
    if "$ref" in schema:
        if schema["$ref"].startswith("#/$defs/"):
            return f"`{schema['$ref'].removeprefix('#/$defs/')}` (below)"
        target = schema["$ref"].removeprefix(URN).split("#")[0]
        return f"object, as in `{target}`"
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{v}`" for v in schema["enum"])
    kind = schema.get("type")
    if kind is None:
        return "any"
    kinds = kind if isinstance(kind, list) else [kind]
    out = []
    for k in kinds:
        if k == "array":
            out.append(f"list of {_type(schema.get('items', {}))}")
        elif k == "object" and isinstance(schema.get("additionalProperties"), dict) and "properties" not in schema:
            values = schema["additionalProperties"]
            out.append(f"object of {_type(values)}" if values else "object")
        else:
            out.append(k)
    return "|".join(out)


def _rows(schema: dict, prefix: str, required: bool) -> list[tuple[str, str, str]]:
    """(field, type, description) for `schema` at `prefix` and everything nested in it."""
    rows = []
    if prefix:
        note = schema.get("description", "")
        rows.append((prefix, _type(schema), note if required else f"Optional. {note}".strip()))
    if schema.get("type") == "array" and "properties" in schema.get("items", {}):
        rows += _rows({**schema["items"], "description": ""}, f"{prefix}[]", True)[1 if prefix else 0:]
    if "properties" in schema:
        needed = set(schema.get("required", []))
        for key, sub in schema["properties"].items():
            rows += _rows(sub, f"{prefix}.{key}" if prefix else key, key in needed)
    values = schema.get("additionalProperties")
    if isinstance(values, dict) and "properties" not in schema and ("properties" in values or "additionalProperties"
                                                                     in values):
        rows += _rows({**values, "description": ""}, f"{prefix}.*", True)[1:]
    return rows


def _table(schema: dict) -> list[str]:
    lines = ["| field | type | meaning |", "| --- | --- | --- |"]
    for field, kind, note in _rows(schema, "", True):
        note = note.replace("|", "\\|")
        lines.append(f"| `{field}` | {kind} | {note} |")
    return lines


def _section(name: str) -> list[str]:
    schema = load(name)
    lines = [f"## `{schema['title']}`", "", schema["description"], "", f"Schema: `tests/data/json_schemas/{name}.json`"]
    defs = schema.get("$defs", {})
    if schema.get("type") == "array":
        lines += ["", f"A {_type(schema)}:"]
        schema = schema["items"]
    if "properties" in schema:
        lines += ["", *_table(schema)]
    for def_name, sub in defs.items():
        lines += ["", f"`{def_name}`: {sub.get('description', '')}", "", *_table(sub)]
    return lines


def render_markdown() -> str:
    order = sorted(names(), key=lambda n: (n.startswith("eval-"), n))
    lines = [INTRO.rstrip("\n")]
    for name in order:
        lines += ["", *_section(name)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_markdown(), end="")
