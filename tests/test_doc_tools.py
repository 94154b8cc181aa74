"""The maintenance commands and the example at their edges: `python -m attnlab.docs` (--help runs nothing, an
unknown flag is one line and exit code 2, --check writes nothing and exits 1 on a stale tree, only changed
files are written, and outside a checkout it refuses), `python -m attnlab.mathtext` (exit code 1 while a
LaTeX form is stale) and examples/attention_layers.py (--steps checked; the mean predictor printed).

No test here writes the repository's own docs: the commands that could write run either on a temporary copy
(`root=`) with every write checked to land in it, or in a subprocess where any write raises."""
from __future__ import annotations

import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ("docs/claims.md", "docs/claims_vouching.md", "docs/results_verdicts.md", "docs/convergence.md",
             "README.md")

# Runs `python -m attnlab.docs ARGS` as the command line does (runpy, run_name "__main__"), with every way of
# writing a file refused: should the command write anything, it fails instead of touching the checkout.
_GUARDED = """
import os, runpy, sys
import attnlab.atomic_io as io

def refuse(*args, **kwargs):
    raise RuntimeError("test guard: python -m attnlab.docs tried to write " + repr(args[:1]))

io.atomic_write_text = io._atomic_replace = io._replace = refuse
os.replace = os.rename = refuse
runpy.run_module("attnlab.docs", run_name="__main__", alter_sys=True)
"""


def _run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _stamps(root: Path) -> dict[str, tuple[int, str]]:
    return {rel: ((root / rel).stat().st_mtime_ns, (root / rel).read_text(encoding="utf-8")) for rel in GENERATED}


@pytest.fixture
def docs_in(monkeypatch):
    """attnlab.docs with every write checked to land under the folder it is given; each generated block is
    computed once per test (the catalog and the records do not change within one)."""
    import functools

    import attnlab.docs as docs

    for name in ("render", "vouching_markdown", "registry_markdown", "status_markdown", "papers_markdown"):
        monkeypatch.setattr(docs, name, functools.cache(getattr(docs, name)))
    allowed = []
    real_write = docs.atomic_write_text

    def write(path, text):
        assert allowed and Path(path).resolve().is_relative_to(allowed[0].resolve()), (
            f"attnlab.docs wrote {path} outside the temporary copy")
        return real_write(path, text)

    monkeypatch.setattr(docs, "atomic_write_text", write)

    def bind(root: Path):
        allowed[:] = [root]
        return docs
    return bind


def _copy_checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    for rel in GENERATED:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, root / rel)
    return root


# --- python -m attnlab.docs ------------------------------------------------------------------------------

def test_docs_help_runs_nothing():
    before = _stamps(ROOT)
    res = _run(["-c", _GUARDED, "--help"])
    assert res.returncode == 0, res.stderr[-2000:]
    assert "usage: python -m attnlab.docs" in res.stdout and "--check" in res.stdout
    for rel in GENERATED:                       # the help names every file the command writes
        assert rel in " ".join(res.stdout.split()), rel
    assert _stamps(ROOT) == before


def test_docs_unknown_flag_is_one_line_exit_2():
    before = _stamps(ROOT)
    res = _run(["-c", _GUARDED, "--chek"])
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "--chek" in lines[0] and "python -m attnlab.docs" in lines[0], res.stderr
    assert _stamps(ROOT) == before


def test_docs_check_and_writing_only_what_changed(tmp_path, docs_in, capsys):
    root = _copy_checkout(tmp_path)
    docs = docs_in(root)
    assert docs.main([], root=root) == 0        # the copy brought up to date (the catalog may have moved on)
    current = _stamps(root)

    capsys.readouterr()
    assert docs.main(["--check"], root=root) == 0
    assert "current" in capsys.readouterr().out
    assert docs.main([], root=root) == 0        # nothing changed: nothing rewritten, not even a timestamp
    assert _stamps(root) == current

    # two files fall behind: --check names them (and only them), writes nothing and exits 1
    stale_claims = current["docs/claims.md"][1].replace("| ", "|  ", 1)
    (root / "docs/claims.md").write_text(stale_claims, encoding="utf-8")
    readme = current["README.md"][1]
    head, rest = readme.split(docs.BEGIN, 1)
    (root / "README.md").write_text(head + docs.BEGIN + "\nan old errata table\n" + docs.END
                                    + rest.split(docs.END, 1)[1], encoding="utf-8")
    stale = _stamps(root)
    capsys.readouterr()
    assert docs.main(["--check"], root=root) == 1
    out = capsys.readouterr().out
    assert "docs/claims.md" in out and "README.md" in out, out
    assert not any(rel in out for rel in GENERATED if rel not in ("docs/claims.md", "README.md")), out
    assert _stamps(root) == stale

    # regenerating rewrites those two and leaves the other three as they were
    assert docs.main([], root=root) == 0
    now = _stamps(root)
    assert now["docs/claims.md"][1] == current["docs/claims.md"][1]
    assert now["README.md"][1] == current["README.md"][1]
    for rel in ("docs/claims_vouching.md", "docs/results_verdicts.md", "docs/convergence.md"):
        assert now[rel] == current[rel], rel


def test_docs_broken_file_writes_nothing(tmp_path, docs_in):
    """A file without its markers is one UsageError naming it, before any file is written."""
    from attnlab.errors import UsageError

    root = _copy_checkout(tmp_path)
    docs = docs_in(root)
    (root / "docs/claims.md").write_text("stale\n", encoding="utf-8")
    conv = root / "docs/convergence.md"
    conv.write_text(conv.read_text(encoding="utf-8").replace(docs.STATUS_END, ""), encoding="utf-8")
    before = _stamps(root)
    with pytest.raises(UsageError, match="convergence.md") as exc:
        docs.main([], root=root)
    assert "\n" not in str(exc.value)
    assert _stamps(root) == before


def test_docs_refuses_outside_a_checkout(tmp_path):
    """Installed (not editable), the module sits in site-packages: no docs/ and no README.md beside it.  It
    refuses in one line, exit code 2, and creates nothing there (it had made site-packages/docs/claims.md,
    then failed with a traceback reading docs/results_verdicts.md)."""
    site = tmp_path / "site-packages"
    (site / "attnlab").mkdir(parents=True)
    shutil.copy2(ROOT / "attnlab" / "docs.py", site / "attnlab" / "docs.py")
    code = ("import runpy, sys; sys.argv = [sys.argv[0]]; "
            f"runpy.run_path({str(site / 'attnlab' / 'docs.py')!r}, run_name='__main__')")
    res = _run(["-c", code])
    assert res.returncode == 2, res.stderr[-2000:]
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "checkout" in lines[0] and str(site) in lines[0], res.stderr
    assert sorted(p.name for p in site.iterdir()) == ["attnlab"]
    assert sorted(p.name for p in (site / "attnlab").iterdir()) == ["docs.py"]


# --- python -m attnlab.mathtext ----------------------------------------------------------------------------

def _a_claim_with_a_form():
    import importlib

    from attnlab import catalog, mathtext

    for c in catalog.all_claims():
        if mathtext.claim_forms(c) is not None:
            return c, importlib.import_module(f"attnlab.theory.{c.paper}.latex")
    pytest.skip("no claim has a current LaTeX form")


def test_mathtext_exit_code_1_for_a_stale_form(monkeypatch, capsys):
    from attnlab import mathtext

    claim, module = _a_claim_with_a_form()
    monkeypatch.setitem(module.LATEX, claim.id, module.LATEX[claim.id]._replace(of="00000000"))
    assert mathtext.main([]) == 1
    out = capsys.readouterr().out
    assert claim.id in out and "stale" in out


def test_mathtext_exit_code_0_when_current_and_help(monkeypatch, capsys):
    from attnlab import mathtext
    from attnlab.cli import call

    monkeypatch.setattr(mathtext, "needing_forms", lambda: [])
    assert mathtext.main([]) == 0
    assert "every LaTeX form is current" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        mathtext.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m attnlab.mathtext") and "every LaTeX form" not in out
    assert call(mathtext.main, ["--bogus"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--bogus" in err[0]


# --- examples/attention_layers.py --------------------------------------------------------------------------

def test_example_refuses_bad_steps():
    res = _run([str(ROOT / "examples" / "attention_layers.py"), "--steps", "-3"])
    assert res.returncode == 2, (res.stdout, res.stderr[-2000:])
    assert res.stdout == ""                     # nothing trained, nothing printed as a result
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "--steps" in lines[0] and "at least 1" in lines[0] and "-3" in lines[0], res.stderr


@pytest.mark.parametrize("argv, flag", [(["--steps", "0"], "--steps"), (["--seed", "-1"], "--seed")])
def test_example_main_refuses_bad_arguments(argv, flag):
    from attnlab.errors import UsageError

    mod = runpy.run_path(str(ROOT / "examples" / "attention_layers.py"))
    with pytest.raises(UsageError, match=flag):
        mod["main"](argv)


def test_example_prints_the_mean_predictor(capsys):
    """The mean predictor's validation MSE is printed beside each model's: the Fenchel model's 1.4454 ->
    0.0854 read as learning where predicting the mean gets 0.0870."""
    mod = runpy.run_path(str(ROOT / "examples" / "attention_layers.py"))
    res = mod["main"](["--steps", "1"])
    _, yv = mod["validation"](0)
    assert res["mean_predictor"] == pytest.approx(float(yv.var(unbiased=False)), rel=1e-5)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2
    for line in lines:
        assert f"predicting the mean: {res['mean_predictor']:.4f}" in line, line
