"""One namespace: the repository's folders install as attnlab.theory, attnlab.numerics,
attnlab.experiments and attnlab.paper_figures, and nothing else lands at the top level."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("theory", "numerics", "experiments", "paper_figures")


def test_package_list_matches_the_folders():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    on_disk = {"attnlab"} | {"attnlab." + ".".join(init.parent.relative_to(ROOT).parts)
                             for top in FOLDERS for init in (ROOT / top).rglob("__init__.py")}
    # plus the committed results records, shipped as data (attnlab.records = results/, JSON only)
    assert listed == on_disk | {"attnlab.records"}
    assert cfg["package-dir"] == {"attnlab": "attnlab", **{f"attnlab.{t}": t for t in FOLDERS},
                                  "attnlab.records": "results"}
    assert cfg["package-data"]["attnlab.records"] == ["*/*/*.json"]


def _python(code: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def test_installed_namespace_from_outside_the_repository(tmp_path):
    """The installed package (editable here) from a folder that has its own `experiments/`."""
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "__init__.py").write_text("MINE = True\n")
    r = _python("import attnlab.theory.kernel.compare, attnlab.numerics.quadrature, "
                "attnlab.experiments.data, attnlab.paper_figures, experiments; "
                "assert experiments.MINE; from attnlab import catalog; print(len(catalog.all_claims()))",
                tmp_path)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.split()[-1]) > 100
    shutil.rmtree(tmp_path / "experiments")        # (with the __pycache__ the import wrote, where Python writes one)
    for name in FOLDERS:
        r = _python(f"import {name}", tmp_path)
        assert r.returncode != 0 and "No module named" in r.stderr, name


@pytest.mark.slow
def test_wheel_holds_only_attnlab(tmp_path):
    """A regular (non-editable) install: build the wheel, check its top-level names, import from it."""
    src = tmp_path / "src"                  # build from a copy of the tracked files: no build/ in the tree
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for f in files.split():
        if (ROOT / f).is_file():
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, src / f)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(src)],
                   check=True, capture_output=True, timeout=600)
    wheel = next(tmp_path.glob("attnlab-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        tops = {n.split("/")[0] for n in z.namelist()}
        z.extractall(tmp_path / "site")
    assert {t for t in tops if not t.endswith(".dist-info")} == {"attnlab"}
    r = _python("import attnlab.theory.efa.compare, attnlab.experiments.efa.common; from attnlab import catalog; "
                "import attnlab.theory as t; print(t.__file__); print(len(catalog.all_claims()))", tmp_path,
                env={"PYTHONPATH": str(tmp_path / "site")})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0].startswith(str(tmp_path / "site"))
    # the committed records ship with it: outside the repository an empirical claim gets the repository's verdict
    assert sum(n.startswith("attnlab/records/") and n.endswith(".json") for n in z.namelist()) == \
        len(list((ROOT / "results").glob("*/*/*.json")))
    code = ("from attnlab import catalog, evidence; print(evidence.committed_records()); "
            "c = catalog.get_claim('kernel.results.ecg'); r = catalog.run_claim(c); print(r.verdict, r.ok)")
    r = _python(code, tmp_path, env={"PYTHONPATH": str(tmp_path / "site"), "ATTNLAB_RESULTS": ""})
    assert r.returncode == 0, r.stderr
    where, verdict, ok = r.stdout.split()
    assert where.startswith(str(tmp_path / "site")) and verdict == "inconclusive" and ok == "True"
