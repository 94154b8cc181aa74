"""The verdicts of the last ``attnlab verify`` of this very tree, for the test suite.

``tests/test_claims.py`` runs every claim against its expected verdict, as ``attnlab verify`` does; run
one after the other (CI's set-up ends with ``attnlab verify``, its test command is pytest) the claims
would run twice.  ``attnlab verify`` therefore keeps each claim's record under a key that names
everything a verdict can read, and the test takes a claim's record from there when the key matches --
otherwise it runs the claim itself.  The key is a SHA-256 of:

- the source of every attnlab module (the package and its sub-packages attnlab.theory, .numerics,
  .experiments, .paper_figures), by relative path and content;
- the results records the results claims read (:func:`attnlab.evidence.results_root`), by content;
- the files of every folder the data layer would read a data set from (relative path and size; their
  content is pinned by checksums in the source);
- the installed distributions and their versions (numerical libraries, optional extras such as the
  pretrained weights), the Python version and the machine;
- the environment variables that choose a kernel or a location: ``ATTNLAB_*``, ``OPENBLAS_*``, ``MKL_*``,
  ``OMP_*``, ``GOTO*``, ``VECLIB*``.

A run under ``OPENBLAS_CORETYPE=Haswell`` has another key than one without it, so each BLAS kernel's
verdicts come from a run on that kernel.  The store lives in ``$XDG_CACHE_HOME/attnlab/verdicts`` (else
``~/.cache``; the last eight trees), is written atomically, and is an optimisation only: a store that cannot be written or
read is ignored.  ``ATTNLAB_RUN_CLAIMS=1`` makes the test suite run every claim regardless.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import stat
import sys
from pathlib import Path

KEEP = 8
_ENV_PREFIXES = ("ATTNLAB_", "OPENBLAS_", "MKL_", "OMP_", "GOTO", "VECLIB")
_PACKAGES = ("attnlab", "attnlab.theory", "attnlab.numerics", "attnlab.experiments", "attnlab.paper_figures")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "attnlab" / "verdicts"


def _source_roots() -> list[Path]:
    import importlib

    roots = []
    for name in _PACKAGES:
        for p in importlib.import_module(name).__path__:
            roots.append(Path(p).resolve())
    return sorted(set(roots))


def _data_roots() -> list[Path]:
    """Every folder the data layer would look in for a data set (its own search order, experiments.data)."""
    from attnlab.experiments.data import DATASETS, _candidates

    return list(dict.fromkeys(folder for ds in DATASETS.values() for _, folder in _candidates(ds, None)))


def _distributions() -> list[str]:
    """The installed distributions as ``name==version``, read from the names of their metadata folders on
    sys.path (``numpy-2.4.6.dist-info``; an ``.egg-info`` names no version, so it comes from its ``Version:``
    line): listing folders takes a millisecond where importlib.metadata parses every METADATA file (~0.1 s for
    a hundred distributions, twice per verify).  A set of normalised names: run from the repository (pytest
    puts its root on sys.path), attnlab.egg-info there names the attnlab installed in site-packages again."""
    out = set()
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                found = [e for e in it if e.name.endswith((".dist-info", ".egg-info"))]
        except OSError:                                 # (a zip file, a folder that is gone)
            continue
        for e in found:
            stem, _, version = e.name.rsplit(".", 1)[0].partition("-")
            if e.name.endswith(".egg-info"):
                info = Path(e.path) / "PKG-INFO" if e.is_dir() else Path(e.path)
                try:
                    lines = info.read_text(encoding="utf-8", errors="replace").splitlines()
                except OSError:
                    lines = []
                version = next((x.split(":", 1)[1].strip() for x in lines if x.startswith("Version:")), "")
            else:
                version = version.partition("-")[0]
            out.add(f"{re.sub(r'[-_.]+', '_', stem).lower()}=={version}")
    return sorted(out)


def key() -> str:
    """The key of this tree and environment (see the module docstring)."""
    from attnlab.evidence import results_root

    h = hashlib.sha256()

    def add(label: str, data: bytes = b"") -> None:
        h.update(len(label).to_bytes(4, "little") + label.encode() + len(data).to_bytes(8, "little") + data)

    for root in _source_roots():
        add(f"package {root.name}")
        for f in sorted(root.rglob("*.py")):
            add(str(f.relative_to(root)), f.read_bytes())
    records = results_root()
    add("records", str(records.is_dir()).encode())
    if records.is_dir():
        for f in sorted(records.rglob("*.json")):
            # only regular files are read (the readers skip the rest, saying so): a dangling link or a folder named
            # *.json was a traceback here, and a FIFO hung verify before its first claim
            try:
                data = f.read_bytes() if stat.S_ISREG(f.stat().st_mode) else b"not a regular file"
            except OSError:
                data = b"unreadable"
            add(str(f.relative_to(records)), data)
    for root in _data_roots():
        add(f"data {root}", str(root.is_dir()).encode())
        if root.is_dir():
            for f in sorted(p for p in root.rglob("*") if p.is_file()):
                add(str(f.relative_to(root)), str(f.stat().st_size).encode())
    add("distributions", "\n".join(_distributions()).encode())
    add("python", f"{sys.version} {platform.machine()} {platform.system()}".encode())
    env = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES))
    add("environment", "\n".join(env).encode())
    return h.hexdigest()


def store(records, tree_key: str | None = None) -> None:
    """Keep the records (attnlab.catalog.Record) of one verify run under the tree's key, merged with those
    an earlier run of the same key kept.  Nothing happens when the store cannot be written."""
    try:
        tree_key = tree_key or key()
        path = cache_dir() / f"{tree_key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = load(tree_key) or {}
        kept.update({r.claim.id: r.to_json() for r in records})
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(kept), encoding="utf-8")
        os.replace(tmp, path)
        others = sorted((p for p in path.parent.glob("*.json") if p != path), key=lambda p: p.stat().st_mtime_ns)
        for old in others[:max(0, len(others) - (KEEP - 1))]:
            old.unlink(missing_ok=True)             # the store keeps the last KEEP trees only
    except (OSError, TypeError, ValueError):
        return


def last_seconds() -> dict[str, float]:
    """{claim id: seconds} of each claim's latest kept run, over every kept tree: an estimate of what a claim
    costs, for scheduling only (`verify --jobs` starts the costly ones first); verdicts never read it."""
    out: dict[str, float] = {}
    try:
        files = sorted(cache_dir().glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
    except OSError:
        return out
    for path in files:                                  # oldest first: a later run overwrites
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out.update({cid: float(r["seconds"]) for cid, r in data.items()
                        if isinstance(r, dict) and isinstance(r.get("seconds"), (int, float))})
    return out


def load(tree_key: str | None = None) -> dict[str, dict] | None:
    """{claim id: record as JSON} kept for this tree's key, or None (no run of this tree, unreadable, or
    ATTNLAB_RUN_CLAIMS set)."""
    if os.environ.get("ATTNLAB_RUN_CLAIMS"):
        return None
    try:
        path = cache_dir() / f"{tree_key or key()}.json"
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
