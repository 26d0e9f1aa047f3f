"""Reading a Python file for fixing, and writing it back without ever damaging it.

The text is handled with LF line endings; encoding (PEP 263 cookie or BOM),
the dominant line ending and the permission bits are remembered and restored
on write. The write goes to a temporary file in the same directory, is fsynced,
and replaces the original with os.replace only if the file on disk is still
byte for byte the one that was read.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path

from codeasst.errors import CodeasstError, UsageError

PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")


class FixInputError(UsageError):
    """The file cannot be fixed as given: missing, not Python, unreadable, read-only, too large."""


class FileChangedError(CodeasstError):
    """The file changed on disk while it was being fixed; nothing was written."""

    exit_code = 75  # like a lock: running again on the new content can succeed


@dataclass(frozen=True)
class SourceFile:
    path: Path  # the real file, symlinks resolved, so a write replaces the target and keeps the link
    text: str  # decoded, with "\n" line endings
    encoding: str
    newline: str  # "\n", "\r\n" or "\r": the most common ending in the file
    bom: bool
    mode: int
    digest: str  # sha256 of the bytes read

    def encode(self, text: str) -> bytes:
        if self.newline != "\n":
            text = text.replace("\n", self.newline)
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


def _looks_like_python(path: Path, head: bytes) -> bool:
    if path.suffix.lower() in PYTHON_SUFFIXES:
        return True
    first = head.split(b"\n", 1)[0]
    return path.suffix == "" and first.startswith(b"#!") and b"python" in first


def decode(data: bytes, name: str) -> tuple[str, str, bool]:
    """(text with LF endings, encoding, had a UTF-8 BOM), as Python itself would read the bytes."""
    if b"\0" in data:
        raise FixInputError(f"{name}: binary file, not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        # Python's own words ("invalid or missing encoding declaration") do not say what is wrong:
        # the first lines are not UTF-8, and no coding comment names what they are.
        if "invalid or missing" in exc.msg:
            raise FixInputError(f"{name}: not valid UTF-8 ({_where_undecodable(data, 'utf-8')}) and no "
                                "encoding declaration names another encoding", hint=_ENCODING_HINT) from None
        raise FixInputError(f"{name}: {exc.msg}") from None
    bom = encoding == "utf-8-sig"
    codec = "utf-8" if bom else encoding  # the BOM stays in the text here, removed below
    try:
        text = data.decode(codec)
    except UnicodeDecodeError:
        raise FixInputError(f"{name}: not valid {codec} ({_where_undecodable(data, codec)})",
                            hint=_ENCODING_HINT) from None
    except LookupError as exc:
        raise FixInputError(f"{name}: not valid {codec}: {exc}") from None
    if bom:
        text = text.removeprefix("\ufeff")
    return text, "utf-8" if bom else encoding, bom


_ENCODING_HINT = "save it as UTF-8, or name its encoding in a PEP 263 coding comment"


def _where_undecodable(data: bytes, encoding: str) -> str:
    """'byte 0xe9 on line 3': the first byte that does not decode, for the error message."""
    try:
        data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return f"byte 0x{data[exc.start]:02x} on line {line}"
    return "it does not decode"


def dominant_newline(text: str) -> str:
    crlf = text.count("\r\n")
    cr = text.count("\r") - crlf
    lf = text.count("\n") - crlf
    return max((lf, "\n"), (crlf, "\r\n"), (cr, "\r"))[1] if crlf or cr else "\n"


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_source(path: Path, max_bytes: int, *, for_write: bool) -> SourceFile:
    """Read `path` for fixing; every refusal is a one-line FixInputError and touches nothing."""
    if not path.exists():
        raise FixInputError(f"{path}: no such file")
    if path.is_dir():
        raise FixInputError(f"{path}: is a directory; give a Python file")
    real = Path(os.path.realpath(path))
    try:
        info = real.stat()
        if info.st_size > max_bytes:
            raise FixInputError(f"{path}: {info.st_size:,} bytes is over the limit of {max_bytes:,}",
                                hint="raise fix.max_file_bytes")
        data = real.read_bytes()
    except PermissionError:
        raise FixInputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise FixInputError(f"{path}: cannot read: {exc.strerror}") from None
    if not _looks_like_python(path, data[:200]):
        raise FixInputError(f"{path}: not a Python file (expected .py, .pyi or a python shebang)")
    if for_write:
        # Mode bits rather than os.access: as root, access() says yes to a read-only file.
        if not info.st_mode & stat.S_IWUSR:
            raise FixInputError(f"{path}: the file is read-only", hint="use --diff to see the fix")
        if not os.access(real.parent, os.W_OK | os.X_OK):
            raise FixInputError(f"{path}: its directory is not writable", hint="use --diff to see the fix")
    text, encoding, bom = decode(data, str(path))
    return SourceFile(real, normalize_newlines(text), encoding, dominant_newline(text), bom,
                      stat.S_IMODE(info.st_mode), hashlib.sha256(data).hexdigest())


def write_source(source: SourceFile, text: str) -> None:
    """Replace the file with `text` atomically, if and only if it is unchanged since it was read."""
    try:
        data = source.encode(text)
    except UnicodeEncodeError as exc:
        raise FixInputError(f"{source.path}: the fix cannot be written as {source.encoding}: {exc}") from None
    directory = source.path.parent
    try:
        handle, tmp_name = tempfile.mkstemp(prefix=f".{source.path.name}.", suffix=".codeasst-tmp", dir=directory)
    except OSError as exc:
        raise FixInputError(f"{source.path}: cannot write in {directory}: {exc.strerror}") from None
    tmp = Path(tmp_name)
    replaced = False
    try:
        with os.fdopen(handle, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, source.mode)
        # Checked last, just before the replace, to keep the window for a lost update small.
        try:
            current = source.path.read_bytes()
        except OSError as exc:
            raise FileChangedError(f"{source.path}: cannot be read any more ({exc.strerror}); nothing written") \
                from None
        if hashlib.sha256(current).hexdigest() != source.digest:
            raise FileChangedError(f"{source.path}: changed on disk while it was being fixed; nothing written",
                                   hint="run the fix again")
        os.replace(tmp, source.path)
        replaced = True
    finally:
        # Whatever stopped us, Ctrl-C included, no temporary copy stays beside the user's file.
        if not replaced:
            tmp.unlink(missing_ok=True)
    _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; not every platform can open a directory.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories; the data itself is already synced
    finally:
        os.close(fd)
