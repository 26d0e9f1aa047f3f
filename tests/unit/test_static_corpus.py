"""The trained static model's corpus (issue 53, scripts/static_corpus.py) and the shipped models' manifests: the
corpus skips and counts what the index would skip, holds no package or repository the evals read or the
held-out lists name, only permissive licences, and each shipped folder is the files its manifest names."""

from __future__ import annotations

import functools
import importlib.util
import io
import json
import re
import sys
import tarfile
from pathlib import Path

import pytest

from codeasst.backends.static_embed import SHIPPED, bundled_static_dir, file_sha256, read_manifest

ROOT = Path(__file__).resolve().parents[2]
# Held out of every corpus, whatever the evals read today (the brief).
HELD_OUT = {"flask", "requests", "pytest", "sphinx", "pylint", "seaborn", "xarray", "sqlfluff", "streamlink",
            "reflex", "yt-dlp", "ripgrep", "gson", "fmt", "cjson", "sinatra", "slim", "newtonsoft-json", "moshi",
            "alamofire", "sympy", "astropy", "codeasst", "fastapi", "gin", "django", "scikit-learn", "sklearn",
            "matplotlib"}
PERMISSIVE = re.compile(r"^(MIT|MIT-0|BSD-[23]-Clause|Apache-2\.0)( (OR|AND) (MIT|MIT-0|BSD-[23]-Clause|Apache-2\.0))*$")


@functools.cache
def load_corpus_module():
    """scripts/ is no package: load the script by its path (registered, as its dataclasses need)."""
    spec = importlib.util.spec_from_file_location("static_corpus", ROOT / "scripts" / "static_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def normalise(name: str) -> str:
    """`pypi:Markdown==3.11.3`, `github:spf13/cobra@adbc88`, `npm:@tanstack/query-core@5/src`, `markdown_it`:
    the project's own name, as PyPI compares names."""
    name = re.sub(r"^(pypi|github|npm|checkout):", "", name.strip().lower())
    name = re.sub(r"(==|@(?=[0-9a-f.]+\b)).*$", "", name.lstrip("@"))
    parts = [p for p in name.split("/") if p not in ("src", "cli", "examples")]
    return re.sub(r"[-_.]+", "-", parts[-1] if parts else name)


def eval_repositories() -> set[str]:
    """Every repository or package a question set or a benchmark's rows name."""
    names = set()
    for path in [*(ROOT / "tests" / "data").rglob("*.jsonl"), *(ROOT / "bench" / "data").rglob("*.jsonl")]:
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            for key in ("repo", "github"):
                value = row.get(key) if isinstance(row, dict) else None
                if isinstance(value, str) and not value.startswith("self@"):
                    names.add(normalise(value))
                    if "/" in value:  # github:owner/name: the owner is often the project too (httpie/cli)
                        names.add(normalise(value.split(":")[-1].split("/")[0]))
    return names


def test_the_eval_repositories_are_read_as_names():
    found = eval_repositories()
    assert {"click", "httpx", "rich", "typer", "markdown-it", "query-core", "pflag", "cobra", "cobra-cli", "chi",
            "express", "pipx", "tox", "mkdocs", "httpie", "marshmallow", "tomlkit", "packaging", "werkzeug",
            "full-stack-fastapi-template"} <= found
    assert normalise("pypi:Markdown==3.11.3") == "markdown" and normalise("github:httpie/cli@5b604c3") == "httpie"


def corpus_names() -> dict[str, str]:
    """Each corpus package's name and licence: the build script's pins, and every shipped manifest's corpus."""
    packages = {p.name: p.license for p in load_corpus_module().PACKAGES}
    for name in SHIPPED:
        folder = bundled_static_dir(name)
        if (folder / "manifest.json").exists():
            for record in read_manifest(folder).get("corpus", {}).get("packages", []):
                packages[record["name"]] = record["license"]
    return packages


def test_no_corpus_package_is_one_the_evals_read_or_one_held_out():
    excluded = eval_repositories() | HELD_OUT
    corpus = {normalise(name): name for name in corpus_names()}
    assert corpus.keys() & excluded == set()
    assert {"markdown-it-py", "markdown"} & corpus.keys() == set()  # markdown_it's package name, and Markdown


def test_every_corpus_package_is_permissively_licensed():
    assert {name: lic for name, lic in corpus_names().items() if not PERMISSIVE.match(lic)} == {}


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_static_model_is_the_files_its_manifest_names(name):
    folder = bundled_static_dir(name)
    manifest = read_manifest(folder)
    on_disk = sorted(p.name for p in folder.iterdir() if p.name != "manifest.json")
    assert on_disk == sorted(manifest["output"]["files"])
    assert {n: file_sha256(folder / n) for n in on_disk} == manifest["output"]["files"]
    assert manifest["output"]["bytes"] == sum((folder / n).stat().st_size for n in on_disk) <= 16_000_000


def test_the_trained_models_manifest_names_its_corpus_and_how_it_was_made():
    manifest = read_manifest(bundled_static_dir("static-code"))
    corpus, pins = manifest["corpus"], {p.name: p for p in load_corpus_module().PACKAGES}
    assert [(p["name"], p["version"], p["sha256"]) for p in corpus["packages"]] == [
        (p.name, p.version, p.sha256) for p in pins.values()]
    assert corpus["texts"] <= 100_000 and len(corpus["sha256"]) == 64
    assert manifest["tools"]["tokenlearn"] == "0.2.1" and "train_static_embedder.py" in manifest["rebuild"]


NOT_UTF8 = "# café\n".encode("latin-1") * 20
MINIFIED = b"var a=function(){return 1};" * (5_000_000 // 27)  # 5 MB on one line
SOURCE = b"def parse(argv):\n    \"\"\"Read the command line.\"\"\"\n    return argv[1:]\n"


def test_the_corpus_skips_and_counts_a_file_not_utf8_and_a_5mb_minified_one():
    sc = load_corpus_module()
    got = sc.texts_from_files([("pkg/cli.py", len(SOURCE), SOURCE), ("pkg/latin.py", len(NOT_UTF8), NOT_UTF8),
                               ("pkg/static/app.min.js", len(MINIFIED), MINIFIED)])
    assert got.files == 1 and got.skipped == {"not UTF-8 text": 1, "too large": 1}
    assert got.texts and all(t.startswith("pkg/cli.py ") and "def parse" in t for t in got.texts)
    # Under the size cap, a minified file is still skipped, as minified.
    small = MINIFIED[:200_000]
    assert sc.texts_from_files([("pkg/app.min.js", len(small), small)]).skipped == {"minified": 1}


def test_an_sdist_is_read_without_its_top_folder_and_a_huge_member_is_not_read(tmp_path):
    sc = load_corpus_module()
    archive = tmp_path / "pkg-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, data in (("pkg-1.0/pkg/cli.py", SOURCE), ("pkg-1.0/pkg/latin.py", NOT_UTF8),
                           ("pkg-1.0/web/app.min.js", MINIFIED)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    files = list(sc.archive_files(archive))
    assert [(path, data is None) for path, _, data in files] == [
        ("pkg/cli.py", False), ("pkg/latin.py", False), ("web/app.min.js", True)]
    got = sc.texts_from_files(files)
    assert got.files == 1 and sum(got.skipped.values()) == 2


def test_sampling_keeps_the_limit_spread_over_the_package():
    sc = load_corpus_module()
    texts = [str(i) for i in range(10)]
    assert sc.sample(texts, 20) == texts
    assert sc.sample(texts, 5) == ["0", "2", "4", "6", "8"]
