"""The static embedder (issues 45 and 53), on the real artefacts shipped in codeasst/embedders (static-code, the
default, and static-minilm): a table lookup that loads in a fraction of a second, so these are not marked slow.
Their vectors against model2vec's own are checked by the scripts that build them, which have model2vec at hand."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from codeasst.backends.static_embed import StaticEmbedder, bundled_static_dir, read_manifest
from codeasst.errors import CodeasstError
from codeasst.services import build_services

CODE = "def load_settings(root):\n    \"\"\"Read the config file and the environment.\"\"\"\n    return Settings()\n"


@pytest.fixture(scope="module")
def embedder() -> StaticEmbedder:
    return StaticEmbedder()


def cosine(a, b) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_vectors_are_unit_length_of_the_manifests_dimension(embedder):
    manifest = read_manifest(bundled_static_dir())
    vectors = np.asarray(embedder.embed(["where is the config loaded?", CODE, "x = 1\n" * 40]))
    assert vectors.shape == (3, manifest["output"]["dim"]) == (3, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_the_name_carries_the_artefacts_sha256(embedder):
    sha = read_manifest(bundled_static_dir())["output"]["sha256"]
    assert embedder.name.startswith("static:") and embedder.name.endswith("@" + sha[:12])


def test_deterministic_and_independent_of_batching(embedder):
    texts = [CODE, "parse the command line", "class Indexer:\n    pass\n"]
    together = np.asarray(embedder.embed(texts))
    again = np.asarray(embedder.embed(texts))
    alone = np.asarray([embedder.embed_query(t) for t in texts])
    assert np.array_equal(together, again)
    assert np.allclose(together, alone, atol=1e-6)


@pytest.mark.parametrize("text, similar, unrelated", [
    ("car", "automobile", "banana"),
    ("error", "exception", "garden"),
    ("start the server", "launch the service", "bake a cake"),
    ("delete the file", "remove a document", "paint the fence"),
])
def test_similar_texts_are_closer_than_unrelated_ones_with_no_word_in_common(embedder, text, similar, unrelated):
    query, near, far = embedder.embed([text, similar, unrelated])
    assert cosine(query, near) > cosine(query, far) + 0.2


@pytest.mark.parametrize("text", ["", "   \n\t", "\U0001f600\U0001f680\U0001f30d", "\u2603\u2603"])
def test_a_text_with_no_known_token_still_gets_a_unit_vector(embedder, text):
    vector = np.asarray(embedder.embed_query(text))
    assert np.all(np.isfinite(vector)) and np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_a_chunk_of_100000_characters_is_embedded_from_its_start(embedder):
    start = "def parse_arguments(argv):\n    parser = argparse.ArgumentParser()\n    return parser.parse_args(argv)\n" * 30
    tail = "zebras and giraffes graze on the savanna at dawn. " * 2_000
    chunk = (start + tail)[:100_000]
    assert len(chunk) == 100_000 and len(start) < 4_000
    long, head, rest = np.asarray(embedder.embed([chunk, start, tail]))
    assert np.all(np.isfinite(long)) and np.linalg.norm(long) == pytest.approx(1.0, abs=1e-5)
    # Cut to its first 512 tokens, as model2vec cuts: not averaged over all of it (which is mostly zebras).
    assert cosine(long, head) > 0.95 and cosine(long, rest) < cosine(long, head) - 0.2


def _copy(tmp_path):
    folder = tmp_path / "static"
    shutil.copytree(bundled_static_dir(), folder)
    return folder


def _refusal(folder) -> str:
    with pytest.raises(CodeasstError) as caught:
        StaticEmbedder(folder).embed_query("anything")
    line = caught.value.one_line()
    assert "\n" not in line
    return line


def test_a_damaged_artefact_is_refused_in_one_line(tmp_path):
    folder = _copy(tmp_path)
    StaticEmbedder(folder).load()  # the copy itself is sound
    damaged = _copy(tmp_path / "again")
    weights = bytearray((damaged / "model.safetensors").read_bytes())
    weights[len(weights) // 2] ^= 0x01  # one bit of one vector
    (damaged / "model.safetensors").write_bytes(bytes(weights))
    assert "damaged" in _refusal(damaged) and "model.safetensors" in _refusal(damaged)


def test_a_damaged_manifest_is_refused_in_one_line(tmp_path):
    folder = _copy(tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["output"]["files"]["model.safetensors"] = "0" * 64  # the file list no longer matches its digest
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert "manifest is damaged" in _refusal(folder)
    (folder / "manifest.json").write_text("{ not json")
    assert "manifest is damaged" in _refusal(folder)


@pytest.mark.parametrize("missing", ["model.safetensors", "tokenizer.json", "manifest.json"])
def test_a_missing_file_is_refused_in_one_line(tmp_path, missing):
    folder = _copy(tmp_path)
    (folder / missing).unlink()
    assert "missing" in _refusal(folder) and missing in _refusal(folder)


def test_static_is_chosen_by_setting_for_the_index_and_queries_alike(make_repo):
    root = make_repo({"a.py": "x = 1\n"})
    services = build_services(root, {"embedder.model": "static"})
    assert isinstance(services.embedder, StaticEmbedder)
    assert services.query_embedder is services.embedder
    assert services.open_store().embedder == services.embedder.name
    assert services.first_embedder is None, "static alone: no first phase"
    default = build_services(root)
    assert not isinstance(default.embedder, StaticEmbedder), "MiniLM is the index embedder by default"
    assert isinstance(default.first_embedder, StaticEmbedder), "and the static model its first phase"
    assert build_services(root, {"embedder.first_phase": "none"}).first_embedder is None


def test_a_repository_may_choose_the_shipped_static_model_without_trust(tmp_path):
    from codeasst.config import load_settings

    (tmp_path / ".codeasst.toml").write_text('[embedder]\nmodel = "static"\n')
    loaded = load_settings(tmp_path)
    assert loaded.settings.embedder.model == "static" and loaded.ignored == []


def test_embedder_static_model_names_a_shipped_folder_or_a_path(tmp_path):
    shipped = build_services(tmp_path, {"embedder.model": "static", "embedder.static_model": "static-code"})
    assert shipped.embedder.folder == bundled_static_dir("static-code")
    assert build_services(tmp_path).first_embedder.folder == bundled_static_dir("static-minilm"), "the default"
    copy = tmp_path / "mine"
    shutil.copytree(bundled_static_dir(), copy)
    mine = build_services(tmp_path, {"embedder.first_phase": "static", "embedder.static_model": str(copy)})
    assert mine.first_embedder.folder == copy and mine.first_embedder.name == StaticEmbedder().name


def test_a_repository_may_name_a_shipped_static_model_but_not_a_folder_without_trust(tmp_path):
    from codeasst.config import load_settings

    (tmp_path / ".codeasst.toml").write_text('[embedder]\nstatic_model = "static-code"\n')
    assert load_settings(tmp_path).ignored == []
    (tmp_path / ".codeasst.toml").write_text('[embedder]\nstatic_model = "/tmp/elsewhere"\n')
    loaded = load_settings(tmp_path)
    assert loaded.ignored == ["embedder.static_model"] and loaded.settings.embedder.static_model == "static-minilm"
