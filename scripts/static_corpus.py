"""The code corpus the trained static embedder learns from (issue 53): pinned PyPI packages, chunked as codeasst
chunks, in a fixed order. Pure Python (the standard library and codeasst's chunker): the build script imports
it in codeasst's venv, and tests/unit/test_static_corpus.py checks its skipping without a model.

Each package is pinned by version and by its archive's sha256 and has a permissive licence (MIT, BSD or
Apache-2.0, as its metadata declares). None is a repository or package the evals read, nor one of those held
out; the test checks this list against them. Pure-Python packages come as wheels (pip downloads them without
building anything), those with C, C++ or Java as sdists (their source is only there).
"""

from __future__ import annotations

import random
import re
import tarfile
import zipfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from codeasst.index.chunker import chunk_file, language_for
from codeasst.index.files import decode_source
from codeasst.index.fingerprint import embedding_text

MAX_FILE_BYTES = 1_000_000  # as index.max_file_bytes: a file at least this big is skipped unread
CHUNK_CHARS, OVERLAP_LINES = 1000, 5  # index.chunk_chars and index.overlap_lines' defaults
PER_PACKAGE = 1500  # the most texts one package gives, so no big package drowns the rest
LANGUAGES_LEFT_OUT = frozenset({"json", "yaml", "text"})  # data and prose: the index gives data no vector
SEED = 53


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    kind: str  # "wheel" or "sdist"
    license: str  # SPDX, as the package's metadata declares it
    sha256: str  # of the archive pip downloads

    @property
    def spec(self) -> str:
        return f"{self.name}=={self.version}"


PACKAGES = (
    Package("alembic", "1.20.1", "wheel", "MIT", "9970712cfb81ea26c8658d378aaa5b8f6ff9146e5bb111d70497c164016cf598"),
    Package("anyio", "4.16.0", "wheel", "MIT", "c66ae634e0b8228396b801741beb3294326d4b6102f7bba4041c0dfb58c29026"),
    Package("arrow", "1.4.0", "wheel", "Apache-2.0", "749f0769958ebdc79c173ff0b0670d59051a535fa26e8eba02953dc19eb43205"),
    Package("black", "26.10.1", "wheel", "MIT", "28842f9a8207cc1df6eb983a35a14c5a0dfcd603d214fe82d84bef552afd2e3a"),
    Package("boltons", "26.2.0", "wheel", "BSD-3-Clause",
            "41942cbce440211bbcf2487ccdc356964ad674f95a01068b8a0dd7a1d1fed036"),
    Package("bottle", "0.13.4", "wheel", "MIT", "045684fbd2764eac9cdeb824861d1551d113e8b683d8d26e296898d3dd99a12e"),
    Package("cachetools", "8.0.2", "wheel", "MIT", "502bf3c17c6e35d78ccdaa70da8c7001b28634541f5cde0dee33c93bb252277d"),
    Package("h11", "0.16.0", "wheel", "MIT", "63cf8bbe7522de3bf65932fda1d9c2772064ffb3dae62d55932da54b31cb6c86"),
    Package("humanize", "4.17.0", "wheel", "MIT", "02d0899527760efe18011944f882df4970943b4cdff7b5a0ba7fed43a576ef98"),
    Package("isort", "9.0.2", "wheel", "MIT", "6c29deeb39698a8717823b7f75b2ac58c5e8ab8dcf6cf31205a72a6617fb454e"),
    Package("jedi", "0.20.1", "wheel", "MIT", "0fb16d86c4a4c73c37ba518c77419975e30fcc620658a8d14fbb5720cdd34142"),
    Package("lark", "1.3.1", "wheel", "MIT", "c629b661023a014c37da873b4ff58a817398d12635d3bbb2c5a03be7fe5d1e12"),
    Package("mako", "1.4.3", "wheel", "MIT", "723296007c870bfd6b3f0c3230dba7198096e5269297ebf5e4eff9e7ffa39d4f"),
    Package("networkx", "3.6.1", "wheel", "BSD-3-Clause",
            "d47fbf302e7d9cbbb9e2555a0d267983d2aa476bac30e90dfbe5669bd57f3762"),
    Package("parso", "0.8.7", "wheel", "MIT", "a8926eb2a1b915486941fdbd31e86a4baf88fe8c210f25f2f35ecec5b574ca1c"),
    Package("pluggy", "1.7.0", "wheel", "MIT", "7dd7b0d8832ba3cb632c306926ded123429211b83641b35dc5c41ad2d34f9bec"),
    Package("pydantic", "2.14.4", "wheel", "MIT", "653a2ad9f6d8858529c77c72717d0ea991d6c6837fe683246b2f4b2bbfc3fadc"),
    Package("pyflakes", "4.1.0", "wheel", "MIT", "b2e05e6bac8e49b67be2a6ffa63422c60f7193fc72e8180255907b41ec997dc1"),
    Package("pyparsing", "3.3.3", "wheel", "MIT", "ece8c00a69cf01b45d0b1dedabb469c90d8caf996d4fda40f147627a122849a4"),
    Package("tabulate", "0.10.0", "wheel", "MIT", "f0b0622e567335c8fabaaa659f1b33bcb6ddfe2e496071b743aa113f8774f2d3"),
    Package("tenacity", "9.2.1", "wheel", "Apache-2.0", "9e56f17539296baab7beabb08b92f6ee3d7be92d8be72d763360677c2ad6580e"),
    Package("toolz", "1.2.0", "wheel", "BSD-3-Clause", "890f820b1cb8152785aaf9386d8707770110809035800985ca65cb24ce1120ef"),
    Package("trio", "0.35.0", "wheel", "MIT OR Apache-2.0",
            "9a062a029487c1bdbcc1b2543b729a0bde857ce478b1512c84f391f628e0c5c9"),
    Package("urllib3", "2.8.0", "wheel", "MIT", "0cf3cae568d36aa9576b28dfb35f11328f1cb974ca7647d9475ebb86c75ac6e3"),
    Package("aiohttp", "3.14.5", "sdist", "Apache-2.0 AND MIT", "5558a7f5a05af9ecf744af91e5baefc436f93c9333e656c27ec253f9a6bbe178"),
    Package("cffi", "2.1.1", "sdist", "MIT-0", "dd31f52ea1086513bb9df30f8fcee9b8918323ae067a3d5b78bc826a000712be"),
    Package("coverage", "7.17.5", "sdist", "Apache-2.0", "4f41d35b798714a2e79ec2097d6b03c92cd3b7de58e422fce7a1ca2c0c25b276"),
    Package("jpype1", "1.7.1", "sdist", "Apache-2.0", "3cd88838dc3d2d546f7eaeadaaff864e590010c15f2b6a44b6f37e60796a14b2"),
    Package("msgpack", "1.2.4", "sdist", "Apache-2.0", "475c44e12f2a5de766a8448783f149c9b33f3f49b88953c6cd739a77d93c732c"),
    Package("peewee", "4.5.3", "sdist", "MIT", "434576afaf806428a01f84af74c42fde59372c4f6a6eba26d9b5372113344a8a"),
    Package("psutil", "7.2.2", "sdist", "BSD-3-Clause", "0746f5f8d406af344fd547f1c8daa5f5c33dbc293bb8d6a16d80b4bb88f59372"),
    Package("sqlalchemy", "2.1.9", "sdist", "MIT", "d700a8b2edfb26282a470333d6bc4a454c4acda4d201a3bea7b72fa76c217d28"),
    Package("tornado", "6.6.1", "sdist", "Apache-2.0", "28e6311402af59c8b02e3fa0f5e7d8eb465b25081381803b127d97e6a4395d5a"),
    Package("zstandard", "0.25.0", "sdist", "BSD-3-Clause",
            "7713e1179d162cf5c7906da876ec2ccb9c3a9dcbdffef0cc7f70c3667a205f0b"),
)


@dataclass
class Texts:
    """What one package (or the whole corpus) gave: its texts, and the files skipped, by reason."""

    texts: list[str]
    files: int = 0
    skipped: Counter[str] | None = None

    def __post_init__(self) -> None:
        self.skipped = self.skipped if self.skipped is not None else Counter()


def _reason(why: str) -> str:
    """decode_source's reason, without the detail that differs per file (the offset of a bad byte)."""
    return re.sub(r"\s*\(.*\)$", "", why)


def texts_from_files(files: Iterable[tuple[str, int, bytes | None]]) -> Texts:
    """Chunk (path, size, data) as codeasst's index does and return the texts its embedder would see. A file
    at least MAX_FILE_BYTES long is skipped without its data being read (data may be None then); binary, not
    UTF-8 and minified files are skipped as the index skips them. Each skip is counted by reason."""
    out = Texts([])
    for path, size, data in files:
        language = language_for(path)
        if language is None or language in LANGUAGES_LEFT_OUT:
            continue
        if size >= MAX_FILE_BYTES:
            out.skipped["too large"] += 1
            continue
        text, why = decode_source(data or b"")
        if text is None:
            out.skipped[_reason(why or "unreadable")] += 1
            continue
        out.files += 1
        out.texts += [embedding_text(c) for c in chunk_file(path, text, CHUNK_CHARS, OVERLAP_LINES)]
    return out


def archive_files(archive: Path) -> Iterator[tuple[str, int, bytes | None]]:
    """(path, size, data) of an sdist's or a wheel's regular files, sorted by path: an sdist's top folder
    (name-version/) and a wheel's .dist-info are left out. Data is None for a file too big to read."""
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as z:
            for info in sorted(z.infolist(), key=lambda i: i.filename):
                head = info.filename.split("/", 1)[0]
                if info.is_dir() or head.endswith((".dist-info", ".data")):
                    continue
                big = info.file_size >= MAX_FILE_BYTES
                yield info.filename, info.file_size, None if big else z.read(info)
        return
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not member.isfile():
                continue
            path = member.name.split("/", 1)[1] if "/" in member.name else member.name
            big = member.size >= MAX_FILE_BYTES
            stream = None if big else tar.extractfile(member)
            yield path, member.size, stream.read() if stream else None


def sample(texts: list[str], limit: int) -> list[str]:
    """At most `limit` of `texts`, spread evenly over them (in file order, so over the whole package)."""
    if len(texts) <= limit:
        return texts
    return [texts[i * len(texts) // limit] for i in range(limit)]


def metadata_license(archive: Path) -> str:
    """The licence the archive's own metadata declares (License-Expression, License, or its classifiers)."""
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as z:
            name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            text = z.read(name).decode("utf-8", "replace")
    else:
        with tarfile.open(archive) as tar:
            member = min((m for m in tar.getmembers() if m.name.endswith("/PKG-INFO")), key=lambda m: m.name.count("/"))
            stream = tar.extractfile(member)
            text = stream.read().decode("utf-8", "replace") if stream else ""
    head = text.split("\n\n", 1)[0]
    fields = [line.split(":", 1)[1].strip() for line in head.splitlines()
              if line.startswith(("License-Expression:", "License:", "Classifier: License ::"))]
    return "; ".join(f for f in fields if f and len(f) < 200)


def build_corpus(archives: dict[str, Path], max_texts: int) -> tuple[list[str], list[dict]]:
    """The corpus's texts, in a seeded order that mixes the packages (so every featurized shard, and
    tokenlearn's validation tail, holds all of them), cut to `max_texts`; and a record per package."""
    texts: list[str] = []
    records = []
    for package in PACKAGES:
        archive = archives[package.name]
        got = texts_from_files(archive_files(archive))
        kept = sample(got.texts, PER_PACKAGE)
        texts += kept
        records.append({"name": package.name, "version": package.version, "kind": package.kind,
                        "license": package.license, "declared": metadata_license(archive),
                        "archive": archive.name, "sha256": package.sha256, "files": got.files,
                        "chunks": len(got.texts), "texts": len(kept), "skipped": dict(sorted(got.skipped.items()))})
    random.Random(SEED).shuffle(texts)
    return texts[:max_texts], records
