"""Every command of the README's tour runs as printed (`python -m attnlab ...` in a fresh working
folder, reading the committed records).  The ones that train, need a GPU or run the whole catalog are
in the slow tier; every line of the tour must be classified here, so a new line cannot go untested.
Every other `attnlab` command shown in README.md and docs/*.md must name a real target and options it
accepts."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The tour's lines (after `attnlab`, comment removed) -> (tier, allowed exit codes).
# `data` exits 1 where a real data set is not installed (it says which), which is its documented answer.
TOUR = {
    "list": ("fast", {0}),
    "list --paper fenchel": ("fast", {0}),
    "verify": ("slow", {0}),
    "verify --paper kernel --tier all --json verdicts.json": ("slow", {0}),
    "verify --claim fenchel.thm1.strong-duality --json -": ("fast", {0}),
    "verify --jobs 2": ("slow", {0}),
    "compare fenchel --help": ("fast", {0}),
    "compare bidir-moe --heads 2 --layers 2": ("fast", {0}),
    "run kernel-time-warping --quick": ("slow", {0}),
    "run kernel-time-warping --seeds 10 --device cuda": ("gpu", {0}),
    "run kernel-time-warping --quick --setup authors": ("slow", {0}),
    "results efa": ("fast", {0}),
    "results efa --format latex": ("fast", {0}),
    "figures --paper fenchel": ("fast", {0}),
    "figures --check": ("fast", {0}),       # against the committed PNGs; writes nothing
    "report --out report": ("slow", {0}),
    "data": ("fast", {0, 1}),
}


def tour_lines() -> list[str]:
    """The commands of the README's `## A tour` code block, without `attnlab` and comments."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## A tour\s+```bash\n(.*?)```", text, re.S)
    assert block, "README.md has no '## A tour' bash block"
    lines = []
    for line in block.group(1).splitlines():
        cmd = re.split(r"\s+#", line, maxsplit=1)[0].strip()
        if cmd:
            assert cmd.startswith("attnlab "), cmd
            lines.append(cmd[len("attnlab "):])
    return lines


def test_every_tour_line_is_classified():
    lines = tour_lines()
    assert set(lines) == set(TOUR), (f"README tour lines not classified here: {sorted(set(lines) - set(TOUR))}; "
                                     f"classified but gone from the README: {sorted(set(TOUR) - set(lines))}")


def _params():
    out = []
    for line, (tier, codes) in TOUR.items():
        marks = [pytest.mark.slow] if tier in ("slow", "gpu") else []
        out.append(pytest.param(line, tier, codes, id=line, marks=marks))
    return out


@pytest.mark.parametrize("line,tier,codes", _params())
def test_tour_line_runs_as_printed(line, tier, codes, tmp_path):
    if tier == "gpu":
        import torch

        if not torch.cuda.is_available():
            pytest.skip("needs a CUDA GPU")
    argv = shlex.split(line)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    if argv[0] == "run":
        env["ATTNLAB_RESULTS"] = str(tmp_path / "results")      # new records go to the temporary folder
    else:
        env["ATTNLAB_RESULTS"] = str(ROOT / "results")          # read the committed records
    check = argv[0] == "figures" and "--check" in argv
    if argv[0] == "figures":                                    # keep the committed PNGs as they are
        argv += ["--out", str(ROOT / "paper_figures" if check else tmp_path / "figures")]
    proc = subprocess.run([sys.executable, "-m", "attnlab", *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=3600)
    if check:                       # the committed figures are current (tests/test_figures_current.py says what that is)
        stale = [x for x in proc.stdout.splitlines() if not x.startswith("current")]
        assert proc.returncode == 0 and not stale, (
            "figures that differ from what the committed records and the library give (redraw them with `attnlab "
            "figures`):\n" + "\n".join(stale) + "\n" + proc.stderr[-2000:])
        assert proc.stdout.count("current") == len(list((ROOT / "paper_figures").glob("*.png"))) >= 25
    assert proc.returncode in codes, (f"`attnlab {line}` exited {proc.returncode}:\n"
                                      + (proc.stderr or proc.stdout)[-2000:])
    assert proc.stdout.strip(), f"`attnlab {line}` printed nothing"
    if check:                       # one line per figure, and nothing written
        assert all(line.split()[0] in ("current", "stale", "missing", "unreadable", "no") for line in proc.stdout.splitlines())
        assert not any(tmp_path.iterdir())
    elif argv[0] == "figures":      # each figure it names was written, drawn from the committed records alone
        written = [tmp_path / p for p in proc.stdout.split()]
        assert written and all(p.suffix == ".png" and p.stat().st_size > 10_000 for p in written), written


def documented_commands() -> list[tuple[str, str]]:
    """(file, command) for every `attnlab ...` line in a code block of README.md and docs/*.md,
    optional `[...]` groups dropped."""
    out = []
    files = [ROOT / "README.md"] + sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "claims.md")
    for f in files:
        for block in re.findall(r"```(?:bash|sh|console)?\n(.*?)```", f.read_text(encoding="utf-8"), re.S):
            for line in block.splitlines():
                cmd = re.split(r"\s+#", line, maxsplit=1)[0].strip()
                if cmd.startswith("attnlab "):
                    out.append((f.name, re.sub(r"\s*\[[^\]]*\]", "", cmd)))
    return out


def _help_text(capsys, argv) -> str:
    from attnlab.cli import main

    try:
        main(argv)
    except SystemExit:
        pass
    return capsys.readouterr().out


def test_every_documented_command_is_accepted(capsys):
    """Each command shown in the docs names a real subcommand and target, and every option it uses is
    one that target accepts (checked against its --help; nothing is run)."""
    from attnlab.cli import _build_parser
    from attnlab.registry import COMPARE, RUN

    cmds = documented_commands()
    assert len(cmds) >= len(TOUR)
    bad = []
    for name, cmd in cmds:
        argv = shlex.split(cmd)[1:]
        if argv[0] in ("run", "compare"):
            table = RUN if argv[0] == "run" else COMPARE
            if len(argv) < 2 or argv[1] not in table:
                bad.append(f"{name}: `{cmd}`: unknown {argv[0]} target")
                continue
            helptext = _help_text(capsys, [argv[0], argv[1], "--help"])
            for opt in (a.split("=")[0] for a in argv[2:] if a.startswith("--")):
                if opt != "--help" and opt not in helptext:
                    bad.append(f"{name}: `{cmd}`: {opt} is not an option of `attnlab {argv[0]} {argv[1]}`")
        else:
            try:
                _build_parser().parse_args(argv)
            except (SystemExit, Exception) as exc:      # argparse errors are UsageError here
                bad.append(f"{name}: `{cmd}`: {exc}")
    assert not bad, "\n".join(bad)
