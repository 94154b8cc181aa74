"""Atomic files and safe reading for attnlab's records, checkpoints and outputs.

- `check_writable` / `check_folder`: fail early, before any work, when a path the user named cannot be
  written (one UsageError line naming the argument);
- `read_json`: a record as JSON, or a one-line ValueError (not UTF-8, not JSON, nested too deeply, a number
  beyond float64, a key twice);
- `atomic_write_text` / `atomic_write_json` / `atomic_torch_save`: a temporary file in the same folder,
  then a rename, with the mode the umask gives new files; a write killed mid-way leaves the old file;
- `checked_torch_bytes`: a checkpoint's bytes, its SHA-256 (written by `atomic_torch_save`) verified.
"""
from __future__ import annotations

import json
import math
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Any



def _umask_mode() -> int:
    """The mode a new file gets from the process umask (mkstemp's files are 0600 whatever the umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def check_writable(path: str | os.PathLike, what: str) -> Path:
    """Fail early, before any work, when `path` cannot be written: UsageError naming the argument."""
    from attnlab.errors import UsageError

    if not str(path).strip():                   # Path("") is "." (the current folder): never meant
        raise UsageError(f"{what} is empty; give a file name")
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    probe = _check_names(path, what, file=True)
    if _special(path):                          # /dev/null, a named pipe: written through, not replaced
        if not os.access(path, os.W_OK):
            raise UsageError(f"{what} {path}: cannot write to it")
        return path
    if path.is_dir():
        raise UsageError(f"{what} {path}: is a folder; give a file name")
    if probe == path:                           # the file exists: its folder is what must be writable
        probe = folder
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: cannot write there ({probe} is not a writable folder)")
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"{what} {path}: the file exists and is not writable")
    # what access() cannot tell (/proc, a read-only mount, a process running as root): try, in the folder or,
    # when it is still to be made, in the existing folder it will be made in
    try:
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=".attnlab-probe.", suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot write there ({exc.strerror or exc})") from None
    return path


def _check_names(path: Path, what: str, file: bool = False) -> Path:
    """The nearest existing ancestor of `path` (itself when it exists), after checking that no name on
    the way down from it exceeds the file system's limit (NAME_MAX) or the whole path PATH_MAX (for a
    `file` to be written, its name together with the temporary name's TMP_EXTRA)."""
    from attnlab.errors import UsageError

    def exists(q: Path) -> bool:
        try:
            return q.exists() or q.is_symlink()
        except OSError:                         # a name too long for the file system
            return False

    probe = path
    while not exists(probe) and probe != probe.parent:
        probe = probe.parent
    base = probe if probe.is_dir() else probe.parent
    try:
        name_max = os.pathconf(base, "PC_NAME_MAX")
        path_max = os.pathconf(base, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        name_max, path_max = 255, 4096
    for i, part in enumerate(path.parts):
        if len(os.fsencode(part)) > name_max:
            raise UsageError(f"{what} {str(path)[:80]}...: the name {part[:20]}... is {len(os.fsencode(part))} "
                             f"bytes long, over the file system's limit of {name_max}")
        # a file is written through a temporary `.<name>.<8 characters>.tmp` beside it (_atomic_replace): a name
        # within TMP_EXTRA of the limit passed and failed after the work
        if (file and i == len(path.parts) - 1 and len(os.fsencode(part)) + TMP_EXTRA > name_max
                and not _special(path)):
            raise UsageError(f"{what} {str(path)[:80]}...: the name {part[:20]}... is {len(os.fsencode(part))} "
                             f"bytes long; written through a temporary name {TMP_EXTRA} bytes longer, it would be "
                             f"over the file system's limit of {name_max}: give at most {name_max - TMP_EXTRA}")
    if len(os.fsencode(str(path.absolute()))) >= path_max:
        raise UsageError(f"{what} {str(path)[:80]}...: the path is longer than the file system's limit "
                         f"of {path_max} bytes")
    return probe


def check_folder(path: str | os.PathLike, what: str, make: bool = False) -> Path:
    """Fail early, before any work, when the folder `path` (made if missing) cannot hold new files:
    UsageError naming the argument (a file there, a file on the way to it, a read-only folder, a name
    over the file system's limit)."""
    from attnlab.errors import UsageError

    if not str(path).strip():                   # Path("") is "." (the current folder): never meant
        raise UsageError(f"{what} is empty; give a folder")
    path = Path(path)
    probe = _check_names(path, what)
    if probe == path and not path.is_dir():
        raise UsageError(f"{what} {path}: is a file, not a folder")
    if not probe.is_dir():
        raise UsageError(f"{what} {path}: cannot make it ({probe} is a file, not a folder)")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: cannot write there ({probe} is not a writable folder)")
    if make:                                    # what access() cannot tell (/proc, a read-only mount)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"{what} {path}: cannot make it ({exc.strerror or exc})") from None
    return path


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"the number {text[:20]} is beyond float64")
    return x


def _float_range_int(text: str) -> int:
    if len(text.lstrip("-")) > 309:            # (int() of > 4300 digits raised Python's own hint about its limit)
        raise ValueError(f"the integer {text[:20]}... ({len(text)} digits) is beyond float64")
    x = int(text)
    if abs(x) > 1.7e308:
        raise ValueError(f"the integer {text[:20]}... ({len(text)} digits) is beyond float64")
    return x


def _unique_keys(pairs: list) -> dict:
    """A JSON object whose keys are unique ({"T": ..., "T": ...} kept the last one silently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"the key {twice[:40]!r} appears twice in one object")
    return out


def _no_constant(name: str):
    raise ValueError(f"it holds {name}, a number that is not finite (and not JSON)")


#: the largest JSON file read_json reads (the records are under 1 MiB, a verify --json under 2 MiB): a path such as
#: /dev/zero was read without end (10 GB of memory in 8 s, then a MemoryError traceback)
MAX_JSON_BYTES = 64 * 2 ** 20


def read_json(path: str | os.PathLike) -> Any:
    """The JSON value in the file at `path`, or ValueError with a one-line reason: unreadable, larger than
    MAX_JSON_BYTES, not UTF-8 text (a binary file), not JSON, nested too deeply, or holding a number float64
    cannot hold (NaN, Infinity, 1e400, 10**400)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_JSON_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_JSON_BYTES:
        raise ValueError(f"{path} is larger than {MAX_JSON_BYTES // 2 ** 20} MiB: not a JSON file of attnlab's")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text (a binary file?)") from None
    try:
        return json.loads(text, parse_float=_finite_float, parse_int=_float_range_int,
                          parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise ValueError(f"{path} is nested too deeply to be read") from None
    except ValueError as exc:
        raise ValueError(f"{path}: {str(exc).splitlines()[0]}") from None


def check_json_dest(dest: str | None, what: str = "--json") -> None:
    """A `--json FILE` destination ('-' is stdout, None is none) checked before any work; '' is refused
    (it was read as "none", and the command wrote nothing and exited 0)."""
    if dest is not None and dest != "-":
        check_writable(dest, what)


def write_json_dest(dest: str | None, obj: Any, what: str = "--json") -> None:
    """Write `obj` as JSON to a `--json FILE` destination (checked by check_json_dest), atomically; what the
    check could not foresee (a full disk) is a UsageError naming the option."""
    if dest is not None and dest != "-":
        from attnlab.errors import UsageError

        try:
            atomic_write_text(dest, json.dumps(obj, indent=2) + "\n")
        except UsageError as exc:               # (what the file system refused, naming the file)
            raise UsageError(f"{what}: {exc}") from None


def _remove_stale_temporaries(path: Path, older_than: float = 3600.0) -> None:
    """Remove the temporary files (``.<name>.<random>.tmp``) that writes of `path` killed mid-way left,
    once they are an hour old (no live write of one file takes that long)."""
    now = time.time()
    try:
        for tmp in path.parent.glob(f".{path.name}.*.tmp"):
            try:
                if now - tmp.stat().st_mtime > older_than:
                    tmp.unlink()
            except OSError:
                pass
    except OSError:
        pass


#: the bytes a temporary name ``.<name>.<8 characters>.tmp`` adds to the name it stands for
TMP_EXTRA = 1 + 1 + 8 + 4


def _special(path: Path) -> bool:
    """Whether `path` is an existing file that is not a regular one (a device such as /dev/null, a named pipe,
    a socket), followed through links: one to write into, not to replace."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _atomic_replace(path: str | os.PathLike, write) -> Path:
    """Write `path` by ``write(fd, tmp)`` into a temporary file in its folder, then rename it over `path`;
    the temporary file is removed when anything fails.  A link is followed (the file it names is replaced,
    the link kept); an existing file keeps its mode (a new one gets the mode the umask gives); a device or a
    named pipe (/dev/null, a FIFO) is written into, not replaced by a regular file.  What the file system
    refuses (a full disk, a read-only mount) is a UsageError naming the file, the old file left as it was."""
    from attnlab.errors import UsageError

    try:
        return _replace(Path(path), write)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc} (the file is left as it was)") from None


def _replace(path: Path, write) -> Path:
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    if _special(path):
        write(os.open(path, os.O_WRONLY), None)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(path)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = _umask_mode()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        write(fd, tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write `text` to `path` atomically (temporary file in the same folder, then rename), with the
    mode the umask gives new files."""
    def write(fd, tmp):
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            if tmp is not None:                 # (a device or a pipe: nothing to sync)
                os.fsync(fh.fileno())
    return _atomic_replace(path, write)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write `data` to `path` atomically, as :func:`atomic_write_text` writes text."""
    def write(fd, tmp):
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if tmp is not None:
                os.fsync(fh.fileno())
    return _atomic_replace(path, write)


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    from attnlab.catalog import jsonable

    return atomic_write_text(path, json.dumps(jsonable(obj), indent=2, sort_keys=False) + "\n")


CHECKPOINT_HEADER = b"attnlab checkpoint, sha256 of what follows the next line:\n"


def atomic_torch_save(path: str | os.PathLike, obj: Any) -> Path:
    """torch.save `obj` to `path` atomically (as atomic_write_text), after a header line and the SHA-256 of the
    saved bytes (:func:`checked_torch_bytes` verifies it: a damaged tensor byte loaded silently, and changed the
    numbers of the resumed run)."""
    import hashlib
    import io

    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    data = buf.getvalue()
    blob = CHECKPOINT_HEADER + hashlib.sha256(data).hexdigest().encode() + b"\n" + data

    def write(fd, tmp):
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            if tmp is not None:                 # (a device or a pipe: nothing to sync)
                os.fsync(fh.fileno())
    return _atomic_replace(path, write)


def checked_torch_bytes(path: str | os.PathLike) -> bytes:
    """The torch.save bytes of a file written by :func:`atomic_torch_save`, its SHA-256 verified (ValueError
    saying so when it does not match); a file without the header (written before it was added) as it is."""
    import hashlib

    # a device, pipe or socket is no checkpoint: /dev/zero was read until the process was killed for memory, and
    # a named pipe blocked the run for ever
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise ValueError("it is not a regular file (a device, a pipe or a socket)")
    data = Path(path).read_bytes()
    if not data.startswith(CHECKPOINT_HEADER):
        return data
    digest, _, payload = data[len(CHECKPOINT_HEADER):].partition(b"\n")
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        raise ValueError("its SHA-256 does not match the one written with it: the file was changed or damaged "
                         "after it was written")
    return payload
