"""Lemma 1 (Sec. 2.1, proof App. C) of "Bidirectional Attention as a Mixture of Continuous Word
Experts", proved symbolically at a generic small size (`bidir.lemma1.sympy-proof`).

Every parameter is a free real symbol: |V| = 2 words and [MASK], S = 2, p = 2, d = d_w = 1.  For every
masked position m and every word at the other position, the attention logits W'' Z''_m of Sec. 2.1
and Lemma 1's sum_j theta(j,m) chi(j,m,.) / sum_j theta(j,m) are built from the paper's formulas;
the exponents of theta and of the attention scores are equal polynomials, and with the exponentials
named t_j the two logit vectors are equal rational functions.  The float64 check of the library's
modules over many sizes is `bidir.lemma1.explicit-loss`.
"""
from __future__ import annotations

from attnlab.catalog import claim, holds_if

SIZES = dict(V=2, S=2, p=2, d=1, d_w=1)


def symbols(V=2, S=2, p=2, d=1, d_w=1) -> dict:
    """The attention parameters of Sec. 2.1 as matrices of free real symbols."""
    import sympy as sp

    def mat(name, r, c):
        return sp.Matrix(r, c, lambda i, j: sp.Symbol(f"{name}_{i}{j}", real=True))

    return dict(C=mat("c", V + 1, p), P=mat("P", S, p), WQ=mat("q", d_w, p), WK=mat("k", d_w, p),
                WV=mat("v", d, p), WO=mat("o", d, p), W1=mat("a", p, p), W2=mat("w", V, p),
                V=V, S=S, p=p, d_w=d_w)


def attention_row(q: dict, sentence: list[int], m: int):
    """(scores of query m over j, the map from attention weights A_m to the logits W'' Z''_m): Sec. 2.1
    steps 1-4 (X' = X_bar C + P, softmax(X' W^Q^T W^K X'^T / sqrt(d_w)) X' W^V^T W^O, two residuals)."""
    import sympy as sp

    Xp = sp.Matrix.vstack(*[q["C"][t, :] + q["P"][j, :] for j, t in enumerate(sentence)])   # S x p
    scores = [((q["WQ"] * Xp[m, :].T).T * (q["WK"] * Xp[j, :].T))[0, 0] / sp.sqrt(q["d_w"])
              for j in range(q["S"])]

    def logits(A):                                            # A: the weights of query m over j
        Z = sum((A[j] * (Xp[j, :] * q["WV"].T) * q["WO"] for j in range(q["S"])), sp.zeros(1, q["p"]))
        Zp = Xp[m, :] + Z
        Zpp = Zp + Zp * q["W1"].T
        return q["W2"] * Zpp.T                                 # |V| x 1

    return scores, logits


def moe_map(q: dict) -> dict:
    """Lemma 1's reparameterization: W^l = W'' + W''W', W^KQ = W^K^T W^Q, W^LOV = W^l W^O^T W^V,
    g = W^l c_{|V|+1}, D = W^l P^T."""
    Wl = q["W2"] + q["W2"] * q["W1"]
    return dict(Wl=Wl, KQ=q["WK"].T * q["WQ"], LOV=Wl * q["WO"].T * q["WV"], g=Wl * q["C"][q["V"], :].T,
                D=Wl * q["P"].T)


def lemma1_row(q: dict, sentence: list[int], m: int):
    """(exponents h_j of theta(j,m), the map from normalised theta to sum_j theta chi / sum theta)."""
    import sympy as sp

    r = moe_map(q)
    Xp = sp.Matrix.vstack(*[q["C"][t, :] + q["P"][j, :] for j, t in enumerate(sentence)])
    query = q["C"][q["V"], :].T + q["P"][m, :].T
    h = [(Xp[j, :] * r["KQ"] * query)[0, 0] / sp.sqrt(q["d_w"]) for j in range(q["S"])]
    chi = [r["LOV"] * Xp[j, :].T + r["g"] + r["D"][:, m] for j in range(q["S"])]

    def logits(pi):
        return sum((pi[j] * chi[j] for j in range(q["S"])), sp.zeros(q["V"], 1))

    return h, logits


def check_lemma1_sympy(sizes: dict | None = None):
    import itertools

    import sympy as sp

    q = symbols(**(sizes or SIZES))
    S, V = q["S"], q["V"]
    t = sp.symbols(f"t0:{S}", positive=True)                  # the exponentials, shared by both sides
    pi = [tj / sum(t) for tj in t]
    cases, exponents_ok, logits_ok = [], True, True
    for m in range(S):
        for words in itertools.product(range(V), repeat=S - 1):
            sentence = list(words[:m]) + [V] + list(words[m:])       # [MASK] = id V at position m
            scores, attn_logits = attention_row(q, sentence, m)
            h, moe_logits = lemma1_row(q, sentence, m)
            e_ok = all(sp.expand(h[j] - scores[j]) == 0 for j in range(S))
            diff = (attn_logits(pi) - moe_logits(pi)).applyfunc(lambda e: sp.cancel(sp.expand(e)))
            l_ok = diff.is_zero_matrix
            exponents_ok &= e_ok
            logits_ok &= bool(l_ok)
            cases.append(dict(m=m, sentence=sentence, exponents_equal=e_ok, logits_equal=bool(l_ok)))
    ok = exponents_ok and logits_ok
    return holds_if(ok, measured=dict(cases=len(cases), exponents_equal=exponents_ok, logits_equal=logits_ok),
                    tolerance="symbolic equality",
                    explanation=f"sympy, |V| = {V}, S = {S}, p = {q['p']}, d = {q['WV'].shape[0]}, "
                                f"d_w = {q['d_w']}, every entry a free symbol; every masked position and every "
                                "sentence: h_j - score(m, j) expands to 0 and W''Z''_m - sum_j pi_j chi_j "
                                "cancels to 0 with exp(h_j) = t_j (so theta/sum theta = A[m, :] and the losses "
                                "agree)", per_case=cases)


@claim("bidir.lemma1.sympy-proof",
       reference="Lemma 1 (Sec. 2.1), proof App. C",
       statement="Lemma 1 as a symbolic identity: with every parameter a free symbol, the exponent of "
                 "theta(j,m) equals the attention score of query m on key j, and sum_j theta(j,m) "
                 "chi(j,m,.) / sum_j theta(j,m) equals the attention logits W'' Z''_m, so the MLM loss is "
                 "Lemma 1's.",
       method="sympy",
       algebra=("a symbolic identity between App. B's attention logits and Lemma 1's form, every "
                "parameter a free symbol (sympy); the library's modules are held to it in "
                "bidir.lemma1.explicit-loss"))
def _lemma1_sympy():
    return check_lemma1_sympy()
