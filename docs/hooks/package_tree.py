"""mkdocs hook: let mkdocstrings (griffe) read attnlab's sources as they install.

pyproject.toml maps the repository's top folders into one namespace (numerics/ installs as
attnlab.numerics, ...).  griffe reads sources without importing them and does not follow that mapping,
so this hook lays the installed tree out as links in a temporary folder and points the python handler
at it."""
from __future__ import annotations

import atexit
import shutil
import tempfile
import tomllib
from pathlib import Path

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[2]


@event_priority(100)             # before mkdocstrings reads its handlers' configuration
def on_config(config, **kwargs):
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    tmp = Path(tempfile.mkdtemp(prefix="attnlab-docs-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    for name, folder in sorted(mapping.items(), key=lambda kv: kv[0].count(".")):
        dest = tmp.joinpath(*name.split("."))
        if name.count(".") == 0:
            dest.mkdir(parents=True)
            for entry in (ROOT / folder).iterdir():
                if entry.suffix == ".py":
                    (dest / entry.name).symlink_to(entry)
        else:
            dest.symlink_to(ROOT / folder, target_is_directory=True)
    handlers = config.plugins["mkdocstrings"].config["handlers"]
    handlers.setdefault("python", {})["paths"] = [str(tmp)]
    return config

