"""The EFA models as the experiments build them (Sec. 5; the authors' Keras code for what the paper leaves
open): `efa.sec5.model-setup` -- the initial weights each documented distribution gives, the names of the
options as a program reads them, and the models' input checks switched off and on.

Conventions: rows here are the paper's columns (as in experiments.models.efa); "glorot" is U(+-sqrt(6 /
(fan_in + fan_out))); the Keras embedding default is U(+-0.05).
"""
from __future__ import annotations

import math

from attnlab.catalog import claim, holds_if
from attnlab.theory._inputs import at_run_time, refused, uniform_fit


def _categorical(seed: int, names=lambda s: s, **kw):
    import torch

    from attnlab.experiments.models.efa import EFACategorical

    torch.manual_seed(seed)
    args = dict(n_items=300, dim=40, max_len=50, heads=4, layers=2, convention="standard",
                direction="bidirectional", attention="softmax")
    args.update(kw)
    for k in ("convention", "direction", "attention"):
        args[k] = names(args[k])
    return EFACategorical(**args)


def check_model_setup():
    import torch

    from attnlab.experiments.models.efa import EFAValue, input_checks
    from attnlab.numerics.efa_attention import AttentionLayer

    fits, per = {}, {}
    # EFACategorical, standard convention (head_dim = width / heads = 10): beta and P Keras embeddings, delta
    # glorot over (n_items, dim), per layer W^Q, W^K, W^V glorot per head over (head_dim, width), W^O glorot, biases 0
    m = _categorical(0)
    fits["beta"] = uniform_fit(m.beta, 0.05)
    fits["P"] = uniform_fit(m.P, 0.05)
    fits["delta"] = uniform_fit(m.delta, math.sqrt(6 / (300 + 40)))
    zero_bias = True
    for i, layer in enumerate(m.stack.layers):
        for name in ("W_Q", "W_K", "W_V"):
            fits[f"layer {i} {name} (4 heads, 10 x 40)"] = uniform_fit(getattr(layer, name), math.sqrt(6 / (10 + 40)))
        fits[f"layer {i} W_O"] = uniform_fit(layer.W_O, math.sqrt(6 / (40 + 40)))
        zero_bias &= all(bool((getattr(layer, b) == 0).all()) for b in ("b_Q", "b_K", "b_V", "b_O"))
    # paper convention (head_dim = width): W (heads, width, width)
    mp = _categorical(1, n_items=50, dim=24, heads=2, layers=1, convention="paper")
    for name in ("W_Q", "W_K", "W_V"):
        fits[f"paper {name} (2 heads, 24 x 24)"] = uniform_fit(getattr(mp.stack.layers[0], name), math.sqrt(6 / 48))
    # EFAValue: beta_bar, delta_bar, the value table and the [MASK] value, P: Keras embeddings
    torch.manual_seed(2)
    v = EFAValue("gaussian", n_items=200, dim=16, value_dim=8, max_len=40, item_embeddings="both",
                 value_embedding="lookup", n_values=100)
    for name, t in (("beta_bar", v.beta_bar), ("delta_bar", v.delta_bar), ("value table", v.lambda1.weight),
                    ("value P", v.P)):
        fits[name] = uniform_fit(t, 0.05)
    per["value [MASK] inside U(+-0.05)"] = bool(v.value_mask.abs().max() <= 0.05)
    # ... and drawn from it (the 8 entries of one model bound its range only: U(0, 0.05) passed): 8 models' masks
    fits["value [MASK] (8 models x 16)"] = uniform_fit(torch.cat([
        EFAValue("gaussian", n_items=20, dim=4, value_dim=16, max_len=5, value_embedding="lookup",
                 n_values=10).value_mask.detach() for _ in range(8)]), 0.05)
    # the FM baseline's rho and alpha: Keras embeddings too
    from attnlab.experiments.models.efa import FMValue

    fm = FMValue("gaussian", n_items=200, dim=16)
    fits["FM rho"], fits["FM alpha"] = uniform_fit(fm.rho, 0.05), uniform_fit(fm.alpha, 0.05)

    # the option names as a program reads them (equal strings, not the interned literals): the same model
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, 300, (3, 7), generator=g)
    ref = _categorical(0)
    from attnlab.theory.efa.reference import categorical_reference

    dev = 0.0
    for conv in ("standard", "paper"):
        a = _categorical(4, convention=conv, heads=2)
        b = _categorical(4, names=at_run_time, convention=conv, heads=2)
        per[f"{conv}: names read at run time give the same logits"] = bool(torch.equal(a(x), b(x)))
        # and those logits are Sec 2.1's (float64, against the transcription of theory.efa.reference)
        b = b.double()
        with torch.no_grad():
            got, want64 = b(x), categorical_reference(b, x)
        dev = max(dev, float((got - want64).abs().max() / want64.abs().max().clamp_min(1e-300)))
    per["logits vs Sec 2.1 transcription <= 1e-12"] = dev <= 1e-12
    # the factor-model baseline of Sec 4 likewise (the authors' 'code' normalisation, both directions)
    from attnlab.experiments.models.efa import FMCategorical

    for direction in ("unidirectional", "bidirectional"):
        fm = []
        for names in (lambda s_: s_, at_run_time):
            torch.manual_seed(5)
            fm.append(FMCategorical(300, 8, direction=names(direction), normalization=names("code"))(x))
        per[f"FMCategorical code/{direction}: names read at run time"] = bool(torch.equal(*fm))
    # EFAValue likewise, for every value embedding (identity fixes the value width to 1), item embedding and
    # unembedding
    yv = torch.randint(0, 10, (3, 6), generator=g).double()
    xv = torch.randint(0, 20, (3, 6), generator=g)
    for ve, ie, ue in (("identity", "both", "mlp"), ("linear", "center", "linear"), ("mlp", "context", "last"),
                       ("lookup", "none", "mlp")):
        outs = []
        for names in (lambda s_: s_, at_run_time):
            torch.manual_seed(6)
            mv = EFAValue(names("gaussian"), n_items=20, dim=4, value_dim=3, max_len=6, item_embeddings=names(ie),
                          value_embedding=names(ve), n_values=10, unembedding=names(ue),
                          direction=names("bidirectional"), convention=names("paper")).double()
            with torch.no_grad():
                outs.append(mv(yv, xv))
        per[f"EFAValue value_embedding={ve}, item_embeddings={ie}, unembedding={ue}: names read at run time"] = \
            bool(torch.equal(*outs))
    for scale, want in (("width", 1 / 40), ("sqrt_head", 1 / math.sqrt(10))):
        lay = AttentionLayer(40, 4, "softmax", "standard", scale=at_run_time(scale))
        per[f"scale {scale!r} read at run time"] = lay.scale == want
    # a number is the scale itself; a name it does not know, a bool or a number <= 0 is refused in one line
    per["scale 0.25 taken as given"] = AttentionLayer(40, 4, "softmax", "standard", scale=0.25).scale == 0.25
    per["scale 'half', True, 0, -1, nan refused"] = all(
        refused(lambda s_=s_: AttentionLayer(40, 4, "softmax", "standard", scale=s_), "scale must be 'width', 'sqrt_head'")
        for s_ in ("half", "none", True, 0.0, -1.0, math.nan))

    # input checks: on by default (an id out of range, a target position out of range: one line), off inside
    # input_checks(False) (the same logits on good input; the bad ones meet no value check), on again after
    bad_x = x.clone()
    bad_x[0, 0] = 300
    bad_t = torch.tensor([[0, 7]] * 3)
    want = ref(x)
    per["id out of range refused"] = refused(lambda: ref(bad_x), "x", "[0, 299]")
    per["target out of range refused"] = refused(lambda: ref(x, targets=bad_t), "targets", "[0, 6]")
    per["float targets refused, naming the range"] = refused(lambda: ref(x, targets=bad_t.float()),
                                                             "targets must be integer positions in [0, 6]")
    with input_checks(False):
        per["checks off: same logits"] = bool(torch.equal(ref(x), want))
        per["checks off: no value check of ids"] = not refused(lambda: ref(bad_x), "x", "[0, 299]")
        per["checks off: no value check of targets"] = not refused(lambda: ref(x, targets=bad_t), "targets")
    # attributes (Sec 3.2): tau (B, I, attr_dim) or shared (I, attr_dim); a 4-D tau is refused in one line
    va = EFAValue("gaussian", dim=4, value_dim=2, max_len=10, attr_dim=2, attr_map="linear")
    yv = torch.zeros(2, 5)
    per["EFAValue: tau of 4 dimensions refused"] = refused(lambda: va(yv, tau=torch.zeros(2, 5, 1, 2)), "tau must have shape")
    per["EFAValue n_items -1, 2.5, True refused"] = all(refused(lambda n=n: EFAValue("gaussian", n_items=n), "n_items")
                                                         for n in (-1, 2.5, True))
    per["checks on again after the block"] = (refused(lambda: ref(bad_x), "x", "[0, 299]")
                                              and refused(lambda: ref(x, targets=bad_t), "targets", "[0, 6]"))
    per["biases start at 0"] = zero_bias
    # target positions in range whose smallest is not 0 (a batch without its first position as a target) are taken
    per["targets in range, none at position 0, accepted"] = not refused(lambda: ref(x, targets=torch.tensor([[1, 2]] * 3)),
                                                                        "targets")
    ok = all(f["ok"] for f in fits.values()) and all(per.values())
    worst_z = max(max(abs(f["z_mean"]), abs(f["z_var"])) for f in fits.values())
    return holds_if(ok, measured=dict(largest_z=worst_z, logits_vs_transcription=dev, fits_ok={k: f["ok"] for k, f in fits.items()}, checks=per),
                    tolerance=dict(z="|z| <= 5 for the mean and the mean square", logits=1e-12, range="max |w| in [b (1 - 20/n), b]"),
                    explanation="seeded EFACategorical (300 items, width 40, 4 heads, 2 layers, standard and paper "
                                "conventions), EFAValue (item rows and a value table) and the FM baseline (rho, "
                                "alpha): every weight tensor against "
                                "its documented U(-b, b) -- inside the bound, reaching it, and z-tests of the mean and "
                                "mean square; biases 0; the convention, direction, attention and scale names (and the "
                                "factor model's direction and normalisation, and EFAValue's family, value embedding "
                                "(each of the four), item embedding and unembedding) as equal "
                                "strings built at run time give bit-equal outputs, and Sec 2.1's logits (float64, against the transcription in theory.efa.reference, relative 1e-12); ids and target positions out of "
                                "range (and float targets) refused in one line, not checked inside input_checks(False), "
                                "refused again after it; EFAValue's item count refused unless a whole number >= 0; a "
                                "numeric scale taken as given, an unknown name, a bool or a number <= 0 refused; the "
                                "value [MASK] of 8 models fitted to U(-0.05, 0.05)")


@claim("efa.sec5.model-setup",
       reference="Sec. 5 (experiments) with the authors' Keras layers for what it leaves open: Embedding's "
                 "U(+-0.05), glorot_uniform kernels, zero biases",
       statement="The EFA models start from the documented distributions -- beta, P and the value-side embeddings "
                 "U(+-0.05) (and the FM baseline's rho, alpha), delta glorot over (items, dim), W^Q, W^K, W^V glorot per head over (head_dim, width), "
                 "W^O glorot, biases 0 -- accept their option names from any string equal to them, and check their "
                 "inputs except inside input_checks(False).",
       method="torch",
       vouches_for=("experiments.models.efa.EFACategorical.forward",))
def _model_setup():
    return check_model_setup()
