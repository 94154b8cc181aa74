"""`attnlab run efa-movielens-sequences`: Table 1 (right) of the EFA paper, Sec 6.2.1 / App. H.2.

Predict which movie a user rated at a masked position from the other (bidirectional) or earlier
(unidirectional) movies of the user's sequence; EFA against the Prop 1 latent factor model.
Preprocessing as in the paper (902 users, 50 movies, 69.50 % sparsity, asserted); ties at rank 50
of the movie popularity are broken by the smaller movie id; users are split 56.25 / 18.75 / 25 %
(train / validation / test) at the user level, keeping every user.
"""
from __future__ import annotations

from attnlab.errors import UsageError

import sys

from attnlab.experiments.efa import categorical as T
from attnlab.experiments.efa import common as C
from attnlab.experiments.efa import data as D
from attnlab.run_args import seed_value

EXPERIMENT = "efa-movielens-sequences"
FULL = {"dim": 32, "heads": 2, "layers": 2, "lr": 1e-4, "epochs": 2000, "patience": 10, "batch_size": 256,
        "split": [0.5625, 0.1875, 0.25], "split_seed": C.SPLIT_SEED, "dedup_seed": 42}
QUICK = dict(FULL, lr=5e-3, epochs=3, patience=2)


def load(data_path=None, split_seed: int = 42, dedup_seed: int = 42):
    seqs, info = D.movielens_preprocess(D.movielens_frame(data_path), "sequences", seed=dedup_seed)
    tr, va, te = D.split_three(len(seqs), (0.5625, 0.1875, 0.25), seed=split_seed)
    return seqs, (tr, va, te), info


def main(argv: list[str]) -> int:
    p = T.parser(EXPERIMENT, __doc__)
    p.add_argument("--split-seed", type=lambda s: seed_value(s, "--split-seed"), default=C.SPLIT_SEED, help="seed of the user-level split (fixed across runs)")
    args = p.parse_args(argv)
    try:
        settings, models = T.parse_common(args)
    except ValueError as e:
        raise UsageError(f"{e}") from None
    cfg = dict(QUICK if args.quick else FULL, split_seed=args.split_seed, sampling=args.sampling)
    seqs, (tr, va, te), info = load(args.data, args.split_seed)
    ex = [C.examples(seqs.subset(tr), args.sampling)] + [C.sequence_examples(seqs.subset(i)) for i in (va, te)]
    if not args.quiet:
        print(f"MovieLens sequences: {info['users']} users ({len(tr)}/{len(va)}/{len(te)} train/val/test), "
              f"{info['ratings']} ratings, sparsity {info['sparsity_percent']} %; {info['tie_break']}",
              file=sys.stderr)
    T.run(args, EXPERIMENT, cfg, settings, models, lambda seed: ex, 50, seqs.items.shape[1])
    return 0
