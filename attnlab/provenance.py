"""What a record says about where its numbers came from: the git revision of the code (with -dirty for
uncommitted changes) and the versions of the numerical packages.
"""
from __future__ import annotations

import platform
import subprocess
from pathlib import Path
from typing import Iterable



def git_revision() -> str | None:
    here = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=5)
        if out.returncode != 0:
            return None
        rev = out.stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def package_versions(names: Iterable[str] = ("numpy", "scipy", "torch", "cvxpy", "sympy", "mpmath",
                                               "scikit-learn", "pandas")) -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for n in names:
        try:
            out[n] = version(n)
        except PackageNotFoundError:
            pass
    return out
