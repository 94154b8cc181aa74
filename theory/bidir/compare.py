"""`attnlab compare bidir-moe`: a random linear bidirectional attention MLM against its CBOW-with-MoE
form (Lemma 1 / Theorem 2; stacked MoE for H heads, mixture of MoEs for L layers, Sec. 2.2).

Prints the maximum absolute deviation of the logits (and relative to the largest logit) and of the
per-sentence MLM losses over a batch of random masked sentences (every masked position), in float64.
"""
from __future__ import annotations

from attnlab.errors import ArgumentParser, UsageError, strict_int

import json

MAX_HEADS, MAX_LAYERS = 16, 8


def compare(heads: int = 1, layers: int = 1, seed: int = 0, batch: int = 200,
            init_std: float | None = None) -> dict:
    """Build a random BidirAttentionMLM (the default sizes of equivalences.random_instance) and its MoE form; return the deviations."""
    import torch

    from attnlab.experiments.models.bidir import CBOWMoE, MixtureOfMoEs
    from attnlab.theory.bidir.equivalences import random_instance

    if not (isinstance(heads, int) and 1 <= heads <= MAX_HEADS):
        raise ValueError(f"heads must be an integer in [1, {MAX_HEADS}]; got {heads!r}")
    if not (isinstance(layers, int) and 1 <= layers <= MAX_LAYERS):
        raise ValueError(f"layers must be an integer in [1, {MAX_LAYERS}]; got {layers!r}")
    if not (isinstance(seed, int) and seed >= 0):
        raise ValueError(f"seed must be an integer >= 0; got {seed!r}")
    # deeper stacks get smaller weights so that logits stay O(10) and deviations stay comparable
    std = init_std if init_std is not None else (1.0 if layers == 1 else 0.5)
    model, x, m, b, _ = random_instance(heads=heads, layers=layers, seed=seed, batch=batch,
                                        init_std=std)
    moe = CBOWMoE.from_attention(model) if layers == 1 else MixtureOfMoEs.from_attention(model)
    with torch.no_grad():
        lo, F = model(x, m), moe(x, m)
        l1 = torch.nn.functional.cross_entropy(lo, b, reduction="none")
        l2 = torch.nn.functional.cross_entropy(F, b, reduction="none")
    if not (bool(torch.isfinite(lo).all()) and bool(torch.isfinite(F).all())):
        # (a NaN deviation of two forms that agree in exact arithmetic is no answer)
        raise ValueError(f"init_std = {std:g} makes the logits overflow float64 (the two forms cannot be compared "
                         "there); use a smaller init_std")
    top = float(lo.abs().max())
    return {"heads": heads, "layers": layers, "seed": seed,
            "max_abs_dev_logits": float((lo - F).abs().max()),
            # (the deviation is float64 rounding of a true 0: it scales with the logits, 1.6e-3 at max |logit| 1.7e6)
            "max_rel_dev_logits": float((lo - F).abs().max()) / max(1.0, top),
            "max_abs_dev_loss": float((l1 - l2).abs().max()),
            "max_abs_logit": top, "n_sentences": int(batch),
            "moe_form": "CBOWMoE (Theorem 2)" if layers == 1 else "MixtureOfMoEs (Sec. 2.2)",
            "sizes": {"V": model.vocab_size, "S": model.seq_len, "p": model.p, "d": model.d,
                      "d_w": model.d_w}, "init_std": std, "dtype": "float64"}


def main(argv: list[str]) -> int:
    p = ArgumentParser(prog="attnlab compare bidir-moe",
                                description="Random linear bidirectional attention MLM vs its CBOW-with-"
                                            "MoE form (Lemma 1, Theorem 2): max deviation of logits and losses.")
    p.add_argument("--heads", type=str, default="1", help=f"number of heads, 1..{MAX_HEADS} (default 1)")
    p.add_argument("--layers", type=str, default="1", help=f"number of layers, 1..{MAX_LAYERS} (default 1)")
    p.add_argument("--seed", type=str, default="0", help="random seed, integer >= 0 (default 0)")
    p.add_argument("--json", metavar="PATH", default=None, help="write the result as JSON ('-' = stdout)")
    args = p.parse_args(argv)
    from attnlab.atomic_io import check_json_dest, write_json_dest
    from attnlab.run_args import MAX_SEED

    vals = {}
    for name, lo, hi in (("heads", 1, MAX_HEADS), ("layers", 1, MAX_LAYERS), ("seed", 0, MAX_SEED)):
        raw = getattr(args, name)
        try:
            v = strict_int(raw)      # ('1_0', '+2', Arabic-Indic digits: refused, as every integer flag is)
        except ValueError:          # not an integer (or one of over 4300 digits)
            v = None
        if v is None or v < lo or v > hi:
            shown = raw if len(raw) <= 40 else raw[:20] + f"...({len(raw)} characters)"
            raise UsageError(f"--{name} must be an integer in [{lo}, {hi}]; got {shown!r}")
        vals[name] = v
    check_json_dest(args.json)                 # before the work, not after it
    res = compare(**vals)
    if args.json == "-":
        print(json.dumps(res, indent=2))
        return 0
    write_json_dest(args.json, res)
    print(f"bidir-moe: H={res['heads']} L={res['layers']} seed={res['seed']} "
          f"({res['n_sentences']} masked sentences, |V|={res['sizes']['V']}, S={res['sizes']['S']}, "
          f"p={res['sizes']['p']}; {res['moe_form']}; float64)")
    print(f"  max |logits(attention) - logits(MoE)| = {res['max_abs_dev_logits']:.3e}"
          f"   (max |logit| = {res['max_abs_logit']:.3g}; relative {res['max_rel_dev_logits']:.1e}: float64 "
          "rounding of forms equal in exact arithmetic)")
    print(f"  max |loss(attention) - loss(MoE)|     = {res['max_abs_dev_loss']:.3e}")
    return 0
