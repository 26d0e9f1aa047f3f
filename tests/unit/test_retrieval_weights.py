"""Fusion weights as settings: a long query's defaults apply per key, never over a weight the user set."""

from __future__ import annotations

import pytest

from codeasst.config import RetrievalSettings, load_settings
from codeasst.index.store import Hit
from codeasst.retrieve.intent import explain_lines
from codeasst.retrieve.pipeline import fuse
from codeasst.retrieve.weights import fusion_weights

REPORT = "Startup fails when the name is missing\n\n" + "The app stops with this error on every machine. " * 10

# The figures before the weights became settings: short questions `{"named": 2.0, **weights}`, long
# queries `{**weights, **LONG_WEIGHTS}`. With nothing set they must not move.
SHORT = {"named": 2.0, "dense": 1.0, "dense-en": 1.0, "hyde": 0.2, "rg": 0.1, "bm25-chunks": 0.5, "bm25-files": 1.0,
         "stdin-places": 2.0, "stdin-dense": 0.5}
LONG = {**SHORT, "named": 1.0, "definitions": 1.2, "quotes": 0.3, "bm25": 1.0, "dense": 1.0, "dense-en": 1.0,
        "stdin-places": 2.0, "stdin-dense": 0.3}


def hit(id_: str) -> Hit:
    return Hit(id_, f"{id_}.py", 1, 5, "function", id_, "python", "", 0.0)


def test_with_nothing_set_the_weights_are_those_of_before():
    cfg = RetrievalSettings()
    assert fusion_weights(cfg, long=False) == SHORT
    assert fusion_weights(cfg, long=True) == LONG
    assert (cfg.rrf_k, cfg.multi_source_boost, cfg.title_weight) == (10, 0.0, 2.0)


@pytest.mark.parametrize("where", ["env", "project"])
def test_a_users_weight_is_kept_for_a_long_query(tmp_path, monkeypatch, where):
    if where == "env":
        monkeypatch.setenv("CODEASST_RETRIEVAL__WEIGHTS__DENSE", "0.5")
    else:
        (tmp_path / ".codeasst.toml").write_text("[retrieval.weights]\ndense = 0.5\n")
    cfg = load_settings(tmp_path).settings.retrieval
    # Through the pipeline's fusion: dense at the user's 0.5, not the long query's default 1.0.
    fused = {f.hit.id: f.score for f in fuse({"dense": [hit("a")], "bm25": [hit("b")]}, cfg, long=True)}
    assert fused == pytest.approx({"a": 0.5 / 11, "b": 1.0 / 11})
    # Every other key keeps its default, per key: the long query's where it has one, else the short one's.
    assert fusion_weights(cfg, long=True) == {**LONG, "dense": 0.5}
    assert fusion_weights(cfg, long=False) == {**SHORT, "dense": 0.5}


def test_a_long_weight_the_user_set_outweighs_their_short_one(tmp_path):
    (tmp_path / ".codeasst.toml").write_text("[retrieval.weights]\nnamed = 3.0\nquotes = 0.9\n"
                                             "[retrieval.long_weights]\nnamed = 1.5\n")
    cfg = load_settings(tmp_path).settings.retrieval
    assert fusion_weights(cfg, long=True) == {**LONG, "named": 1.5, "quotes": 0.9}
    assert fusion_weights(cfg, long=False) == {**SHORT, "named": 3.0, "quotes": 0.9}


def test_rrf_k_and_the_title_weight_are_settings(tmp_path):
    (tmp_path / ".codeasst.toml").write_text("[retrieval]\nrrf_k = 60\nmulti_source_boost = 0.5\n")
    cfg = load_settings(tmp_path).settings.retrieval
    fused = {f.hit.id: f.score for f in fuse({"dense": [hit("a")], "rg": [hit("a"), hit("b")]}, cfg)}
    assert fused == pytest.approx({"a": (1.0 / 61 + 0.1 / 61) * 1.5, "b": 0.1 / 62})


def test_role_weights_are_a_setting(tmp_path):
    from codeasst.retrieve import intent

    (tmp_path / ".codeasst.toml").write_text("[retrieval.off_intent]\ndocs = 0.9\n")
    cfg = load_settings(tmp_path).settings.retrieval
    assert cfg.off_intent == {**RetrievalSettings().off_intent, "docs": 0.9}
    assert intent.role_weight("docs", "implementation", cfg.off_intent) == 0.9
    assert intent.role_weight("test", "implementation", cfg.off_intent) == 0.5


def test_explain_says_which_weights_applied_and_from_where(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEASST_RETRIEVAL__WEIGHTS__DENSE", "0.5")
    loaded = load_settings(tmp_path)
    lines = explain_lines(REPORT, True, loaded)
    assert lines[0].startswith("intent: implementation")
    weights = next(line for line in lines if line.startswith("weights for a long query"))
    assert "dense 0.5 (env CODEASST_RETRIEVAL__WEIGHTS__DENSE)" in weights
    assert "definitions 1.2" in weights and "(long-query default)" in weights
    assert "retrieval.rrf_k 10 (default)" in lines[-1]
    short = explain_lines("how are rankings fused?", False, loaded)
    assert short[0].startswith("roles: off")
    assert any(line.startswith("weights for a short question") and "named 2" in line for line in short)
    assert explain_lines("how are rankings fused?") == explain_lines("how are rankings fused?")[:1]  # no settings
