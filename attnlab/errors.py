"""The one error path of the command line.

Every expected failure -- a bad argument or instance, a data error, an OS error on a path the user
named, a solver that cannot give a trustworthy answer -- is raised as (or mapped to) a
:class:`UsageError` whose message names the input and what is allowed.  ``attnlab.cli.main`` prints
it as one line, ``attnlab: error: <message>``, and exits with code 2; nothing else in the package
prints errors or calls ``sys.exit`` for them.
"""
from __future__ import annotations


class UsageError(ValueError):
    """Bad input: one line to stderr, exit code 2."""


class Diverged(UsageError):
    """A training run whose loss left the finite numbers (a learning rate too large for the model, as a
    rule): one line naming the model and the epoch, exit code 2; the records written before it stay."""


import argparse  # noqa: E402


class _StoreOnce(argparse._StoreAction):
    """argparse's default `store`, except that an option given twice with different values is refused
    (``--seed 1 --seed 2`` ran seed 2 only; ``--claim a --claim b`` ran b only): the same value twice is
    harmless and allowed."""

    def __call__(self, parser, namespace, values, option_string=None):
        seen = getattr(parser, "_attnlab_seen", None)
        if seen is not None and option_string is not None:
            if self.dest in seen and seen[self.dest][1] != values:
                first, value = seen[self.dest]
                shown = lambda v: " ".join(map(str, v)) if isinstance(v, list) else str(v)  # noqa: E731
                raise UsageError(f"{parser.prog}: {option_string} given twice ({first} {shown(value)[:60]}, "
                                 f"{option_string} {shown(values)[:60]}); give it once")
            seen[self.dest] = (option_string, values)
        super().__call__(parser, namespace, values, option_string)


def strict_int(text) -> int:
    """int(text) of ASCII digits with an optional leading '-' (surrounding blanks allowed); ValueError
    otherwise ('1_0', '٣', '²', '+3', '1e3').  argparse names it `int` in its messages."""
    t = str(text).strip()
    body = t[1:] if t.startswith("-") else t
    if not (body and body.isascii() and body.isdigit()):
        raise ValueError(text)
    return int(t)


strict_int.__name__ = "int"


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the one error path: a bad argument raises UsageError (one line, exit 2) instead
    of printing the usage block and calling sys.exit; --help still prints the help and exits 0.  An
    option given twice with different values is refused rather than the last one silently winning."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def add_argument(self, *args, **kwargs):
        # `type=int` reads ASCII digits only: int() also took '1_0' as 10 and Arabic-Indic or superscript digits
        if kwargs.get("type") is int:
            kwargs["type"] = strict_int
        return super().add_argument(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        previous, self._attnlab_seen = getattr(self, "_attnlab_seen", None), {}
        try:
            return super().parse_known_args(args, namespace)
        finally:
            self._attnlab_seen = previous

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message}")
