"""attnlab.verdict_cache: `attnlab verify` keeps its records under a key of the tree and environment, and
tests/test_claims.py reuses them only under the same key."""
from __future__ import annotations

import pytest

from attnlab import catalog, verdict_cache
from attnlab.cli import main


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("ATTNLAB_RUN_CLAIMS", raising=False)
    return tmp_path / "attnlab" / "verdicts"


def test_verify_keeps_its_records_under_the_key_of_the_tree(store, capsys):
    assert main(["verify", "--claim", "efa.thm2.erm-decomposition"]) == 0
    kept = verdict_cache.load()
    assert kept is not None and kept["efa.thm2.erm-decomposition"]["verdict"] == "holds"
    assert [p.name for p in store.iterdir()] == [f"{verdict_cache.key()}.json"]
    # a second run of another claim merges into the same store
    assert main(["verify", "--claim", "bidir.app-f.question-counts"]) == 0
    assert set(verdict_cache.load()) == {"efa.thm2.erm-decomposition", "bidir.app-f.question-counts"}


def test_the_key_changes_with_the_blas_kernel_the_records_and_the_source(store, monkeypatch, tmp_path):
    import os

    before = os.environ.get("OPENBLAS_CORETYPE")          # the suite itself may run under a chosen kernel
    k = verdict_cache.key()
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Sandybridge" if before == "Haswell" else "Haswell")
    assert verdict_cache.key() != k
    if before is None:
        monkeypatch.delenv("OPENBLAS_CORETYPE")
    else:
        monkeypatch.setenv("OPENBLAS_CORETYPE", before)
    assert verdict_cache.key() == k
    records = tmp_path / "records"
    (records / "x").mkdir(parents=True)
    (records / "x" / "r.json").write_text("{}")
    monkeypatch.setenv("ATTNLAB_RESULTS", str(records))
    k_records = verdict_cache.key()
    assert k_records != k
    (records / "x" / "r.json").write_text('{"seed": 1}')
    assert verdict_cache.key() != k_records
    monkeypatch.delenv("ATTNLAB_RESULTS")
    src = tmp_path / "pkg"
    src.mkdir()
    (src / "m.py").write_text("x = 1\n")
    monkeypatch.setattr(verdict_cache, "_source_roots", lambda: [src])
    k_src = verdict_cache.key()
    (src / "m.py").write_text("x = 2\n")
    assert verdict_cache.key() != k_src


def test_the_key_changes_with_an_installed_distribution(monkeypatch, tmp_path):
    """The distributions are read from the names of their metadata folders (a dist-info's name carries its
    version, an egg-info's PKG-INFO does): a new version, a new package or an egg-info's version changes the key;
    the same distribution as dist-info and as egg-info is listed once."""
    import sys

    site = tmp_path / "site"
    (site / "foo_bar-1.0.dist-info").mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [str(site)] + sys.path)
    assert "foo_bar==1.0" in verdict_cache._distributions()
    k = verdict_cache.key()
    (site / "foo_bar-1.0.dist-info").rename(site / "foo_bar-1.1.dist-info")
    assert verdict_cache.key() != k and "foo_bar==1.1" in verdict_cache._distributions()
    egg = tmp_path / "repo" / "Foo_Bar.egg-info"
    egg.mkdir(parents=True)
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: Foo-Bar\nVersion: 1.1\n")
    monkeypatch.setattr(sys, "path", [str(site), str(tmp_path / "repo"), str(tmp_path / "gone")])
    assert verdict_cache._distributions() == ["foo_bar==1.1"]
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: Foo-Bar\nVersion: 1.2\n")
    assert verdict_cache._distributions() == ["foo_bar==1.1", "foo_bar==1.2"]


def test_the_suite_judges_a_claim_on_the_kept_record(store):
    """A kept record whose verdict is not the expected one fails the claim's test: the suite reads the kept
    record, it does not take a kept record on trust."""
    from tests.test_claims import judge

    c = catalog.get_claim("efa.thm2.erm-decomposition")
    rec = catalog.run_claim(c).to_json()
    judge(c, rec)
    with pytest.raises(AssertionError, match="last attnlab verify"):
        judge(c, dict(rec, verdict="fails"))


def test_attnlab_run_claims_ignores_the_store(store, monkeypatch):
    verdict_cache.store([catalog.run_claim(catalog.get_claim("efa.thm2.erm-decomposition"))])
    assert verdict_cache.load() is not None
    monkeypatch.setenv("ATTNLAB_RUN_CLAIMS", "1")
    assert verdict_cache.load() is None


def test_an_unwritable_store_is_ignored(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))            # a file where the folder would go
    verdict_cache.store([catalog.run_claim(catalog.get_claim("efa.thm2.erm-decomposition"))])
    assert verdict_cache.load() is None


def test_the_store_keeps_the_last_trees_only(store, monkeypatch):
    rec = [catalog.run_claim(catalog.get_claim("efa.thm2.erm-decomposition"))]
    for k in range(verdict_cache.KEEP + 3):
        verdict_cache.store(rec, f"{k:064x}")
    assert len(list(store.glob("*.json"))) == verdict_cache.KEEP
    assert (store / f"{verdict_cache.KEEP + 2:064x}.json").exists()


def test_the_suite_computes_the_key_verify_computes(monkeypatch):
    """pytest puts the repository root on sys.path (so attnlab.egg-info there lists attnlab a second time):
    the key must not see it, or the suite never finds the records of the verify just run."""
    import subprocess
    import sys
    from pathlib import Path

    monkeypatch.delenv("ATTNLAB_RUN_CLAIMS", raising=False)
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-I", "-c", "from attnlab import verdict_cache; print(verdict_cache.key())"],
                         cwd=root, capture_output=True, text=True, check=True,
                         env={k: v for k, v in __import__("os").environ.items() if not k.startswith("PYTEST")})
    monkeypatch.chdir(root)
    assert out.stdout.strip() == verdict_cache.key()


def test_the_key_passes_over_records_that_are_no_regular_files(monkeypatch, tmp_path):
    """A dangling link or a folder named *.json among the records was a traceback from the key, which `verify`
    takes before its first claim, and a FIFO hung it (outside review); the readers skip them, saying so.  They
    count in the key by name, unread."""
    import os
    import threading

    records = tmp_path / "records" / "efa-synthetic" / "full"
    records.mkdir(parents=True)
    (records / "seed0.json").write_text("{}")
    monkeypatch.setenv("ATTNLAB_RESULTS", str(tmp_path / "records"))
    k = verdict_cache.key()
    (records / "gone.json").symlink_to(tmp_path / "nowhere.json")
    (records / "loop.json").mkdir()
    os.mkfifo(records / "pipe.json")
    got = []
    t = threading.Thread(target=lambda: got.append(verdict_cache.key()), daemon=True)
    t.start()
    t.join(30)
    assert got and got[0] != k, "the key hung on a FIFO or raised"


def test_verify_names_and_fingerprints_the_records_it_judges(tmp_path, monkeypatch, capsys):
    """verify judges the committed records (or $ATTNLAB_RESULTS), but named and fingerprinted ./results where the
    working directory had one (what `results` and `report` read): `report --verdicts` then took verdicts judged on
    other records than its tables (outside review)."""
    import json

    from attnlab.evidence import committed_records
    from attnlab.results import records_fingerprint

    monkeypatch.delenv("ATTNLAB_RESULTS", raising=False)
    (tmp_path / "results" / "efa-synthetic" / "full").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert main(["verify", "--claim", "efa.results.synthetic-unidirectional", "--json", "v.json"]) == 0
    (rec,) = json.loads((tmp_path / "v.json").read_text())
    assert rec["records_fingerprint"] == records_fingerprint(committed_records())
    assert rec["records_fingerprint"] != records_fingerprint(tmp_path / "results")
