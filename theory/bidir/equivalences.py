"""Claims of "Bidirectional Attention as a Mixture of Continuous Word Experts" (`bidir.*`), part 1:
the model equivalences of Sec. 2 (Lemma 1, Theorem 2, multi-head and multi-layer forms, CBOW and
the Sec. 4 objective as special cases).

Every check runs on the torch modules of experiments/models/bidir.py in float64.  Lemma 1, Theorem 2
and the stacked MoE are checked over `size_cases`: the edges (S = 1, S = 2 with p = d = d_w = 1,
|V| = 120, S = 100, exact and near ties, saturated gates) and random sizes, to 1e-12 relative.  The
other checks use the default instance |V| = 7, S = 5, p = 6, d = 4, d_w = 3, all weights N(0, 1)
except W' (x 0.3), on a batch of random sentences covering every masked position.
"""
from __future__ import annotations

import numpy as np

from attnlab.theory._errors import worse as _worse
from attnlab.catalog import claim, holds_if
from attnlab.theory._errors import finite_or_inf as _finite_or_inf

# The default instance's sizes.
V, S, P_DIM, D_DIM, D_W = 7, 5, 6, 4, 3
TOL = 1e-10          # absolute tolerance of the fixed-size float64 identities


def random_instance(heads: int = 1, layers: int = 1, seed: int = 0, batch: int = 40,
                    init_std: float = 1.0, **kw):
    """(model, x, m, b, tokens): a random BidirAttentionMLM with the recipe's sizes and a batch of
    masked sentences; m runs over every position (batch must be >= S)."""
    import torch

    from attnlab.experiments.models.bidir import BidirAttentionMLM, mask_sentences

    g = torch.Generator().manual_seed(int(seed))
    model = BidirAttentionMLM(kw.pop("vocab_size", V), kw.pop("seq_len", S), kw.pop("p", P_DIM),
                              d=kw.pop("d", D_DIM), d_w=kw.pop("d_w", D_W), heads=heads,
                              layers=layers, init_std=init_std, generator=g, **kw)
    tokens = torch.randint(0, model.vocab_size, (batch, model.seq_len), generator=g)
    m = torch.arange(batch) % model.seq_len
    x = mask_sentences(tokens, m, model.vocab_size)
    b = tokens[torch.arange(batch), m]
    return model, x, m, b, tokens


REL_TOL = 1e-12      # |deviation| / max(1, max |value|) for the identities over random sizes


def size_cases(seed: int, heads: tuple = (1,), n_random: int = 8) -> list[dict]:
    """Instances for the exact identities: the edges, then `n_random` random sizes.

    Edges: S = 1 (the sentence is the mask alone), S = 2 with p = d = d_w = 1 and |V| = 2;
    |V| = 120 and S = 100 (n >= 100 tokens); exact ties (no positions, one repeated word, so every
    h_j of a word position is equal); near ties (W^Q scaled by 1e-9); saturated gates (weights
    N(0, 3^2)).  Random: |V| in [2, 40], S in [1, 12], p in [1, 10], d, d_w in [1, 6], H from `heads`.
    Each dict holds random_instance's keyword arguments, a 'ties' mode and a 'name'."""
    rng = np.random.default_rng(seed)
    H = lambda: int(rng.choice(heads))                                            # noqa: E731
    base = dict(layers=1, init_std=1.0, ties=None)
    cases = [
        dict(name="S=1", vocab_size=3, seq_len=1, p=2, d=2, d_w=2),
        dict(name="S=2,p=d=d_w=1,|V|=2", vocab_size=2, seq_len=2, p=1, d=1, d_w=1),
        dict(name="|V|=120", vocab_size=120, seq_len=6, p=8, d=5, d_w=4),
        dict(name="S=100", vocab_size=9, seq_len=100, p=6, d=4, d_w=3),
        dict(name="exact ties", vocab_size=5, seq_len=6, p=4, d=3, d_w=2, positional=False, ties="exact"),
        dict(name="near ties", vocab_size=5, seq_len=6, p=4, d=3, d_w=2, ties="near"),
        dict(name="saturated", vocab_size=6, seq_len=5, p=5, d=3, d_w=3, init_std=3.0),
    ]
    for _ in range(n_random):
        cases.append(dict(name="random", vocab_size=int(rng.integers(2, 41)), seq_len=int(rng.integers(1, 13)),
                          p=int(rng.integers(1, 11)), d=int(rng.integers(1, 7)), d_w=int(rng.integers(1, 7))))
    out = []
    for i, c in enumerate(cases):
        c = dict(base, **c, heads=H(), seed=1000 * seed + i)
        c["batch"] = max(24, c["seq_len"])                  # m = arange(batch) % S covers every position
        out.append(c)
    return out


def build_case(case: dict):
    """(model, x, m, b) of one case of size_cases."""
    import torch

    from attnlab.experiments.models.bidir import mask_sentences

    kw = {k: v for k, v in case.items() if k not in ("name", "ties")}
    model, x, m, b, tokens = random_instance(**kw)
    if case.get("ties") == "exact":
        tokens = torch.zeros_like(tokens)                    # one repeated word
        x, b = mask_sentences(tokens, m, model.vocab_size), tokens[torch.arange(len(m)), m]
    elif case.get("ties") == "near":
        with torch.no_grad():
            model.WQ[0].mul_(1e-9)
    return model, x, m, b


def _rel(a, b) -> float:
    """max |a - b| / max(1, max |a|)."""
    return _finite_or_inf(float((a - b).abs().max()) / max(1.0, float(a.abs().max())))


# --------------------------------------------------------------------------- the oracles: the paper as printed
# Plain transcriptions of App. B (the attention MLM), App. C (Lemma 1's map and explicit loss) and
# Theorem 2 (the MoE), one sentence at a time from the raw weights, sharing no code with
# experiments/models/bidir.py: the library's modules are held against them.
def _softmax_rows(a):
    e = (a - a.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)


def app_b_forward(model, x, m) -> dict:
    """App. B steps 1-8 as printed, sentence by sentence: X' = X_bar C + P; per layer X^attn = [softmax_row(
    X' W^Q_i^T W^K_i X'^T / sqrt(d_w)) X' W^V_i^T]_i concatenated over heads, Z = X^attn W^O with W^O the
    heads' blocks stacked, Z' = X' + Z, Z''_i = Z'_i + W' Z'_i (without residuals Z' = Z, Z''_i = W' Z'_i);
    the next layer reads Z''; logits W'' Z''_m.  Returns logits (B, V), the attention rows of the
    masked query, per layer (B, H, S), and each layer's output Z'' (B, S, p)."""
    import math

    import torch

    logits, rows, hidden = [], [], []
    for s in range(x.shape[0]):
        ms = int(m[s])
        Xp = torch.stack([model.C[int(t)] for t in x[s]]) + model.P                # X' = X_bar C + P
        rows_s, hidden_s = [], []
        for l in range(model.layers):
            heads, rows_l = [], []
            for i in range(model.heads):
                WQ, WK, WV = model.WQ[l][i], model.WK[l][i], model.WV[l][i]
                A = _softmax_rows(Xp @ WQ.T @ WK @ Xp.T / math.sqrt(model.d_w))
                heads.append(A @ Xp @ WV.T)
                rows_l.append(A[ms])
            X_attn = torch.cat(heads, dim=1)                                       # (S, H d)
            W_O = torch.cat([model.WO[l][i] for i in range(model.heads)], dim=0)   # (H d, p)
            Z = X_attn @ W_O
            Zp = Xp + Z if model.residual else Z
            W1 = model.W1[l]
            Zpp = torch.stack([(Zp[i] + W1 @ Zp[i]) if model.residual else W1 @ Zp[i] for i in range(len(Zp))])
            Xp = Zpp
            rows_s.append(torch.stack(rows_l))
            hidden_s.append(Xp)
        logits.append(model.W2 @ Xp[ms])
        rows.append(rows_s)
        hidden.append(hidden_s)
    return dict(logits=torch.stack(logits),
                rows=[torch.stack([r[l] for r in rows]) for l in range(model.layers)],
                hidden=[torch.stack([h[l] for h in hidden]) for l in range(model.layers)])


def cross_entropy_printed(logits, b):
    """-log softmax(logits)_b per sentence, as App. B step 8: log sum_k exp(l_k) - l_b."""
    mx = logits.max(dim=1, keepdim=True).values
    return (logits - mx).exp().sum(1).log() + mx[:, 0] - logits[range(len(b)), b]


def lemma1_map_printed(model) -> dict:
    """App. C's reparameterization from the raw weights of a one-layer model: W^l = W'' + W''W' (W''W'
    without residuals), W^KQ_i = W^K_i^T W^Q_i, W^LOV_i = W^l W^O_i^T W^V_i, g = W^l c_{|V|+1},
    D = W^l P^T (g = D = 0 without residuals: no X'_m term reaches the head)."""
    import torch

    W2, W1 = model.W2, model.W1[0]
    W_l = W2 + W2 @ W1 if model.residual else W2 @ W1
    H = model.heads
    out = dict(W_l=W_l,
               W_KQ=torch.stack([model.WK[0][i].T @ model.WQ[0][i] for i in range(H)]),
               W_LOV=torch.stack([W_l @ model.WO[0][i].T @ model.WV[0][i] for i in range(H)]))
    if model.residual:
        out.update(g=W_l @ model.C[model.vocab_size], D=W_l @ model.P.T)
    else:
        out.update(g=torch.zeros(model.vocab_size, dtype=W2.dtype),
                   D=torch.zeros(model.vocab_size, model.seq_len, dtype=W2.dtype))
    return out


def thm2_printed(C, P, W_KQ, W_LOV, g, D, d_w, x, m) -> dict:
    """Theorem 2 (App. C's last display; Sec. 2.2 for H heads) sentence by sentence: h^i_j =
    e_j^T (X_bar C + P) W^KQ_i (c_{|V|+1} + P^T e_m) / sqrt(d_w), pi^i = softmax_j(h^i), f^i_j = W^LOV_i
    (X_bar C + P)^T e_j + (g + D e_m)/H, F = sum_i sum_j pi^i_j f^i_j.  Returns h, pi (B, H, S), f (B, H, S, V),
    F (B, V)."""
    import math

    import torch

    if W_KQ.dim() == 2:
        W_KQ, W_LOV = W_KQ[None], W_LOV[None]
    H, V = W_KQ.shape[0], W_LOV.shape[1]
    hs, pis, fs, Fs = [], [], [], []
    for s in range(x.shape[0]):
        ms = int(m[s])
        Xp = torch.stack([C[int(t)] for t in x[s]]) + P
        query = C[V] + P[ms]
        h = torch.stack([Xp @ W_KQ[i] @ query / math.sqrt(d_w) for i in range(H)])       # (H, S)
        pi = _softmax_rows(h)
        f = torch.stack([(W_LOV[i] @ Xp.T).T + (g + D[:, ms]) / H for i in range(H)])     # (H, S, V)
        F = sum(pi[i] @ f[i] for i in range(H))
        hs.append(h), pis.append(pi), fs.append(f), Fs.append(F)
    return dict(h=torch.stack(hs), pi=torch.stack(pis), f=torch.stack(fs), F=torch.stack(Fs))


def lemma1_loss_printed(h, chi, b):
    """Lemma 1's explicit loss as printed, one head: -sum_j theta chi_b / sum theta + log sum_k exp(
    sum_j theta chi_k / sum theta), theta(j, m) = exp(h_j) (shifted by max_j h_j, which cancels)."""
    theta = (h - h.max(dim=1, keepdim=True).values).exp()                               # (B, S)
    avg = (theta[:, :, None] * chi).sum(1) / theta.sum(1, keepdim=True)                  # (B, V)
    mx = avg.max(dim=1, keepdim=True).values
    return -avg[range(len(b)), b] + (avg - mx).exp().sum(1).log() + mx[:, 0]


def map_deviation(q, printed: dict) -> float:
    """Relative deviation of the library's MoEParameters from App. C's map as printed."""
    return max(_rel(printed[k], getattr(q, k)) for k in ("W_l", "W_KQ", "W_LOV", "g", "D"))


def _sizes(case: dict) -> str:
    return (f"{case['name']}: |V|={case['vocab_size']},S={case['seq_len']},p={case['p']},d={case['d']},"
            f"d_w={case['d_w']},H={case['heads']}")


def lemma1_deviations(case: dict) -> dict:
    """Lemma 1 on one case (one head).  The lemma: the library's attention loss against its Lemma 1 loss
    (loss) and attention row m against the gate (theta_vs_attention).  Each library side against the
    paper as printed: the attention MLM against App. B, the map against App. C, the explicit loss and the
    gate against Lemma 1's formula on App. C's map."""
    import torch

    from attnlab.experiments.models.bidir import CBOWMoE, moe_parameters

    model, x, m, b = build_case(dict(case, heads=1))
    q = moe_parameters(model)
    moe = CBOWMoE(q.C, q.P, q.W_KQ, q.W_LOV, q.g, q.D, q.d_w)
    n = torch.arange(len(m))
    with torch.no_grad():
        l_attn = model.loss(x, m, b, reduction="none")
        l_lemma = moe.lemma1_loss(x, m, b)
        row_m = model.attention_weights(x, m)[0][:, 0][n, m]                        # (B, S)
        theta = moe.gate(x, m)[:, 0]
        ref = app_b_forward(model, x, m)
        pm = lemma1_map_printed(model)
        t2 = thm2_printed(model.C, model.P, pm["W_KQ"], pm["W_LOV"], pm["g"], pm["D"], model.d_w, x, m)
        l_printed = lemma1_loss_printed(t2["h"][:, 0], t2["f"][:, 0], b)
    return dict(loss=_rel(l_attn, l_lemma), theta_vs_attention=float((row_m - theta).abs().max()),
                attention_loss_vs_app_b=_rel(cross_entropy_printed(ref["logits"], b), l_attn),
                attention_row_vs_app_b=float((ref["rows"][0][:, 0] - row_m).abs().max()),
                map_vs_app_c=map_deviation(q, pm),
                lemma1_loss_vs_printed=_rel(l_printed, l_lemma),
                gate_vs_printed=float((t2["pi"][:, 0] - theta).abs().max()))


def thm2_deviations(case: dict) -> dict:
    """Theorem 2 on one case (one head): logits, probabilities, sum pi, expert m, four-term h; the
    library's attention logits against App. B and its h, pi, f, F against Theorem 2 as printed."""
    import math

    import torch

    from attnlab.experiments.models.bidir import CBOWMoE, moe_parameters

    model, x, m, b = build_case(dict(case, heads=1))
    q = moe_parameters(model)
    moe = CBOWMoE(q.C, q.P, q.W_KQ, q.W_LOV, q.g, q.D, q.d_w)
    with torch.no_grad():
        logits, F = model(x, m), moe(x, m)
        pi, f, h = moe.gate(x, m)[:, 0], moe.experts(x, m)[:, 0], moe.gate_logits(x, m)[:, 0]
        n = torch.arange(len(m))
        C, P, KQ, LOV, cm = moe.C, moe.P, moe.W_KQ[0], moe.W_LOV[0], moe.C[moe.vocab_size]
        f_m = (cm + P[m]) @ LOV.T + moe.g + moe.D.T[m]                             # expert m from c_mask
        Cx = C[x]                                                                  # e_j^T X_bar C
        four = (Cx @ KQ @ cm + torch.einsum("bsp,pq,bq->bs", Cx, KQ, P[m])
                + (P @ KQ @ cm)[None, :] + (P @ KQ @ P[m].T).T)
        ref = app_b_forward(model, x, m)["logits"]
        pm = lemma1_map_printed(model)
        t2 = thm2_printed(model.C, model.P, pm["W_KQ"], pm["W_LOV"], pm["g"], pm["D"], model.d_w, x, m)
    return dict(logits=_rel(logits, F), probs=float((logits.softmax(1) - F.softmax(1)).abs().max()),
                gate_sum=float((pi.sum(1) - 1).abs().max()), expert_m=_rel(f[n, m], f_m),
                four_terms=_rel(math.sqrt(moe.d_w) * h, four),
                attention_logits_vs_app_b=_rel(ref, logits), F_vs_printed=_rel(t2["F"], F),
                h_vs_printed=_rel(t2["h"][:, 0], h), pi_vs_printed=float((t2["pi"][:, 0] - pi).abs().max()),
                f_vs_printed=_rel(t2["f"][:, 0], f), map_vs_app_c=map_deviation(q, pm))


def multihead_deviations(case: dict) -> dict:
    """Stacked MoE (Sec. 2.2) on one case with case['heads'] heads: relative logits and loss; each side
    against the paper as printed (App. B with concatenated heads; the stacked MoE on App. C's map)."""
    import torch

    from attnlab.experiments.models.bidir import CBOWMoE

    model, x, m, b = build_case(case)
    moe = CBOWMoE.from_attention(model)
    with torch.no_grad():
        lo, F = model(x, m), moe(x, m)
        ref = app_b_forward(model, x, m)["logits"]
        pm = lemma1_map_printed(model)
        t2 = thm2_printed(model.C, model.P, pm["W_KQ"], pm["W_LOV"], pm["g"], pm["D"], model.d_w, x, m)
        return dict(logits=_rel(lo, F),
                    loss=_rel(model.loss(x, m, b, "none"), moe.loss(x, m, b, "none")),
                    attention_logits_vs_app_b=_rel(ref, lo), moe_logits_vs_printed=_rel(t2["F"], F),
                    attention_loss_vs_printed=_rel(cross_entropy_printed(ref, b), model.loss(x, m, b, "none")),
                    moe_loss_vs_printed=_rel(cross_entropy_printed(t2["F"], b), moe.loss(x, m, b, "none")))


def check_over_sizes(deviations, cases: list[dict], tol: float = REL_TOL):
    """Evidence: the worst of each deviation over the cases, against tol."""
    worst, per_case = {}, {}
    for c in cases:
        d = deviations(c)
        per_case[_sizes(c)] = d
        for k, v in d.items():
            worst[k] = max(worst.get(k, 0.0), v)
    return holds_if(_worse(*worst.values()) <= tol, measured=worst, tolerance=tol,
                    explanation=f"{len(cases)} instances in float64 (S = 1, S = 2 with p = d = d_w = 1, "
                                "|V| = 120, S = 100, exact ties, near ties, saturated gates, random sizes), "
                                "every masked position: worst |deviation| / max(1, max |value|); each library "
                                "side also against the paper as printed (plain per-sentence transcriptions of "
                                "App. B, App. C's map and Theorem 2 from the raw weights)",
                    per_case=per_case)


@claim("bidir.lemma1.explicit-loss",
       reference="Lemma 1 (Sec. 2.1), proof App. C",
       statement="With W^l = W''+W''W', W^KQ = W^K^T W^Q, W^LOV = W^l W^O^T W^V, g = W^l c_{|V|+1}, "
                 "D = W^l P^T, the MLM loss equals -sum_j theta chi_b/sum theta + log sum_k "
                 "exp(sum_j theta chi_k/sum theta), and theta(j,m)/sum_j theta is row m of the "
                 "attention matrix.",
       method="torch",
       vouches_for=("experiments.models.bidir.BidirAttentionMLM.forward",
                    "experiments.models.bidir.BidirAttentionMLM.loss",
                    "experiments.models.bidir.BidirAttentionMLM.attention_weights",
                    "experiments.models.bidir.CBOWMoE.lemma1_loss",
                    "experiments.models.bidir.CBOWMoE.gate",
                    "experiments.models.bidir.CBOWMoE.gate_logits",
                    "experiments.models.bidir.CBOWMoE.experts",
                    "experiments.models.bidir.moe_parameters"))
def _lemma1():
    return check_over_sizes(lemma1_deviations, size_cases(1))


@claim("bidir.thm2.moe-logits",
       reference="Theorem 2 (Sec. 2.2); decompositions of h_j and of the similarity, Sec. 2.2",
       statement="softmax(F) with F = sum_j pi_j f_j, f_j = W^LOV (X_bar C+P)^T e_j + g + D e_m, "
                 "pi = softmax(h), h_j = e_j^T (X_bar C+P) W^KQ (c_{|V|+1}+P^T e_m)/sqrt(d_w), equals "
                 "the attention prediction; sum_j pi_j = 1; expert m reads c_{|V|+1}; sqrt(d_w) h_j is "
                 "the sum of the four token/position terms.",
       method="torch",
       vouches_for=("experiments.models.bidir.BidirAttentionMLM.forward",
                    "experiments.models.bidir.CBOWMoE.forward",
                    "experiments.models.bidir.CBOWMoE.gate",
                    "experiments.models.bidir.CBOWMoE.gate_logits",
                    "experiments.models.bidir.CBOWMoE.experts",
                    "experiments.models.bidir.moe_parameters"))
def _thm2():
    return check_over_sizes(thm2_deviations, size_cases(2))


def gate_b_deviations(case: dict) -> dict:
    """Sec. 2.2's "[the weight matrix] depends on all tokens in the masked sentence and their positions.
    Yet, it does not depend on the center (masked) token b" on one case, with every b in [|V|] at the
    masked position: the library's attention weights of the masked query (BidirAttentionMLM, fed the
    sentence mask_sentences builds) and its MoE gate (CBOWMoE), against Theorem 2's gate as printed.
    Controls that the comparison sees a dependence where there is one: another token of the sentence
    changes the weights, and without the mask (App. B on the unmasked sentence) b would change them."""
    import torch

    from attnlab.experiments.models.bidir import CBOWMoE, mask_sentences

    model, x, m, b = build_case(case)
    V_, S_ = model.vocab_size, model.seq_len
    n = torch.arange(len(m))
    tokens = x.clone()
    tokens[n, m] = b
    moe = CBOWMoE.from_attention(model)
    out = dict(change_over_b=0.0, gate_vs_attention=0.0, gate_vs_printed=0.0, other_token_change=0.0,
               unmasked_change_over_b=0.0)
    with torch.no_grad():
        q = lemma1_map_printed(model)
        first = first_unmasked = None
        for bb in range(V_):
            t = tokens.clone()
            t[n, m] = bb
            xb = mask_sentences(t, m, V_)
            rows = model.attention_weights(xb, m)[0][n, :, m]                         # (B, H, S)
            gate = moe.gate(xb, m)
            first = rows if first is None else first
            out["change_over_b"] = max(out["change_over_b"], float((rows - first).abs().max()))
            out["gate_vs_attention"] = max(out["gate_vs_attention"], float((gate - rows).abs().max()))
            if bb in (0, 1, V_ - 1):                  # the printed forms (slow loops) at three values of b
                printed = thm2_printed(model.C, model.P, q["W_KQ"], q["W_LOV"], q["g"], q["D"], model.d_w,
                                       xb, m)["pi"]
                unmasked = app_b_forward(model, t, m)["rows"][0]                    # no [MASK] at m
                first_unmasked = unmasked if first_unmasked is None else first_unmasked
                out["unmasked_change_over_b"] = max(out["unmasked_change_over_b"],
                                                    float((unmasked - first_unmasked).abs().max()))
                out["gate_vs_printed"] = max(out["gate_vs_printed"], float((printed - gate).abs().max()))
        if S_ > 1:                                          # another token of the masked sentence does enter
            j = (m + 1) % S_
            t = tokens.clone()
            t[n, j] = (t[n, j] + 1) % V_
            xo = mask_sentences(t, m, V_)
            out["other_token_change"] = float((model.attention_weights(xo, m)[0][n, :, m]
                                               - model.attention_weights(x, m)[0][n, :, m]).abs().max())
    return out


GATE_B_CASES = [  # (name, random_instance keywords): the default instance, edges, several heads
    ("default", dict(seed=5)),
    ("S=2,p=d=d_w=1,|V|=2", dict(seed=51, vocab_size=2, seq_len=2, p=1, d=1, d_w=1)),
    ("|V|=120,H=2", dict(seed=52, vocab_size=120, seq_len=6, p=8, d=5, d_w=4, heads=2)),
    ("saturated,H=3", dict(seed=53, vocab_size=6, seq_len=5, p=5, d=3, d_w=3, heads=3, init_std=3.0)),
    ("no positions", dict(seed=54, positional=False)),
]
GATE_B_CONTROL_MIN = 1e-6   # a dependence the comparison must see (other tokens; b without the mask)


@claim("bidir.thm2.gate-independent-of-b",
       reference="Sec. 2.2 (\"the weights do not depend on the center token b\"; footnote 2)",
       statement="The MoE gate pi(X_bar) depends on the masked sentence only, not on the masked "
                 "(true) token b.",
       method="torch",
       vouches_for=("experiments.models.bidir.BidirAttentionMLM.attention_weights",
                    "experiments.models.bidir.CBOWMoE.gate"))
def _gate_b():
    per = {}
    for name, kw in GATE_B_CASES:
        case = dict(name=name, ties=None, batch=max(24, kw.get("seq_len", S)), **kw)
        per[name] = gate_b_deviations(case)
    worst = {k: max(v[k] for v in per.values()) for k in next(iter(per.values()))}
    controls_min = dict(other_token_change=min(v["other_token_change"] for v in per.values()),
                        unmasked_change_over_b=min(v["unmasked_change_over_b"] for v in per.values()))
    ok = (worst["change_over_b"] == 0.0 and worst["gate_vs_attention"] <= REL_TOL
          and worst["gate_vs_printed"] <= REL_TOL and min(controls_min.values()) > GATE_B_CONTROL_MIN)
    return holds_if(ok, measured=dict(worst=worst, controls_min=controls_min),
                    tolerance=dict(change_over_b="exactly 0", gate=REL_TOL, controls_min=GATE_B_CONTROL_MIN),
                    explanation="every b in [|V|] written at the masked position of each sentence, "
                                + ", ".join(n for n, _ in GATE_B_CASES) + " (every masked position), float64: "
                                "the library's attention row of the masked query (the sentence mask_sentences "
                                "builds) must not change with b, bit for bit, and equals CBOWMoE.gate, and "
                                "Theorem 2's gate as printed (b = 1, 2, |V|); controls: changing another token changes it, and App. B on "
                                "the unmasked sentence (b in place of [MASK]) changes with b",
                    per_case=per)


@claim("bidir.sec2-2.multi-head-stacked-moe",
       reference="Sec. 2.2 (multi-head attention = stacked MoE)",
       statement="With H concat-then-project heads, F = sum_i sum_j pi^i_j f^i_j, f^i_j = "
                 "W^LOV_i (X_bar C+P)^T e_j + g/H + D e_m/H, W^LOV_i = W^l W^{O_i}^T W^{V_i}, "
                 "W^KQ_i = W^{K_i}^T W^{Q_i}, equals the attention logits (H = 1 included).",
       method="torch",
       vouches_for=("experiments.models.bidir.BidirAttentionMLM.forward",
                    "experiments.models.bidir.BidirAttentionMLM.loss",
                    "experiments.models.bidir.CBOWMoE.forward",
                    "experiments.models.bidir.CBOWMoE.loss",
                    "experiments.models.bidir.CBOWMoE.from_attention",
                    "experiments.models.bidir.moe_parameters"))
def _multihead():
    return check_over_sizes(multihead_deviations, size_cases(3, heads=(1, 2, 3, 4)))


@claim("bidir.sec2-2.multi-layer-mixture-of-moes",
       reference="Sec. 2.2 (multi-layer = \"mixture of MoEs\"; explicit form derived; docs/bidir.md)",
       statement="An L-layer linear attention MLM equals a mixture of MoEs: layer l mixes CBOW "
                 "experts L_{l,i} h_k with gates pi_{jk} from query position j, and the last layer is "
                 "the CBOW MoE of Theorem 2 over the previous layer's outputs.",
       method="torch",
       vouches_for=("experiments.models.bidir.BidirAttentionMLM.forward",
                    "experiments.models.bidir.MixtureOfMoEs.forward",
                    "experiments.models.bidir.MixtureOfMoEs.hidden",
                    "experiments.models.bidir.MixtureOfMoEs.from_attention"))
def _multilayer():
    import torch

    from attnlab.experiments.models.bidir import MixtureOfMoEs

    per = {}
    for H, L, residual in ((1, 2, True), (2, 2, True), (2, 3, True), (2, 2, False), (1, 3, False)):
        worst = dict(mixture_vs_attention=0.0, attention_vs_app_b=0.0, mixture_vs_app_b=0.0,
                     hidden_vs_app_b=0.0)
        scale = 0.0
        for seed in range(3):
            # N(0, 0.5^2) weights keep 3-layer logits O(10): the check is on absolute deviations.
            model, x, m, b, _ = random_instance(heads=H, layers=L, seed=seed, init_std=0.5,
                                                residual=residual)
            mix = MixtureOfMoEs.from_attention(model)
            with torch.no_grad():
                lo, F, hid = model(x, m), mix(x, m), mix.hidden(x, m)
                ref = app_b_forward(model, x, m)
            devs = dict(mixture_vs_attention=float((lo - F).abs().max()),
                        attention_vs_app_b=float((ref["logits"] - lo).abs().max()),
                        mixture_vs_app_b=float((ref["logits"] - F).abs().max()),
                        hidden_vs_app_b=float((ref["hidden"][L - 2] - hid).abs().max()))
            worst = {k: max(worst[k], devs[k]) for k in worst}
            scale = max(scale, float(lo.abs().max()))
        per[f"H={H},L={L}" + ("" if residual else ",no residuals")] = dict(worst, logit_scale=scale)
    worst = max(max(v[k] for k in v if k != "logit_scale") for v in per.values())
    return holds_if(worst < TOL, measured=per, tolerance=TOL,
                    explanation="(H,L) in {(1,2),(2,2),(2,3)} with residuals, (2,2), (1,3) without, weights "
                                "N(0,0.5^2), 3 instances x 40 sentences, float64: max |attention logits - "
                                "mixture-of-MoEs logits|, and each against App. B as printed (a plain "
                                "per-sentence transcription, concatenated heads, layer after layer), the "
                                "mixture's h^{L-1} against App. B's layer L-1 output")


@claim("bidir.sec2-2.cbow-special-case",
       reference="Sec. 2.2 (CBOW as an MoE with a fixed gate; exact reduction derived; docs/bidir.md)",
       statement="With W^KQ = 0, P = 0, g = 0, D = 0, c_{|V|+1} = 0 and W^LOV = S/(S-1) W_cbow, the "
                 "attention MoE equals CBOW with a whole-sentence window; for any window w the "
                 "omega-weighted average equals the window mean of c_{a_j} followed by W.",
       method="torch",
       vouches_for=("experiments.models.bidir.CBOW.forward", "experiments.models.bidir.CBOW.gate",
                    "experiments.models.bidir.CBOW.similarity", "experiments.models.bidir.CBOWMoE.forward"))
def _cbow_special():
    import torch

    from attnlab.experiments.models.bidir import CBOW, CBOWMoE

    g = torch.Generator().manual_seed(11)
    cbow = CBOW(V, P_DIM, window=None, init_std=1.0, generator=g)
    _, x, m, b, tokens = random_instance(seed=11)
    C = torch.cat([cbow.C.detach(), torch.zeros(1, P_DIM, dtype=torch.float64)])   # c_mask = 0
    moe = CBOWMoE(C, torch.zeros(S, P_DIM, dtype=torch.float64),
                  torch.zeros(P_DIM, P_DIM, dtype=torch.float64), S / (S - 1) * cbow.W.detach(),
                  torch.zeros(V, dtype=torch.float64), torch.zeros(V, S, dtype=torch.float64), D_W)
    def window_mean(cb, w):
        """CBOW as printed (App. G.1, App. H): W times the mean of c_{a_j} over 1 <= |j - m| <= w."""
        ref = []
        for i in range(len(m)):
            js = [j for j in range(S) if 1 <= abs(j - int(m[i])) <= (S if w is None else w)]
            ref.append(cb.W @ (sum(cb.C[int(tokens[i, j])] for j in js) / len(js)))
        return torch.stack(ref)

    with torch.no_grad():
        printed = window_mean(cbow, None)
        d_whole = float((moe(x, m) - cbow(x, m)).abs().max())
        d_moe_printed = float((moe(x, m) - printed).abs().max())
        d_window = float((cbow(x, m) - printed).abs().max())
        for w in (1, 2, 3):
            cb = CBOW(V, P_DIM, window=w, generator=g)
            d_window = max(d_window, float((cb(x, m) - window_mean(cb, w)).abs().max()))
        # masking does not change CBOW: the unmasked sentence gives the same logits
        d_mask = float((cbow(x, m) - cbow(tokens, m)).abs().max())
        d_sim = float((cbow.similarity() - torch.stack([torch.stack([cbow.W[i] @ cbow.C[j] for j in range(V)])
                                                        for i in range(V)])).abs().max())
    devs = dict(whole_sentence=d_whole, moe_vs_printed_cbow=d_moe_printed, window_mean=d_window,
                masked_vs_unmasked=d_mask, similarity_vs_w_i_c_j=d_sim)
    return holds_if(max(devs.values()) < 1e-12, measured=devs, tolerance=1e-12,
                    explanation="random CBOW (|V|=7, p=6) against its MoE reduction on 40 masked "
                                "sentences; both against CBOW as printed (W times the plain window mean of "
                                "c_{a_j}) for the whole sentence and w in {1,2,3}; similarity() against "
                                "w_i^T c_j; float64")


@claim("bidir.sec4.eq1-is-lemma1",
       reference="App. G.2, Eq. (1)",
       statement="Without residual connections and positional encodings the MLM loss is Eq. (1): "
                 "logits_k = w_k^T sum_j (tau_{a_j}/sum_s tau_{a_s}) c_{a_j}, tau_j = "
                 "exp(c_j^T W^KQ c_{|V|+1}/sqrt(d_w)), the sum including the mask position.",
       method="torch",
       vouches_for=("experiments.models.bidir.AttentionCBOW.forward", "experiments.models.bidir.AttentionCBOW.loss",
                    "experiments.models.bidir.AttentionCBOW.gamma", "experiments.models.bidir.AttentionCBOW.log_tau",
                    "experiments.models.bidir.AttentionCBOW.similarity", "experiments.models.bidir.AttentionCBOW.W_KQ",
                    "experiments.models.bidir.BidirAttentionMLM.forward", "experiments.models.bidir.moe_parameters"))
def _eq1():
    import torch

    from attnlab.experiments.models.bidir import AttentionCBOW, moe_parameters

    import math

    def eq1_printed(att, x):
        """Eq. (1) as printed, sentence by sentence: tau_j = exp(c_j^T W^K^T W^Q c_{|V|+1} / sqrt(d_w)),
        gamma_j = tau_{a_j} / sum_s tau_{a_s}, logits_k = w_k^T sum_j gamma_j c_{a_j}; also log tau."""
        KQ = att.WK.T @ att.WQ
        log_tau = torch.stack([att.C[j] @ KQ @ att.C[V] / math.sqrt(D_W) for j in range(V + 1)])
        out, gam = [], []
        for s in range(x.shape[0]):
            t = torch.exp(torch.stack([log_tau[int(a)] for a in x[s]]))
            gam.append(t / t.sum())
            out.append(att.W @ sum(gam[-1][j] * att.C[int(x[s, j])] for j in range(x.shape[1])))
        return torch.stack(out), torch.stack(gam), log_tau

    from attnlab.experiments.models.bidir import CBOWMoE

    worst = dict(eq1_vs_attention=0.0, attention_vs_app_b=0.0, logits_vs_printed=0.0, loss_vs_printed=0.0,
                 gamma_vs_printed=0.0, log_tau_vs_printed=0.0, W_vs_app_c=0.0, similarity_vs_w_i_c_j=0.0,
                 W_KQ_vs_printed=0.0, no_position_0_masked=0.0, g_D_zero_without_residual=0.0,
                 moe_from_attention_vs_model=0.0)
    for seed in range(3):
        model, x, m, b, tokens = random_instance(seed=seed, positional=False, residual=False)
        q = moe_parameters(model)
        att = AttentionCBOW(V, P_DIM, d_w=D_W)
        with torch.no_grad():
            att.W.copy_(q.W_LOV[0])
            att.C.copy_(q.C)
            att.WQ.copy_(model.WQ[0][0])
            att.WK.copy_(model.WK[0][0])
            lo, ref = att(x, m), app_b_forward(model, x, m)["logits"]
            printed, gam, log_tau = eq1_printed(att, x)
            W_printed = model.W2 @ model.W1[0] @ model.WO[0][0].T @ model.WV[0][0]    # W'' W' W^O^T W^V
            devs = dict(eq1_vs_attention=max(float((lo - model(x, m)).abs().max()),
                                             float((att.loss(x, m, b, "none") - model.loss(x, m, b, "none")).abs().max())),
                        attention_vs_app_b=float((ref - model(x, m)).abs().max()),
                        logits_vs_printed=float((printed - lo).abs().max()),
                        loss_vs_printed=float((cross_entropy_printed(printed, b) - att.loss(x, m, b, "none")).abs().max()),
                        gamma_vs_printed=float((gam - att.gamma(x, m)).abs().max()),
                        log_tau_vs_printed=float((log_tau - att.log_tau()).abs().max()),
                        W_KQ_vs_printed=float((att.W_KQ - torch.tensor(
                            [[sum(float(att.WK[r, i]) * float(att.WQ[r, j]) for r in range(D_W)) for j in range(P_DIM)]
                             for i in range(P_DIM)], dtype=torch.float64)).abs().max()),
                        W_vs_app_c=float((W_printed - q.W_LOV[0]).abs().max()),
                        similarity_vs_w_i_c_j=float((att.similarity() - torch.tensor(
                            [[float(att.W[i] @ att.C[j]) for j in range(V)] for i in range(V)],
                            dtype=torch.float64)).abs().max()))
        # moe_parameters' no-residual branch: g = 0 and D = 0 (App. G.2), and the MoE it builds is the model (a
        # branch that gave the residual formulas left every check above as it was)
        with torch.no_grad():
            devs["g_D_zero_without_residual"] = max(float(q.g.abs().max()), float(q.D.abs().max()))
            devs["moe_from_attention_vs_model"] = float((CBOWMoE.from_attention(model)(x, m) - model(x, m)).abs().max())
        # a batch in which no sentence is masked at position 0 (the positions' range is checked, not assumed)
        m1 = m % (S - 1) + 1
        x1 = tokens.clone()
        x1[torch.arange(len(m1)), m1] = V
        with torch.no_grad():
            devs["no_position_0_masked"] = float((model(x1, m1) - app_b_forward(model, x1, m1)["logits"]).abs().max())
        worst = {k: max(worst[k], devs.get(k, 0.0)) for k in worst}
    return holds_if(_worse(*worst.values()) < TOL, measured=worst, tolerance=TOL,
                    explanation="attention MLM with positional=False, residual=False against "
                                "AttentionCBOW (Eq. 1) with W = W''W'W^O^T W^V: max |logit or loss "
                                "difference| over 3 instances x 40 sentences, float64; each against the paper as "
                                "printed (App. B for the attention MLM, Eq. (1) sentence by sentence for "
                                "AttentionCBOW: tau, gamma, logits, loss; W'' W' W^O^T W^V for the map; the "
                                "W_KQ the model reports against sum_r W^K_ri W^Q_rj); moe_parameters' g and D zero "
                                "without the residual, and the CBOWMoE built from the model against the model")
