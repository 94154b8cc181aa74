"""Helpers shared by the bidirectional-attention runners (tabular-sim, auto-mpg, analogies)."""
from __future__ import annotations

import sys
import time

from attnlab.experiment import RunContext, contexts, results_root, runs_root


def add_config_flag(p, extra=("reduced",)) -> None:
    """--config: 'full' (the paper's config) or a named reduced config; --quick overrides both."""
    p.add_argument("--config", default="full", choices=("full",) + tuple(extra),
                   help="full = the paper's configuration; reduced = a named smaller one for a 2-core CPU "
                        "(recorded under results/<experiment>/reduced/); --quick takes precedence")


def config_name(args) -> str:
    return "quick" if args.quick else args.config


def run_contexts(args, experiment: str, config: dict, tag: str = "", substitute: str | None = None):
    """`attnlab.experiment.contexts`, with records of a named non-paper config (e.g. 'reduced') kept
    in their own folder so they are never summarised as the paper's full config."""
    name = config_name(args)
    for ctx in contexts(args, experiment, config, tag=tag, substitute=substitute):
        if name not in ("quick", "full"):
            ctx.config_name = name
            stem = ctx.record_path.name
            ctx.record_path = results_root(args) / experiment / name / stem
            ctx.checkpoint_path = runs_root() / experiment / name / (stem[:-5] + ".ckpt")
        yield ctx


def log(args, msg: str) -> None:
    if not getattr(args, "quiet", False):
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


__all__ = ["add_config_flag", "config_name", "run_contexts", "log", "RunContext"]
