"""Helpers shared by the bidirectional-attention runners (tabular-sim, auto-mpg, analogies)."""
from __future__ import annotations

import sys
import time

from attnlab.experiment import RunContext, context, contexts


def add_config_flag(p, extra=("reduced",), notes: str = "reduced = a named smaller one for a 2-core CPU") -> None:
    """--config: 'full' (the paper's config) or a named other config; --quick (the quick config) is refused
    beside it."""
    p.add_argument("--config", default="full", choices=("full",) + tuple(extra),
                   help=f"full = the paper's configuration; {notes} (a named config is recorded under "
                        "results/<experiment>/<config>/); --quick is the quick config (not combined with --config)")


def config_name(args) -> str:
    return "quick" if args.quick else args.config


def run_contexts(args, experiment: str, config: dict, tag: str = "", substitute: str | None = None):
    """`attnlab.experiment.contexts`, with records of a named non-paper config (e.g. 'reduced') kept
    in their own folder so they are never summarised as the paper's full config."""
    yield from contexts(args, experiment, config, tag=tag, substitute=substitute, config_name=_folder(args))


def run_context(args, experiment: str, config: dict, seed: int, tag: str = "",
                device: str | None = None, substitute: str | None = None, folder: str | None = None) -> RunContext:
    """The RunContext of one seed, its records kept apart as in :func:`run_contexts`; `folder` names the
    records folder where a flag changed the config (attnlab.run_args.overridden_folder)."""
    return context(args, experiment, config, seed, tag, substitute, folder or _folder(args), device=device)


def _folder(args) -> str | None:
    """The records folder of a named non-paper config; None for quick and full (the default folders)."""
    name = config_name(args)
    return None if name in ("quick", "full") else name


def log(args, msg: str) -> None:
    if not getattr(args, "quiet", False):
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


__all__ = ["add_config_flag", "config_name", "run_context", "run_contexts", "log", "RunContext"]
