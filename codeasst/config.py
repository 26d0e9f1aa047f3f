"""Settings, and where each value came from.

Precedence, highest first: CLI flag, CODEASST_* environment variables, the
project's .codeasst.toml, the user's config file, defaults. The sections
([index], [retrieval], ...) live in codeasst.config_sections and are imported
from here, as they always were.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict

from codeasst import paths, trust
from codeasst.config_sections import (
    AskSettings,
    ChatSettings,
    CompleteSettings,
    EmbedderSettings,
    FixSettings,
    IndexSettings,
    LLMSettings,
    LspSettings,
    McpSettings,
    ModelEntry,
    RetrievalSettings,
    ServeSettings,
    StoreSettings,
)
from codeasst.errors import ConfigError

ENV_PREFIX = "CODEASST_"
ENV_NESTED = "__"


class Settings(BaseSettings):
    """Every setting codeasst reads. Load with `load_settings`, which tracks origins."""

    model_config = SettingsConfigDict(use_attribute_docstrings=True, extra="forbid")

    index: IndexSettings = IndexSettings()
    """How files are selected and chunked."""

    embedder: EmbedderSettings = EmbedderSettings()
    """The sentence-transformers model that embeds chunks and queries."""

    store: StoreSettings = StoreSettings()
    """Where the vectors live."""

    retrieval: RetrievalSettings = RetrievalSettings()
    """How search and ask find code."""

    ask: AskSettings = AskSettings()
    """How ask builds its prompt."""

    fix: FixSettings = FixSettings()
    """How fix lints and repairs code."""

    complete: CompleteSettings = CompleteSettings()
    """How complete suggests code at the cursor."""

    chat: ChatSettings = ChatSettings()
    """How chat keeps a conversation."""

    llm: LLMSettings = LLMSettings()
    """The language model and how it runs."""

    serve: ServeSettings = ServeSettings()
    """How `codeasst serve` guards and shares the models and the index."""

    lsp: LspSettings = LspSettings()
    """How `codeasst lsp` counts suggestions and lints open files."""

    mcp: McpSettings = McpSettings()
    """How `codeasst mcp` bounds what it gives a coding agent."""

    models: dict[str, ModelEntry] = {}
    """Named models: [models.NAME] with a GGUF `path`, or a server `url` and `model`."""

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, **_sources):
        # load_settings merges the sources itself so it can say where each value came from.
        return (init_settings,)


@dataclass
class LoadedSettings:
    settings: Settings
    origins: dict[str, str] = field(default_factory=dict)
    """Dotted key -> where its value came from, for every key not left at its default."""
    files_read: list[Path] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    """Keys an untrusted repository config set and that were not applied (see codeasst.trust)."""
    untrusted_file: Path | None = None

    def trust_note(self) -> str | None:
        """One line for the user when an untrusted repository config was partly ignored."""
        if not self.ignored:
            return None
        return (f"ignored {', '.join(self.ignored)} from {self.untrusted_file}: {trust.WHY} "
                f"unless you trust the file (review it, then run `codeasst trust`)")

    def origin(self, key: str) -> str:
        """Where `key` came from; for a table, where its first set value came from."""
        if key in self.origins:
            return self.origins[key]
        nested = [origin for k, origin in self.origins.items() if k.startswith(key + ".")]
        return nested[0] if nested else "default"


def _read_toml(path: Path) -> tuple[dict[str, Any], bytes]:
    """The parsed file and the bytes it was parsed from (what a trust record hashes)."""
    try:
        data = path.read_bytes()
        return tomllib.loads(data.decode("utf-8")), data
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat


def _deep_merge(low: dict[str, Any], high: dict[str, Any]) -> dict[str, Any]:
    merged = dict(low)
    for key, value in high.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _env_values() -> dict[str, Any]:
    source = EnvSettingsSource(
        Settings,
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_NESTED,
        case_sensitive=False,
    )
    try:
        return source()
    except ValueError as exc:  # pydantic-settings raises SettingsError(ValueError) on bad JSON values
        raise ConfigError(f"environment: {exc}") from None


def env_name(key: str) -> str:
    return ENV_PREFIX + key.upper().replace(".", ENV_NESTED)


def guarded_settings(path: Path) -> dict[str, Any]:
    """The settings in a config file that need trust, with their values, for `codeasst trust`
    to show what it allows. Flake8 configs and other files hold none codeasst knows of."""
    if path.name != paths.PROJECT_CONFIG:
        return {}
    values = _read_toml(path)[0]
    user_file = paths.user_config_file()
    known = set((_read_toml(user_file)[0] if user_file.is_file() else {}).get("models") or {})
    sections = (key.split(".", 1) for key in trust.guarded_keys(values, known))
    return {f"{section}.{name}": values[section][name] for section, name in sections}


def load_settings(repo_root: Path | None = None, flags: dict[str, Any] | None = None) -> LoadedSettings:
    """Merge all sources; `flags` holds dotted keys set on the command line."""
    layers: list[tuple[str, dict[str, Any]]] = []  # lowest precedence first
    files_read: list[Path] = []
    user_file = paths.user_config_file()
    user_values = _read_toml(user_file)[0] if user_file.is_file() else {}
    if user_file.is_file():
        layers.append((str(user_file), user_values))
        files_read.append(user_file)
    env = _env_values()
    ignored: list[str] = []
    project_file = repo_root / paths.PROJECT_CONFIG if repo_root is not None else None
    if project_file is not None and project_file.is_file():
        values, data = _read_toml(project_file)
        known_models = set(user_values.get("models") or {}) | set(env.get("models") or {})
        guarded = trust.guarded_keys(values, known_models)
        if guarded and not trust.is_trusted(project_file, data):
            ignored, values = guarded, trust.without(values, guarded)
        layers.append((str(project_file), values))
        files_read.append(project_file)
    layers.append(("env", env))
    flag_tree: dict[str, Any] = {}
    for key, value in (flags or {}).items():
        if value is None:
            continue
        node = flag_tree
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    layers.append(("flag", flag_tree))

    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for label, values in layers:
        merged = _deep_merge(merged, values)
        for key in _flatten(values):
            if label == "env":
                origins[key] = f"env {env_name(key)}"
            elif label == "flag":
                origins[key] = "command-line flag"
            else:
                origins[key] = label
    try:
        settings = Settings(**merged)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        where = origins.get(key, "config")
        raise ConfigError(f"{key}: {first['msg']} (from {where})") from None
    return LoadedSettings(settings=settings, origins=origins, files_read=files_read, ignored=ignored,
                          untrusted_file=project_file if ignored else None)


def describe(loaded: LoadedSettings) -> list[dict[str, Any]]:
    """Each effective setting with its value, origin and docstring, for `codeasst config`."""
    rows = []
    for section_name in Settings.model_fields:
        section = getattr(loaded.settings, section_name)
        if isinstance(section, dict):
            for name, entry in section.items():
                key = f"{section_name}.{name}"
                rows.append({"key": key, "value": entry.model_dump(exclude_none=True),
                             "origin": loaded.origin(key), "env": env_name(key),
                             "help": Settings.model_fields[section_name].description or ""})
            continue
        for name, info in type(section).model_fields.items():
            key = f"{section_name}.{name}"
            rows.append(
                {
                    "key": key,
                    "value": getattr(section, name),
                    "origin": loaded.origin(key),
                    "env": env_name(key),
                    "help": info.description or "",
                }
            )
    for key in loaded.ignored:
        rows.append({"key": key, "value": None, "origin": f"ignored: set by untrusted {loaded.untrusted_file}",
                     "env": env_name(key), "help": trust.WHY})
    return rows
