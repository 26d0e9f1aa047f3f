"""Settings precedence and provenance."""

from __future__ import annotations

import pytest

from codeasst import paths
from codeasst.config import describe, load_settings
from codeasst.errors import ConfigError


def test_precedence_flag_env_project_user_default(tmp_path, monkeypatch):
    user = paths.user_config_file()
    user.parent.mkdir(parents=True)
    user.write_text("[index]\nchunk_chars = 100\noverlap_lines = 1\nmax_file_bytes = 7\n[embedder]\nbatch_size = 3\n")
    (tmp_path / ".codeasst.toml").write_text("[index]\nchunk_chars = 200\noverlap_lines = 2\n")
    monkeypatch.setenv("CODEASST_INDEX__CHUNK_CHARS", "300")

    loaded = load_settings(tmp_path, {"index.chunk_chars": 400, "embedder.model": None})
    s = loaded.settings
    assert (s.index.chunk_chars, s.index.overlap_lines, s.index.max_file_bytes, s.embedder.batch_size) == (
        400, 2, 7, 3)
    assert s.embedder.model == "bundled"
    assert loaded.origin("index.chunk_chars") == "command-line flag"
    assert loaded.origin("index.overlap_lines") == str(tmp_path / ".codeasst.toml")
    assert loaded.origin("index.max_file_bytes") == str(user)
    assert loaded.origin("embedder.model") == "default"
    assert loaded.files_read == [user, tmp_path / ".codeasst.toml"]

    loaded = load_settings(tmp_path)
    assert loaded.settings.index.chunk_chars == 300
    assert loaded.origin("index.chunk_chars") == "env CODEASST_INDEX__CHUNK_CHARS"


def test_describe_has_a_docstring_for_every_field(tmp_path):
    rows = describe(load_settings(tmp_path))
    assert rows and all(row["help"] for row in rows)


def test_bad_toml_is_a_config_error(tmp_path):
    (tmp_path / ".codeasst.toml").write_text("[index\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_settings(tmp_path)


def test_bad_value_names_its_origin(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEASST_INDEX__CHUNK_CHARS", "lots")
    with pytest.raises(ConfigError, match=r"index.chunk_chars: .*env CODEASST_INDEX__CHUNK_CHARS"):
        load_settings(tmp_path)


def test_unknown_key_in_project_file_is_rejected(tmp_path):
    (tmp_path / ".codeasst.toml").write_text("[index]\nchunk_size = 5\n")
    with pytest.raises(ConfigError, match="index.chunk_size"):
        load_settings(tmp_path)


def test_codeasst_home_moves_every_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEASST_HOME", str(tmp_path))
    assert paths.config_dir() == tmp_path / "config"
    assert paths.data_dir() == tmp_path / "data"
    assert paths.cache_dir() == tmp_path / "cache"
