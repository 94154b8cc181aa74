"""EFA: linear identifiability (Defs 1-3, Assumptions 1-4, Theorem 1, App. C) and Remark 13.

The proof's recovery recipes are run on the EFA modules of :mod:`attnlab.experiments.models.efa` with
parameter pairs (theta*, theta') built to give identical conditionals; the two gaps in the statement
of Theorem 1 are shown by concrete counterexamples
(docs/efa.md).

Notation (rows of the modules are the paper's columns):
  H(x)_i = X'_ii in R^K (context, Def 1), e(x) = delta_x in R^K (center embedding);
  L = [e(x_A^(j)) - e(x_B^(j))]_{j<=K}          (Assumption 2)
  M = [[-log Z_j], [H_j]]_{j<=K+1}               (Assumption 3), Z_j = sum_x' exp(H_j^T e(x'))
  N = [K_theta2(y^(j))]_{j<=d_j}                 (Assumption 4), J_theta2 = K_theta2^T L_theta2.
"""
from __future__ import annotations

import itertools

import numpy as np
import torch

from attnlab.catalog import claim, erratum_if, holds_if
from attnlab.experiments.models.efa import EFACategorical, EFAValue

TOL = 1e-9
THM1_ALGEBRA = ("Theorem 1 is about the model class (logits H(x)_i^T e(x), means K(y)^T L): the check realises "
    "the class with the library's EFA modules as parametrisations, and any model of that form gives the "
    "same verdict (a fault that keeps the form, such as a scaled output, leaves it unchanged), so it "
    "vouches for no library function; the modules are vouched for by efa.remark8.multi-layer and "
    "efa.sec2-2.value-model")


# ------------------------------------------------------------------------------------------------
# the proof's matrices and recoveries
# ------------------------------------------------------------------------------------------------
def diversity_L(E, pairs) -> np.ndarray:
    """L of Assumption 2: columns e(x_A) - e(x_B) for the K tuples ``pairs`` [(x_A, x_B), ...].

    E: (D, K) center embeddings (row x = e(x)).  Needs K <= D - 1 (Remark 13: the differences span
    at most D - 1 dimensions), and K tuples of distinct items."""
    E = np.asarray(E, float)
    if E.ndim != 2:
        raise ValueError(f"E must be a (D, K) array of center embeddings; got shape {E.shape}")
    D, K = E.shape
    if K > D - 1:
        raise ValueError(f"K must be <= D - 1 for Assumption 2 (Remark 13); got K={K}, D={D}")
    pairs = [tuple(p) for p in pairs]
    if len(pairs) != K or any(len(p) != 2 or p[0] == p[1] or not (0 <= p[0] < D and 0 <= p[1] < D)
                              for p in pairs):
        raise ValueError(f"pairs must be K={K} tuples (x_A, x_B) of distinct items in [0, {D - 1}]")
    return np.stack([E[a] - E[b] for a, b in pairs], axis=1)


def diversity_M(H, E) -> np.ndarray:
    """M of Assumption 3: columns [-log Z_j; H_j] for the K+1 contexts H (K+1, K)."""
    H, E = np.asarray(H, float), np.asarray(E, float)
    if H.ndim != 2 or E.ndim != 2 or H.shape[1] != E.shape[1] or H.shape[0] != H.shape[1] + 1:
        raise ValueError(f"H must have shape (K+1, K) and E (D, K); got {H.shape} and {E.shape}")
    logits = H @ E.T
    m = logits.max(1, keepdims=True)
    logZ = (m + np.log(np.exp(logits - m).sum(1, keepdims=True)))[:, 0]
    return np.vstack([-logZ[None, :], H.T])


def recover_A(L_star, L_prime):
    """A = (L* L'^{-1})^T: H'(x) = A H*(x) (Thm 1 via Roeder et al.)."""
    return np.linalg.solve(np.asarray(L_prime, float).T, np.asarray(L_star, float).T)


def recover_Btilde(M_star, M_prime):
    """B~ = (M* M'^{-1})^T: [1; e'(x)] = B~ [1; e*(x)]."""
    return np.linalg.solve(np.asarray(M_prime, float).T, np.asarray(M_star, float).T)


def recover_CD(N_star, N_prime):
    """(C, D) of the proof: D = (N* N'^{-1})^T, C = (D^{-1})^T, i.e. C = N' N*^{-1}."""
    N_star, N_prime = np.asarray(N_star, float), np.asarray(N_prime, float)
    Dm = np.linalg.solve(N_prime.T, N_star.T)
    return np.linalg.inv(Dm).T, Dm


def _rand_invertible(rng, K):
    while True:
        A = rng.normal(size=(K, K))
        if abs(np.linalg.det(A)) > 0.3:
            return A


def _randomize(m, rng, scale=0.7):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.as_tensor(rng.normal(size=tuple(p.shape)) * scale))
    return m


def _gaussian_init(m, seed, scale):
    """Every parameter N(0, scale^2) from a torch generator seeded with ``seed`` (float64)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * scale)
    return m


def _H_E(m, x):
    with torch.no_grad():
        return m.context(x)[:, -1].numpy(), m.delta.detach().numpy().copy()


# ------------------------------------------------------------------------------------------------
# recovery on constructed pairs (theta_1)
# ------------------------------------------------------------------------------------------------
def theta1_pair(seed=0, D=6, K=3, I=5, shift=None):
    """(theta*, theta') of the categorical part: W^V' = A0 W^V (so H' = A0 H*), and
    delta' = delta A0^{-1} (e' = A0^{-T} e*), or with ``shift`` c: W^V' = W^V, e' = e* + c."""
    rng = np.random.default_rng(seed)
    m1 = _randomize(EFACategorical(D, K, I, direction="unidirectional").double(), rng)
    m2 = EFACategorical(D, K, I, direction="unidirectional").double()
    m2.load_state_dict(m1.state_dict())
    A0 = _rand_invertible(rng, K)
    with torch.no_grad():
        if shift is None:
            m2.stack.layers[0].W_V.copy_(torch.as_tensor(A0)[None] @ m1.stack.layers[0].W_V)
            m2.delta.copy_(m1.delta @ torch.as_tensor(np.linalg.inv(A0)))
        else:
            A0 = np.eye(K)
            m2.delta.add_(torch.as_tensor(np.asarray(shift, float))[None])
    return m1, m2, A0, rng


def theta1_recovery(seed=0, D=6, K=3, I=5):
    m1, m2, A0, rng = theta1_pair(seed, D, K, I)
    x = torch.as_tensor(rng.integers(0, D, size=(40, I)))
    with torch.no_grad():
        dlogp = float((m1.loglik(x) - m2.loglik(x)).abs().max())
    H1, E1 = _H_E(m1, x)                    # contexts of the last target (x_{1:I-1})
    H2, E2 = _H_E(m2, x)
    pairs = [(j + 1, 0) for j in range(K)]  # K distinct tuples
    L1, L2 = diversity_L(E1, pairs), diversity_L(E2, pairs)
    A_hat = recover_A(L1, L2)
    heldout = slice(K + 1, K + 21)
    dev_A = float(np.abs(A_hat - A0).max())
    dev_H = float(np.abs(H2[heldout] - H1[heldout] @ A_hat.T).max())
    M1, M2 = diversity_M(H1[:K + 1], E1), diversity_M(H2[:K + 1], E2)
    Bt = recover_Btilde(M1, M2)
    one = np.ones((D, 1))
    dev_e = float(np.abs(np.hstack([one, E2]) - np.hstack([one, E1]) @ Bt.T).max())
    dev_block = float(max(np.abs(Bt[1:, 0]).max(), np.abs(Bt[1:, 1:] - np.linalg.inv(A0).T).max(),
                          abs(Bt[0, 0] - 1), np.abs(Bt[0, 1:]).max()))
    return dict(dlogp=dlogp, dev_A=dev_A, dev_H_heldout=dev_H, dev_e_affine=dev_e,
                dev_B_block=dev_block, det_L=float(np.linalg.det(L1)), det_M=float(np.linalg.det(M1)),
                A0=A0, A_hat=A_hat, B0=np.linalg.inv(A0).T, B_hat=Bt[1:, 1:])


def fit_conditionals(target_model, D, K, I, seed=105, scale=1.0, max_iter=1500):
    """theta' of the categorical part fitted to theta*'s conditionals: an EFACategorical of the same
    class from an independent random initialisation (N(0, scale^2) entries, ``seed``), trained by
    L-BFGS (float64) on the squared differences of log p(x_i | x_{1:i-1}) over every x in [D]^I.
    No relation between the two parameter sets is planted; the fit either reaches equal conditionals
    or it does not, and the caller measures which."""
    xs = torch.tensor(list(itertools.product(range(D), repeat=I)))
    with torch.no_grad():
        target = torch.log_softmax(target_model(xs), -1)
    m = _gaussian_init(EFACategorical(D, K, I, direction=target_model.direction).double(), seed, scale)
    opt = torch.optim.LBFGS(m.parameters(), lr=1, max_iter=max_iter, tolerance_grad=1e-15,
                            tolerance_change=1e-25, history_size=100, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = ((torch.log_softmax(m(xs), -1) - target) ** 2).mean()
        loss.backward()
        return loss

    for _ in range(2):                   # a restart of the L-BFGS memory after max_iter iterations
        opt.step(closure)
    return m, xs


def theta1_fitted_recovery(D=4, K=2, I=3, seed_star=0, seed_prime=105, max_iter=1500):
    """Theorem 1 for theta_1 on a pair with equal conditionals found by fitting, not by construction:
    theta* random (seed_star), theta' = :func:`fit_conditionals`.  The proof's A = (L* L'^{-1})^T
    from K tuples and B~ = (M* M'^{-1})^T from K+1 contexts are then tested on every context."""
    m1 = _gaussian_init(EFACategorical(D, K, I, direction="unidirectional").double(), seed_star, 0.7)
    m2, xs = fit_conditionals(m1, D, K, I, seed_prime, max_iter=max_iter)
    with torch.no_grad():
        dlogp = float((m1.loglik(xs) - m2.loglik(xs)).abs().max())
        # contexts H(x)_i of every target of every sequence, de-duplicated
        H1 = m1.context(xs).reshape(-1, K).numpy()
        H2 = m2.context(xs).reshape(-1, K).numpy()
        E1, E2 = m1.delta.numpy().copy(), m2.delta.numpy().copy()
    _, idx = np.unique(np.round(H1, 12), axis=0, return_index=True)
    H1, H2 = H1[np.sort(idx)], H2[np.sort(idx)]
    pairs = [(j + 1, 0) for j in range(K)]
    L1, L2 = diversity_L(E1, pairs), diversity_L(E2, pairs)
    A = recover_A(L1, L2)
    scale_H = np.abs(H2).max()
    dev_H = float(np.abs(H2 - H1 @ A.T).max() / scale_H)
    M1, M2 = diversity_M(H1[:K + 1], E1), diversity_M(H2[:K + 1], E2)
    Bt = recover_Btilde(M1, M2)
    one = np.ones((D, 1))
    dev_e = float(np.abs(np.hstack([one, E2]) - np.hstack([one, E1]) @ Bt.T).max() / np.abs(E2).max())
    B_ls, *_ = np.linalg.lstsq(E1, E2, rcond=None)
    return dict(dlogp=dlogp, dev_H_rel=dev_H, dev_e_affine_rel=dev_e, n_contexts=len(H1),
                det_L=(float(np.linalg.det(L1)), float(np.linalg.det(L2))),
                det_M=(float(np.linalg.det(M1)), float(np.linalg.det(M2))),
                linear_B_residual=float(np.linalg.norm(E2 - E1 @ B_ls)),
                A=A, dist_A_from_identity=float(np.abs(A - np.eye(K)).max()),
                param_distance=float(max((p1 - p2).detach().abs().max() for p1, p2 in
                                         zip(m1.parameters(), m2.parameters()))))


THETA1_FIT_TOL = {"dlogp": 1e-10, "relation": 1e-7}


def check_theta1_fitted(**kw) -> "Evidence":
    r = theta1_fitted_recovery(**kw)
    assumptions = min(abs(v) for v in r["det_L"] + r["det_M"]) > 1e-6
    ok = (r["dlogp"] < THETA1_FIT_TOL["dlogp"] and assumptions
          and r["dev_H_rel"] < THETA1_FIT_TOL["relation"] and r["dev_e_affine_rel"] < THETA1_FIT_TOL["relation"])
    return holds_if(ok, measured={k: r[k] for k in ("dlogp", "dev_H_rel", "dev_e_affine_rel", "det_L", "det_M",
                                                    "n_contexts", "dist_A_from_identity", "param_distance",
                                                    "linear_B_residual")},
                    tolerance=dict(THETA1_FIT_TOL, assumptions="|det L|, |det M| > 1e-6"),
                    explanation="theta*: random causal EFACategorical (D=4, K=2, I=3); theta': the same class "
                                "from an independent random start, L-BFGS on the squared log p differences over "
                                "all 64 sequences (no relation planted); A from K = 2 tuples, B~ from K+1 "
                                "contexts, both tested on every distinct context (relative max deviation); "
                                "the relation error is bounded by the fit error times the conditioning of L, M",
                    A=r["A"].tolist())


@claim("efa.thm1.recovery-theta1",
       reference="Thm 1, Def 1, Assumptions 2-3, App. C (via Roeder et al. Thm 1)",
       statement="Two causal EFAs with equal conditionals p(x_i | x_{1:i-1}) -- theta' obtained by fitting "
                 "an independently initialised EFA to theta*'s conditionals -- have context embeddings "
                 "related by one invertible linear map, H'(x)_i = A H*(x)_i with A = (L* L'^{-1})^T, on "
                 "every context, and center embeddings related affinely, [1; e'] = B~ [1; e*] with "
                 "B~ = (M* M'^{-1})^T.",
       method="float64",
       algebra=THM1_ALGEBRA)
def _thm1_theta1():
    return check_theta1_fitted()


def theta2_recovery(seed=1, D=5, K=2, I=5):
    """theta_2 (Gaussian, Assumption 1 with lambda_2 linear without bias: J = K_theta2^T L):
    K' = C0 K* via W^V' = C0 W^V and L' = C0^{-T} L*; recover C, D from N (d_j = width points)."""
    rng = np.random.default_rng(seed)
    kw = dict(n_items=D, dim=K, value_dim=2, max_len=I, item_embeddings="both",
              value_embedding="linear", unembedding="linear", unembed_bias=False,
              direction="unidirectional")
    m1 = _randomize(EFAValue("gaussian", **kw).double(), rng)
    m2 = EFAValue("gaussian", **kw).double()
    m2.load_state_dict(m1.state_dict())
    dj = m1.width
    C0 = _rand_invertible(rng, dj)
    with torch.no_grad():
        m2.stack.layers[0].W_V.copy_(torch.as_tensor(C0)[None] @ m1.stack.layers[0].W_V)
        m2.lambda2.weight.copy_(m1.lambda2.weight @ torch.as_tensor(np.linalg.inv(C0)))
    x = torch.as_tensor(rng.integers(0, D, size=(dj + 20, I)))
    y = torch.as_tensor(rng.normal(size=(dj + 20, I)))
    with torch.no_grad():
        dmean = float((m1(y, x) - m2(y, x)).abs().max())
        R1 = m1.representation(y, x)[:, -1].numpy()
        R2 = m2.representation(y, x)[:, -1].numpy()
        L1 = m1.lambda2.weight.numpy()[0]
        L2 = m2.lambda2.weight.numpy()[0]
    N1, N2 = R1[:dj].T, R2[:dj].T
    C, Dm = recover_CD(N1, N2)
    return dict(dmean=dmean, dev_C=float(np.abs(C - C0).max()),
                dev_DL=float(np.abs(Dm @ L1 - L2).max()),
                dev_K_heldout=float(np.abs(R2[dj:] - R1[dj:] @ C.T).max()),
                cond_N=float(np.linalg.cond(N1)), C0=C0, C_hat=C, d_j=dj)


@claim("efa.thm1.recovery-theta2",
       reference="Thm 1, Def 2, Assumptions 1, 4, App. C",
       statement="The algebra of the proof for theta_2 (not identifiability itself): for a Gaussian EFA pair "
                 "constructed with equal means (K' = C0 K*, L' = C0^{-T} L*), the proof's "
                 "D = (N* N'^{-1})^T and C = (D^{-1})^T return C = C0, D L* = L', and K'(y) = C K*(y) "
                 "on fresh data. (Whether equal means force K' = C K* is efa.thm1.gap-pointwise: they do "
                 "not.)",
       method="float64",
       algebra=THM1_ALGEBRA)
def _thm1_theta2():
    r = theta2_recovery()
    keys = ("dmean", "dev_C", "dev_DL", "dev_K_heldout")
    worst = max(r[k] for k in keys)
    return holds_if(worst < TOL, measured={k: r[k] for k in keys + ("cond_N", "d_j")}, tolerance=TOL,
                    explanation="random causal EFAValue (Gaussian, linear lambda_2 without bias), d_j = 6, "
                                "N from 6 data points, 20 fresh data points")


# ------------------------------------------------------------------------------------------------
# gap (a): shift of the center embeddings
# ------------------------------------------------------------------------------------------------
def shift_counterexample(seed=0, D=4, K=2, I=4, c=(5.0, 7.0)):
    """e'(x) = e*(x) + c, H' = H*: identical conditionals (the logits move by H^T c, the same for
    every x), Assumptions 2 and 3 hold for both, yet no linear B gives e' = B e*."""
    m1, m2, _, rng = theta1_pair(seed, D, K, I, shift=c)
    x = torch.as_tensor(rng.integers(0, D, size=(30, I)))
    with torch.no_grad():
        dlogp = float((m1.loglik(x) - m2.loglik(x)).abs().max())
    H1, E1 = _H_E(m1, x)
    H2, E2 = _H_E(m2, x)
    pairs = [(j + 1, 0) for j in range(K)]
    L1, L2 = diversity_L(E1, pairs), diversity_L(E2, pairs)
    M1, M2 = diversity_M(H1[:K + 1], E1), diversity_M(H2[:K + 1], E2)
    # best linear B (least squares, B E1^T ~ E2^T): the residual ||E' - B E*||_F
    Bt_ls, *_ = np.linalg.lstsq(E1, E2, rcond=None)
    resid = float(np.linalg.norm(E2 - E1 @ Bt_ls))
    Btil = recover_Btilde(M1, M2)
    one = np.ones((D, 1))
    dev_aff = float(np.abs(np.hstack([one, E2]) - np.hstack([one, E1]) @ Btil.T).max())
    return dict(dlogp=dlogp, det_L=(float(np.linalg.det(L1)), float(np.linalg.det(L2))),
                det_M=(float(np.linalg.det(M1)), float(np.linalg.det(M2))), lstsq_residual=resid,
                affine_dev=dev_aff, E_star=E1, E_prime=E2, B_ls=Bt_ls.T, B_tilde=Btil)


@claim("efa.thm1.gap-shift",
       reference="Thm 1, Def 1 (center embeddings e), Assumptions 2-3",
       statement="Under Assumptions 2 and 3, equal conditionals imply e'(x) = B e*(x) for an invertible "
                 "B (linear identifiability of the center embeddings, Def 1).",
       method="float64", expected="erratum",
       algebra=THM1_ALGEBRA,
       corrected="Only the affine relation [1; e'(x)] = B~ [1; e*(x)] (B~ = (M* M'^{-1})^T) follows: "
                 "e' = e* + c with H' = H* gives identical conditionals and satisfies Assumptions 2-3, "
                 "but for D >= K+1 affinely independent embeddings no linear B maps e* to e'. "
                 "The context part H' = A H* is unaffected.")
def _thm1_gap_shift():
    r = shift_counterexample()
    assumptions = min(abs(v) for v in r["det_L"] + r["det_M"]) > 1e-6
    printed_holds = r["lstsq_residual"] < TOL
    corrected_holds = r["dlogp"] < 1e-12 and assumptions and r["affine_dev"] < TOL
    return erratum_if(printed_holds, corrected_holds,
                      measured={k: r[k] for k in ("dlogp", "det_L", "det_M", "lstsq_residual",
                                                  "affine_dev")},
                      tolerance={"lstsq_residual": f"printed needs < {TOL}", "affine": TOL},
                      explanation="K=2, D=4, c=(5,7), random causal EFACategorical: identical log p, "
                                  "det L, det M nonzero; min_B ||E' - B E*||_F by least squares")


# ------------------------------------------------------------------------------------------------
# gap (b): d_j >= 2 gives the relation only at the diversity points (sympy)
# ------------------------------------------------------------------------------------------------
def pointwise_counterexample():
    """K*(y) = (y, y^2), K'(y) = (y, y^6 + 2 y^2) (g^3 + 2g with g = y^2), L* = L' = (1, 0):
    equal means J = y for every y; N at y = 1, 2 is invertible for both."""
    import sympy as sp

    y = sp.symbols("y", real=True)
    f, g = y, y ** 2
    Ks = sp.Matrix([f, g])
    Kp = sp.Matrix([f, g ** 3 + 2 * g])
    Ls = Lp = sp.Matrix([1, 0])
    mean_diff = sp.simplify((Kp.T * Lp)[0] - (Ks.T * Ls)[0])
    pts = (1, 2)
    Ns = sp.Matrix.hstack(*[Ks.subs(y, p) for p in pts])
    Np = sp.Matrix.hstack(*[Kp.subs(y, p) for p in pts])
    Dm = (Ns * Np.inv()).T
    C = (Dm.inv()).T
    resid = sp.simplify(Kp - C * Ks)
    # is there ANY constant C with K'(y) = C K*(y) for all y?  match polynomial coefficients
    cs = sp.symbols("c11 c12 c21 c22")
    Cg = sp.Matrix(2, 2, cs)
    eqs = []
    for comp in (Kp - Cg * Ks):
        eqs += sp.Poly(sp.expand(comp), y).coeffs()
    any_C = sp.solve(eqs, cs, dict=True)
    return dict(y=y, Ks=Ks, Kp=Kp, C=C, D=Dm, resid=resid, mean_diff=mean_diff, Ns=Ns, Np=Np,
                at_points=[sp.simplify(resid.subs(y, p)) for p in pts], any_C=any_C,
                DL_minus_Lp=sp.simplify(Dm * Ls - Lp))


@claim("efa.thm1.gap-pointwise",
       reference="Thm 1, Def 2, Assumptions 1, 4, App. C",
       statement="Under Assumptions 1 and 4, equal Gaussian conditionals imply K'(y) = C K*(y) for all y "
                 "and L' = D L* with invertible C, D (linear identifiability of theta_2).",
       method="sympy", expected="erratum",
       algebra="A counterexample in sympy polynomials (K*(y), K'(y), L*, L'): the theorem's algebra, no "
               "library code",
       corrected="For d_j >= 2 the proof gives K'(y) = C K*(y) only at the d_j points of N: equal scalar "
                 "means constrain only the projection onto L. Counterexample: K*(y) = (y, y^2), "
                 "K'(y) = (y, y^6 + 2y^2), L* = L' = (1, 0) have equal means for every y and invertible "
                 "N at y = 1, 2; the proof's C matches there but K'(y) - C K*(y) is not 0, and no "
                 "constant C works. (L' = D L* holds but is vacuous.)")
def _thm1_gap_pointwise():
    import sympy as sp

    r = pointwise_counterexample()
    means_equal = r["mean_diff"] == 0
    invertible = r["Ns"].det() != 0 and r["Np"].det() != 0
    at_points = all(v == sp.zeros(2, 1) for v in r["at_points"])
    not_identically = r["resid"] != sp.zeros(2, 1)
    no_C = r["any_C"] == []
    DL = r["DL_minus_Lp"] == sp.zeros(2, 1)
    printed_holds = not (not_identically and no_C)
    corrected_holds = bool(means_equal and invertible and at_points and DL)
    y = r["y"]
    num = float(max(abs(sp.N(r["resid"][1].subs(y, v))) for v in (0.5, 1.5, -1.0)))
    return erratum_if(printed_holds, corrected_holds,
                      measured=dict(residual=str(r["resid"].T), C=str(r["C"].tolist()),
                                    no_constant_C=bool(no_C), residual_at_y_in_0p5_1p5_m1=num),
                      tolerance="exact (sympy)",
                      explanation="sympy: equal means for all y, det N*, det N' != 0, proof's C exact at "
                                  "y = 1, 2, K'(y) - C K*(y) a nonzero polynomial; coefficient matching "
                                  "finds no constant C")


# ------------------------------------------------------------------------------------------------
# Remark 13
# ------------------------------------------------------------------------------------------------
@claim("efa.remark13.k-le-d-minus-1",
       reference="Remark 13, Assumption 2",
       statement="Assumption 2 needs K <= D - 1: for K = D every choice of K difference columns "
                 "e(x_A) - e(x_B) of D embeddings is singular, while for K = D - 1 random embeddings "
                 "give invertible L.",
       method="float64",
       algebra="Linear algebra of Assumption 2's difference matrix on random embeddings (numpy): the paper's "
               "algebra, no library code")
def _remark13():
    rng = np.random.default_rng(13)
    D = 4
    E = rng.normal(size=(D, D))                        # K = D
    pairs = [(a, b) for a in range(D) for b in range(D) if a != b]
    worst = 0.0
    for cols in itertools.combinations(pairs, D):      # 495 choices of K = 4 columns
        L = np.stack([E[a] - E[b] for a, b in cols], 1)
        worst = max(worst, abs(np.linalg.det(L)) / max(np.linalg.norm(L, 2) ** D, 1e-300))
    try:
        diversity_L(E, pairs[:D])
        raised = False
    except ValueError:
        raised = True
    E3 = rng.normal(size=(D, D - 1))                   # K = D - 1
    dets = [abs(np.linalg.det(diversity_L(E3, [(j + 1, 0) for j in range(D - 1)])))]
    for _ in range(20):
        idx = rng.choice(len(pairs), D - 1, replace=False)
        dets.append(abs(np.linalg.det(np.stack([E3[pairs[i][0]] - E3[pairs[i][1]] for i in idx], 1))))
    full_rank_first = dets[0] > 1e-3
    ok = worst < 1e-10 and raised and full_rank_first
    return holds_if(ok, measured=dict(max_rel_det_K_eq_D=worst, det_K_eq_Dm1=dets[0],
                                      random_choices_nonsingular=int(sum(d > 1e-10 for d in dets[1:]))),
                    tolerance={"K=D": "|det L| < 1e-10 ||L||^K", "K=D-1": "|det L| > 1e-3"},
                    explanation="D=4: all 495 choices of 4 of the 12 ordered differences (K=D); "
                                "diversity_L raises ValueError for K > D-1; K=D-1 with tuples (j, 0)")
