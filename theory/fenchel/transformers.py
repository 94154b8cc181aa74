"""Claims of the Fenchel-dual attention paper about dot-product attention and T5 (Secs 7-8, Eqs.
(16)-(19))."""
from __future__ import annotations

import numpy as np

from attnlab.catalog import Skip, claim, erratum_if, holds_if


@claim("fenchel.sec7.dot-product-attention",
       reference="Sec 7, Sec 8 (reparameterisation before Eq. (19))",
       statement="Dot-product attention is (16) with uniform u and alpha = 1: with t_i = x_i/sqrt(d'), "
                 "z = K^T Q x_k and V' = V sqrt(d'), softmax(<K x_i, Q x_k>/sqrt(d')) V x equals V' times (16).  "
                 "(BERT biases: the Q bias enters z, the K bias cancels, the V bias passes through.)",
       method="torch",
       vouches_for=("numerics.fenchel_attention.fenchel_attention",))
def _s10_dot_product():
    import torch
    import torch.nn.functional as F

    from attnlab.numerics.fenchel_attention import fenchel_attention

    g = torch.Generator().manual_seed(0)
    B, n, d, dp = 3, 7, 16, 4
    x = torch.randn(B, n, d, generator=g, dtype=torch.float64)
    K, Q, V = (torch.randn(dp, d, generator=g, dtype=torch.float64) for _ in range(3))
    bK, bQ, bV = (torch.randn(dp, generator=g, dtype=torch.float64) for _ in range(3))
    errs = {}
    for biased in (False, True):
        kb, qb, vb = (bK, bQ, bV) if biased else (0 * bK, 0 * bQ, 0 * bV)
        q, k, v = x @ Q.T + qb, x @ K.T + kb, x @ V.T + vb
        ref = F.scaled_dot_product_attention(q, k, v)                 # (B, n, d') over all queries
        t = x / dp ** 0.5                                             # templates
        z = (q @ K)                                                   # z_k = K^T (Q x_k + b_Q), (B, n, d)
        # (16) by the library's layer: templates t (scale 1), evidence z, alpha = 1, u uniform (log u = 0)
        h = fenchel_attention(z, t, t, alpha=1.0, scale=1.0, exact=False)          # (B, n, d): h-hat per query
        out = h @ (V * dp ** 0.5).T + vb                              # V' h (+ V bias)
        errs["with_biases" if biased else "no_biases"] = float((out - ref).abs().max())
        # the layer as a drop-in for SDPA (its default scale 1/sqrt(d'), with a boolean mask)
        mask = torch.rand(B, n, n, generator=g) < 0.7
        mask[..., 0] = True
        errs["drop_in" + ("_biased" if biased else "")] = float(
            (fenchel_attention(q, k, v, exact=False, attn_mask=mask)
             - F.scaled_dot_product_attention(q, k, v, attn_mask=mask)).abs().max())
    worst = max(errs.values())
    return holds_if(worst < 1e-12, measured=errs, tolerance=1e-12,
                    explanation="torch float64, B = 3, n = 7, d = 16, d' = 4: scaled_dot_product_attention "
                                "vs V sqrt(d') (16) with alpha = 1, u uniform, t = x/sqrt(d'), z = K^T Q x_k, (16) "
                                "by numerics.fenchel_attention (exact=False); the layer with its default scale "
                                "and a random mask vs scaled_dot_product_attention")


def _t5_inputs(seed=0):
    rng = np.random.default_rng(seed)
    n = 9
    s = rng.normal(size=n) * 2                        # logits <t_i, z>
    table = rng.normal(size=2 * 4 + 1)                # bias per clipped relative position j - i
    j = 4
    rel = np.clip(j - np.arange(n), -4, 4) + 4
    bias = table[rel]
    masked = np.zeros(n, bool)
    masked[[2, 6]] = True
    return s, bias, masked


def eq18_cases(seed: int = 18):
    """[(label, T, z, bias, masked)] for (17)-(18): a T5-like head (n = 9, clipped relative positions, two
    masked words), logits beyond float64's exp range (|<t_i, z>| ~ 1e3), a single unmasked word, n = 1."""
    rng = np.random.default_rng(seed)
    out = []
    for label, n, d, scale, n_masked in (("T5-like head", 9, 4, 1.0, 2), ("logits ~1e3", 12, 3, 20.0, 3),
                                         ("one unmasked word", 6, 2, 1.0, 5), ("n=1", 1, 3, 1.0, 0)):
        T = rng.normal(size=(n, d)) * scale
        z = rng.normal(size=d) * scale
        table = rng.normal(size=2 * 4 + 1) * (25.0 if scale > 1 else 1.0)    # bias per clipped j - i
        bias = table[np.clip(n // 2 - np.arange(n), -4, 4) + 4]
        masked = np.zeros(n, bool)
        masked[rng.permutation(n)[:n_masked]] = True
        out.append((label, T, z, bias, masked))
    return out


def eq18_oracle(T, z, bias, masked):
    """(18) as printed, at 50 digits: softmax(<t_i, z> + b_{j-i} + 1_masked(i)), the mask term -inf."""
    import mpmath as mp

    with mp.workdps(50):
        s = [mp.fsum(mp.mpf(float(a)) * mp.mpf(float(c)) for a, c in zip(T[i], z)) + mp.mpf(float(bias[i]))
             for i in range(len(bias))]
        keep = [i for i in range(len(s)) if not masked[i]]
        m = max(s[i] for i in keep)
        w = [mp.exp(s[i] - m) if i in keep else mp.mpf(0) for i in range(len(s))]
        W = mp.fsum(w)
        return np.array([float(x / W) for x in w])


@claim("fenchel.eq18.t5-unification",
       reference="Eqs. (17), (18)",
       statement="With u(t_i) = 0 for masked words and exp(b_{j-i})/Z otherwise (17), the attention (16) with "
                 "alpha = 1 equals softmax(<t_i, z> + b_{j-i} + 1_masked(i)) (18): log u is the T5 relative "
                 "position bias plus the mask.",
       method="float64",
       vouches_for=("numerics.fenchel_attention.fenchel_attention",))
def _s11_t5():
    """(16) by the library's attention (exact=False, alpha = 1, scale 1), fed the normalised u of (17) as
    log u, and fed T5's inputs (the bias as an unnormalised log u, the mask as attn_mask), against (18)
    transcribed at 50 digits; and the identity itself in sympy (u of (17) cancels Z)."""
    import sympy as sp
    import torch

    from attnlab.numerics.fenchel_attention import fenchel_attention

    n = 3
    s_, b_ = sp.symbols("s1:4", real=True), sp.symbols("b1:4", real=True)
    Z = sp.Symbol("Z", positive=True)                                   # Z = sum_j exp(b_j) over unmasked j
    u = [sp.exp(b) / Z for b in b_]                                      # (17)
    # (16)'s numerator u_i e^{s_i} and denominator sum_j u_j e^{s_j} are (18)'s divided by the same Z
    num = [sp.powsimp(sp.expand(Z * u[i] * sp.exp(s_[i]) - sp.exp(s_[i] + b_[i]))) for i in range(n)]
    den = sp.powsimp(sp.expand(Z * sum(u[j] * sp.exp(s_[j]) for j in range(n)) - sum(sp.exp(s_[j] + b_[j])
                                                                                        for j in range(n))))
    sym = all(x == 0 for x in num) and den == 0
    errs, zero_on_masked = {}, True
    for label, T, z, bias, masked in eq18_cases():
        ref = eq18_oracle(T, z, bias, masked)
        Tt, zt = torch.tensor(T), torch.tensor(z)[None]
        logu17 = torch.tensor(np.where(masked, -np.inf, bias - np.logaddexp.reduce(bias[~masked])))   # log of (17)
        _, p17 = fenchel_attention(zt, Tt, Tt, alpha=1.0, log_u=logu17, scale=1.0, exact=False, return_weights=True)
        _, pt5 = fenchel_attention(zt, Tt, Tt, attn_mask=torch.tensor(~masked), alpha=1.0, log_u=torch.tensor(bias),
                                   scale=1.0, exact=False, return_weights=True)
        errs[label] = max(float(np.abs(p17[0].numpy() - ref).max()), float(np.abs(pt5[0].numpy() - ref).max()))
        zero_on_masked &= bool((p17[0][torch.tensor(masked)] == 0).all() and (pt5[0][torch.tensor(masked)] == 0).all())
    worst = max(errs.values())
    return holds_if(bool(sym) and worst < 1e-12 and zero_on_masked,
                    measured=dict(max_abs_err=worst, per_case=errs, sympy_identity=bool(sym),
                                  zero_on_masked=zero_on_masked),
                    tolerance=dict(max_abs_err=1e-12, sympy="exact"),
                    explanation="numerics.fenchel_attention.fenchel_attention (exact=False, i.e. (16), alpha = 1, "
                                "scale 1) with log u = log of (17), and with T5's bias as log u plus the mask as "
                                "attn_mask, against (18) at 50 digits (mpmath): a T5-like head, logits ~1e3 (beyond "
                                "float64's exp range), one unmasked word, n = 1; sympy: (17) in (16) is (18)")


def eq19_printed(u, s):
    """(19) as printed, per output k: u_i exp(s_i) / sum_j exp(s_j) (no u_j in the denominator)."""
    return u * np.exp(s) / np.sum(np.exp(s))


def eq19_corrected(u, s):
    """(19) with u_j in the denominator, i.e. (16)."""
    return u * np.exp(s) / np.sum(u * np.exp(s))


def check_eq19(printed=eq19_printed, corrected=eq19_corrected, seed: int = 1):
    """The weights of the printed and the corrected (19) against T5's softmax(s + bias + mask), all three
    transcribed on the same logits (the printed formula is what is under test: no library code)."""
    from scipy.special import softmax

    s, bias, masked = _t5_inputs(seed)
    u = np.where(masked, 0.0, np.exp(bias))
    u /= u.sum()
    t5 = softmax(s + np.log(np.where(masked, 1e-300, 1.0)) + np.where(masked, 0, bias))  # T5: softmax(s + bias + mask)
    e_p = float(np.max(np.abs(printed(u, s) - t5)))
    e_c = float(np.max(np.abs(corrected(u, s) - t5)))
    return erratum_if(e_p < 1e-12, e_c < 1e-12, measured=dict(printed_err=e_p, corrected_err=e_c),
                      tolerance=1e-12,
                      explanation="weights of the printed (19) and of the corrected form vs softmax(s + bias + mask)")


@claim("fenchel.eq19.t5-formula",
       reference="Eq. (19)",
       statement="T5's k-th output is sum_i V x_i u_i exp(<K x_i, Q y_k>/sqrt(d')) / sum_j exp(<K x_j, Q y_k>/sqrt(d')).",
       method="float64",
       algebra="the printed (19) and T5's attention, both transcribed, compared as formulas on the same "
               "logits; no library code",
       expected="erratum",
       corrected="The denominator must carry u_j as well: sum_j u_j exp(<K x_j, Q y_k>) (then it is (16)); "
                 "and T5 applies no 1/sqrt(d') scaling to its logits.")
def _s11_eq19():
    return check_eq19()


@claim("fenchel.eq17.t5-hf-position-bias",
       reference="Eqs. (17)-(19), Sec 7",
       statement="A (randomly initialised) Hugging Face T5Attention layer is (16) with alpha = 1, "
                 "t_i = K x_i, z = Q y_k (no 1/sqrt(d') scaling) and log u = its relative-position bias "
                 "plus the attention mask, per head.",
       method="torch",
       vouches_for=("numerics.fenchel_attention.fenchel_attention",), requires=("transformers",))
def _s11_hf():
    import torch

    from attnlab.numerics.fenchel_attention import fenchel_attention

    try:
        from transformers import T5Config
        from transformers.models.t5.modeling_t5 import T5Attention
    except Exception as e:  # pragma: no cover - depends on the installed version
        raise Skip(f"transformers T5Attention unavailable: {e}")
    torch.manual_seed(0)  # HF initialises weights from the global generator
    cfg = T5Config(d_model=64, d_kv=16, num_heads=4, relative_attention_num_buckets=32,
                   relative_attention_max_distance=128, dropout_rate=0.0)
    cfg._attn_implementation = "eager"
    layer = T5Attention(cfg, has_relative_attention_bias=True, layer_idx=0).double().eval()
    g = torch.Generator().manual_seed(1)
    n = 11
    x = torch.randn(1, n, 64, generator=g, dtype=torch.float64)
    masked = torch.zeros(n, dtype=torch.bool)
    masked[[3, 8]] = True
    mask = torch.zeros(n, dtype=torch.float64)
    mask[masked] = torch.finfo(torch.float64).min                       # HF's additive mask value
    mask = mask.view(1, 1, 1, n)
    with torch.no_grad():
        out, position_bias, _ = layer(x, mask=mask)[:3]
        H, dk = cfg.num_heads, cfg.d_kv
        Kx = layer.k(x).view(1, n, H, dk).transpose(1, 2)[0]            # templates t_i per head
        Qy = layer.q(x).view(1, n, H, dk).transpose(1, 2)[0]            # evidence z_k per head
        Vx = layer.v(x).view(1, n, H, dk).transpose(1, 2)[0]
        # (16) for every head and query: the library layer with exact=False, log u = the relative-position bias
        # alone (compute_bias; the position_bias the layer returns holds the mask too in some versions of
        # transformers, and passing it beside the mask would add the mask twice, so that the masked weights were 0
        # whatever the library did with attn_mask), the mask as the layer's attn_mask, scale 1 (t_i = K x_i)
        bias = layer.compute_bias(n, n, device=x.device)
        heads, p = fenchel_attention(Qy, Kx, Vx, alpha=1.0, log_u=bias[0], attn_mask=mask[0],
                                     scale=1.0, exact=False, return_weights=True)     # (H, n_q, d_kv)
        ours = layer.o(heads.transpose(0, 1).reshape(1, n, H * dk))
        u_masked = float(p[..., masked].max())
    err = float((ours - out).abs().max())
    return holds_if(err < 1e-12 and u_masked == 0.0, measured=dict(max_abs_err=err, p_on_masked=u_masked),
                    tolerance=1e-12,
                    explanation="HF T5Attention (random init, 4 heads, d_kv 16, 32 buckets, float64, eager) vs "
                                "numerics.fenchel_attention.fenchel_attention(exact=False), i.e. (16), with "
                                "log u = the relative-position bias (compute_bias) and the attention mask as "
                                "attn_mask, alpha = 1, scale 1")


# Means transcribed from Fig 4 (per layer, head-averaged) and Figs 5-8 (per head).
FIG4 = {"bert": [0.074, 0.067, 0.019, 0.001, 0.000, 0.000],
        "enc": [0.029, 0.042, 0.061, 0.054, 0.050, 0.051],
        "dec": [0.029, 0.042, 0.061, 0.054, 0.050, 0.051],
        "cross": [0.057, 0.062, 0.071, 0.069, 0.074, 0.075]}
FIG5_8 = {
    "bert": [[0.092, 0.040, 0.034, 0.093, 0.102, 0.093, 0.052, 0.033, 0.069, 0.040, 0.074, 0.142],
             [0.072, 0.041, 0.065, 0.050, 0.056, 0.127, 0.030, 0.082, 0.092, 0.044, 0.103, 0.044],
             [0.022, 0.016, 0.015, 0.024, 0.023, 0.013, 0.026, 0.020, 0.012, 0.019, 0.016, 0.017],
             [0.001] * 12, [0.0] * 12, [0.0] * 12],
    "enc": [[0.038, 0.025, 0.038, 0.020, 0.022, 0.029, 0.028, 0.030],
            [0.028, 0.031, 0.028, 0.036, 0.031, 0.040, 0.039, 0.041],
            [0.044, 0.044, 0.046, 0.054, 0.043, 0.051, 0.060, 0.052],
            [0.038, 0.038, 0.039, 0.042, 0.036, 0.042, 0.046, 0.043],
            [0.036, 0.039, 0.036, 0.043, 0.035, 0.040, 0.042, 0.043],
            [0.037, 0.039, 0.034, 0.046, 0.039, 0.043, 0.046, 0.046]],
    "dec": [[0.016, 0.026, 0.023, 0.018, 0.018, 0.023, 0.028, 0.019],
            [0.017, 0.030, 0.037, 0.026, 0.034, 0.033, 0.028, 0.026],
            [0.014, 0.029, 0.033, 0.027, 0.029, 0.030, 0.029, 0.030],
            [0.018, 0.034, 0.034, 0.033, 0.032, 0.036, 0.036, 0.037],
            [0.019, 0.038, 0.035, 0.031, 0.033, 0.033, 0.034, 0.030],
            [0.041, 0.056, 0.058, 0.054, 0.058, 0.061, 0.056, 0.055]],
    "cross": [[0.087, 0.081, 0.083, 0.071, 0.092, 0.090, 0.077, 0.093],
              [0.072, 0.075, 0.083, 0.072, 0.073, 0.076, 0.072, 0.072],
              [0.071, 0.074, 0.076, 0.077, 0.073, 0.070, 0.068, 0.062],
              [0.066, 0.076, 0.073, 0.077, 0.069, 0.064, 0.069, 0.058],
              [0.078, 0.087, 0.081, 0.080, 0.076, 0.067, 0.079, 0.071],
              [0.076, 0.077, 0.089, 0.082, 0.070, 0.070, 0.087, 0.078]]}


# The numbers the corrected statement of fenchel.fig4.head-averages quotes (checked against the data below).
FIG4_QUOTED = dict(bert_layer1_head_average=0.0720, enc_max_dev=0.014, cross_max_dev=0.027,
                   fig7_min=0.021, fig7_max=0.055)


def check_fig4_means(fig4=FIG4, per_head=FIG5_8, quoted=FIG4_QUOTED):
    """Fig 4's per-layer means against the head-averages of Figs 5-8, and the corrected statement's
    numbers against the same data (each quoted to its printed digits)."""
    tol = 0.0015                         # 3-decimal rounding of both figures (0.0005 + 0.0005) plus slack
    avg = {k: [float(np.mean(per_head[k][l])) for l in range(6)] for k in fig4}
    dev = {k: [abs(fig4[k][l] - avg[k][l]) for l in range(6)] for k in fig4}
    printed = all(max(v) <= tol for v in dev.values())
    # every number of the corrected text is the measurement rounded to the digits it is printed with
    text = dict(bert_layer1_head_average=(avg["bert"][0], 5e-5), enc_max_dev=(max(dev["enc"]), 5e-4),
                cross_max_dev=(max(dev["cross"]), 5e-4), fig7_min=(min(avg["dec"]), 5e-4),
                fig7_max=(max(avg["dec"]), 5e-4))
    text_ok = {k: abs(v - quoted[k]) <= h for k, (v, h) in text.items()}
    corrected = (max(dev["bert"][1:]) <= tol and dev["bert"][0] <= 0.0025
                 and fig4["dec"] == fig4["enc"] and max(dev["dec"]) > tol and all(text_ok.values()))
    return erratum_if(printed, corrected,
                      measured=dict({k: round(max(v), 4) for k, v in dev.items()},
                                    bert_layer1_head_average=round(avg["bert"][0], 5)),
                      tolerance=dict(rounding=tol, quoted_numbers="measured, rounded to the printed digits"),
                      explanation="max over layers 1-6 of |Fig 4 mean - mean of the per-head means| "
                                  "(numbers transcribed from the figures); the corrected text's numbers "
                                  "recomputed from the same data",
                      quoted_vs_measured={k: dict(quoted=quoted[k], measured=v, ok=text_ok[k])
                                          for k, (v, _) in text.items()})


@claim("fenchel.fig4.head-averages",
       reference="Fig 4 vs Figs 5-8 (App. C)",
       statement="Fig 4 plots, per layer, the relative deviation averaged over the heads, i.e. its means are "
                 "the head-averages of the per-head means of Figs 5-8 (BERT layers 1-6, T5 enc/dec/cross).",
       method="float64",
       algebra="arithmetic on the means transcribed from Figs 4-8; no library code", expected="erratum",
       corrected="Nearly so for BERT (layers 2-6 within rounding; layer 1 plots 0.074 against a head-average "
                 "of 0.0720) but not for T5: Fig 4b's 'Dec self' row is an exact copy of the 'Enc self' row "
                 "(a copy error; Fig 7 averages 0.021-0.055), and T5 Enc and Cross layers differ from the "
                 "head-averages of Figs 6 and 8 by up to 0.014 and 0.027.")
def _fig4_means():
    return check_fig4_means()
