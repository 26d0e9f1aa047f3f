"""Which chunks get vectors, and in which order: the rule of "embed what pays".

Dense search pays where a question's words are not the code's: implementation, docs and
examples. Fixtures, generated and vendored files, and data (JSON Lines, CSV, a long JSON or
YAML file), are found by their words when asked for (BM25 over chunks, exact search) and seldom
by meaning, while their vectors cost as much as any other's. The figures behind the rule are in
docs/benchmarks.md (issue 36); `index.lexical_roles` and `index.lexical_data` change it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePosixPath

DATA_SUFFIXES = frozenset({".jsonl", ".ndjson", ".csv", ".tsv", ".lock"})
DATA_LANGUAGES = frozenset({"json", "yaml", "toml", "xml"})
LONG_DATA_CHUNKS = 10  # a JSON, YAML, TOML or XML file cut into more chunks than this is data, not configuration



@dataclass(frozen=True)
class Plan:
    lexical_roles: frozenset[str]
    lexical_data: bool = True

    @classmethod
    def from_settings(cls, settings) -> Plan:
        return cls(frozenset(settings.lexical_roles), settings.lexical_data)

    def signature(self) -> str:
        """Stored with the index: when it changes, every chunk's place in the plan is read again."""
        return json.dumps({"lexical_roles": sorted(self.lexical_roles), "lexical_data": self.lexical_data})

    def embeds(self, path: str, role: str | None, language: str, chunks: int) -> bool:
        """Whether the chunks of this file (of this role and language, cut into `chunks`) get vectors."""
        if (role or "implementation") in self.lexical_roles:
            return False
        data = (PurePosixPath(path).suffix.lower() in DATA_SUFFIXES
                or (language in DATA_LANGUAGES and chunks > LONG_DATA_CHUNKS))
        return not (self.lexical_data and data)
