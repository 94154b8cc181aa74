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


import argparse  # noqa: E402


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the one error path: a bad argument raises UsageError (one line, exit 2) instead
    of printing the usage block and calling sys.exit; --help still prints the help and exits 0."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message}")
