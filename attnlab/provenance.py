"""What a record says about where its numbers came from: the git revision of the code (with -dirty for
uncommitted changes), the versions of the numerical packages, and the host's CPU with the instruction set
torch's kernels dispatch to (two machines with the same code and seed can train to different numbers:
a last-bit difference in a kernel grows over thousands of epochs).
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


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what the platform module says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host() -> dict:
    """The machine a run computed on: {"cpu": model name, "cpu_capability": the instruction set torch's CPU
    kernels dispatch to (e.g. AVX2, AVX512), "torch_threads": torch's intra-op threads}."""
    import torch

    return {"cpu": cpu_model(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch_threads": torch.get_num_threads()}
