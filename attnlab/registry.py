"""Where each command-line target lives, as 'module:function' strings (imported only when used).

Every target function takes the remaining command-line arguments (a list of str) and returns an
exit code.  A target whose module is not there yet is reported as unavailable, exit 2.
"""
from __future__ import annotations

# attnlab compare NAME ...
COMPARE = {
    "fenchel": "attnlab.theory.fenchel.compare:main",
    "efa-fm": "attnlab.theory.efa.compare:main",
    "bidir-moe": "attnlab.theory.bidir.compare:main",
    "kernel-quadrature": "attnlab.theory.kernel.compare:main",
}

# attnlab run NAME ...
RUN = {
    "efa-synthetic": "attnlab.experiments.efa.synthetic:main",
    "efa-movielens-sequences": "attnlab.experiments.efa.movielens_sequences:main",
    "efa-movielens-ratings": "attnlab.experiments.efa.movielens_ratings:main",
    "efa-instacart": "attnlab.experiments.efa.instacart:main",
    "efa-temperature": "attnlab.experiments.efa.temperature:main",
    "bidir-tabular-sim": "attnlab.experiments.bidir.tabular_sim:main",
    "bidir-auto-mpg": "attnlab.experiments.bidir.auto_mpg:main",
    "bidir-analogies": "attnlab.experiments.bidir.analogies:main",
    "bidir-toy-corpus": "attnlab.experiments.bidir.toy_corpus:main",
    "kernel-time-warping": "attnlab.experiments.kernel.time_warping:main",
    "kernel-forda": "attnlab.experiments.kernel.forda:main",
    "kernel-gestures": "attnlab.experiments.kernel.gestures:main",
    "kernel-sentiment": "attnlab.experiments.kernel.sentiment:main",
    "kernel-ecg": "attnlab.experiments.kernel.ecg:main",
    "kernel-cost": "attnlab.experiments.kernel.cost:main",
    "fenchel-deviation": "attnlab.experiments.fenchel.deviation:main",
    "fenchel-ot-vit": "attnlab.experiments.fenchel.ot_vit:main",
}

# attnlab figures [--paper P]: modules with FIGURES = {name: render(outdir) -> [paths]}; per paper
# one for the theory figures and one for the experiments' figures.
FIGURES = {p: [f"attnlab.paper_figures.{p}", f"attnlab.paper_figures.{p}_experiments"]
           for p in ("efa", "bidir", "fenchel", "kernel")}
