"""Where each command-line target lives, as 'module:function' strings (imported only when used).

Every target function takes the remaining command-line arguments (a list of str) and returns an
exit code.  A target whose module is not there yet is reported as unavailable, exit 2.
"""
from __future__ import annotations

# attnlab compare NAME ...
COMPARE = {
    "fenchel": "theory.fenchel_compare:main",
    "efa-fm": "theory.efa_compare:main",
    "bidir-moe": "theory.bidir_compare:main",
    "kernel-quadrature": "theory.kernel_compare:main",
}

# attnlab run NAME ...
RUN = {
    "efa-synthetic": "experiments.efa.synthetic:main",
    "efa-movielens-sequences": "experiments.efa.movielens_sequences:main",
    "efa-movielens-ratings": "experiments.efa.movielens_ratings:main",
    "efa-instacart": "experiments.efa.instacart:main",
    "efa-temperature": "experiments.efa.temperature:main",
    "bidir-tabular-sim": "experiments.bidir.tabular_sim:main",
    "bidir-auto-mpg": "experiments.bidir.auto_mpg:main",
    "bidir-analogies": "experiments.bidir.analogies:main",
    "bidir-toy-corpus": "experiments.bidir.toy_corpus:main",
    "kernel-time-warping": "experiments.kernel.time_warping:main",
    "kernel-forda": "experiments.kernel.forda:main",
    "kernel-gestures": "experiments.kernel.gestures:main",
    "kernel-sentiment": "experiments.kernel.sentiment:main",
    "kernel-ecg": "experiments.kernel.ecg:main",
    "kernel-cost": "experiments.kernel.cost:main",
    "fenchel-deviation": "experiments.fenchel.deviation:main",
    "fenchel-ot-vit": "experiments.fenchel.ot_vit:main",
}

# attnlab figures [--paper P]: modules with FIGURES = {name: render(outdir) -> [paths]}; per paper
# one for the theory figures and one for the experiments' figures.
FIGURES = {p: [f"paper_figures.{p}", f"paper_figures.{p}_experiments"]
           for p in ("efa", "bidir", "fenchel", "kernel")}
