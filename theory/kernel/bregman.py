"""Claims of "Kernel Multimodal Continuous Attention" (`kernel.*`) on the Tsallis gradient and the
Bregman steps of App. D: Eq. 16 (the gradient of Omega_alpha), Eq. 17 (the Taylor step of Lemma D.5)
and the bound on Term III in the proof of Thm D.2 (= Thm 5.6).

Library: attnlab.numerics.tsallis (Omega_alpha, its gradient, the Bregman divergence) on the random
kernel-sparsemax pairs of theory/kernel/propositions.py (Q uniform on [0, 1], 401-point trapezoid).
"""
from __future__ import annotations

from attnlab.catalog import claim, erratum_if, holds_if


@claim("kernel.eq16-17.tsallis-gradient",
       reference="App. D, proof of Lemma D.5, Eq. 16 and Eq. 17",
       statement="(Eq. 16) grad Omega_alpha(p)(t) = p(t)^{alpha-1}/(alpha-1) is the Gateaux derivative of "
                 "Omega_alpha(p) = (int p^alpha dQ - 1)/(alpha(alpha-1)); (Eq. 17) |p_f^alpha - p_g^alpha| <= "
                 "alpha (||p_f||_inf + ||p_f - p_g||_inf)^{alpha-1} ||p_f - p_g||_inf pointwise.",
       method="torch")
def _eq16_17():
    return check_eq16_17()


def check_eq16_17(alphas=(1.25, 1.5, 2.0)):
    import torch

    from attnlab.numerics.quadrature import trapezoid
    from attnlab.numerics.tsallis import tsallis_gradient, tsallis_negentropy
    from attnlab.theory.kernel.propositions import _lipschitz_instance

    rows, ok = {}, True
    for alpha in alphas:
        t, f, g, pf, pg, _, _ = _lipschitz_instance(alpha, n_pairs=50)
        # Eq. 16 at a strictly positive density (the directional derivative exists in every direction)
        p = 0.5 * pf + 0.5 * torch.ones_like(pf)
        h = torch.sin(7 * t) * (g - f)
        eps = 1e-5
        fd = (tsallis_negentropy(p + eps * h, t, alpha) - tsallis_negentropy(p - eps * h, t, alpha)) / (2 * eps)
        an = trapezoid(tsallis_gradient(p, alpha) * h, t)
        scale = trapezoid((tsallis_gradient(p, alpha) * h).abs(), t)       # |an| can cancel to ~0
        rel16 = float(((fd - an).abs() / scale).max())
        # Eq. 17, pointwise over the grid
        dp = (pf - pg).abs().max(-1, keepdim=True).values
        lhs = (pf ** alpha - pg ** alpha).abs()
        rhs = alpha * (pf.max(-1, keepdim=True).values + dp) ** (alpha - 1) * dp
        r17 = float((lhs / rhs).max())
        ok &= rel16 < 1e-8 and r17 <= 1 + 1e-12
        rows[alpha] = dict(eq16_rel_err=rel16, eq17_max_ratio=r17)
    return holds_if(ok, measured=rows, tolerance=dict(eq16="|difference| < 1e-8 int |grad h| dQ (central difference, eps 1e-5)",
                                                      eq17="max lhs/rhs <= 1"),
                    explanation="numerics.tsallis on 50 random kernel-sparsemax pairs (Q uniform on [0,1], 401-point "
                                "trapezoid); Eq. 16 at p = (p_f + 1)/2 in the direction sin(7t)(g - f)")


@claim("kernel.termIII.gradient-bound",
       reference="App. D, proof of Thm D.2 (Thm 5.6), Term III",
       statement="<p - p_theta, grad Omega(p_theta) - grad Omega(p_theta)> <= ..., with ||grad Omega(p_theta) - "
                 "grad Omega(p_g)||_1 <= (||p_theta||_inf + ||p_theta - p_g||_inf)^{alpha-2} ||p_theta - p_g||_inf "
                 "(by Eq. 17).",
       method="torch", expected="erratum",
       corrected="The second slot is p_g (the printed line has p_theta twice, which is 0).  For alpha < 2 the "
                 "mean-value factor z^{alpha-2} is largest at the SMALLER end, so the printed (max)^{alpha-2} bound "
                 "fails; x^{alpha-1} is (alpha-1)-Hoelder, which gives ||grad Omega(p_theta) - grad Omega(p_g)||_1 <= "
                 "||p_theta - p_g||_inf^{alpha-1}/(alpha-1) -> 0 as p_g -> p_theta, so the proof's conclusion survives.")
def _termIII():
    return check_termIII()


def check_termIII(alphas=(1.25, 1.5, 1.75)):
    import torch

    from attnlab.numerics.quadrature import trapezoid
    from attnlab.numerics.tsallis import tsallis_gradient
    from attnlab.theory.kernel.propositions import _lipschitz_instance

    rows, printed_ok, corrected_ok = {}, True, True
    for alpha in alphas:
        t, f, g, pf, pg, _, _ = _lipschitz_instance(alpha)
        lhs = trapezoid((tsallis_gradient(pf, alpha) - tsallis_gradient(pg, alpha)).abs(), t)
        dp = (pf - pg).abs().max(-1).values
        printed = (pf.max(-1).values + dp) ** (alpha - 2) * dp
        corrected = dp ** (alpha - 1) / (alpha - 1)
        typo = trapezoid((tsallis_gradient(pf, alpha) - tsallis_gradient(pf, alpha)).abs(), t)
        n_fail = int((lhs > printed).sum())
        printed_ok &= n_fail == 0
        corrected_ok &= bool(torch.all(lhs <= corrected)) and float(typo.abs().max()) == 0.0
        rows[alpha] = dict(printed_failures=f"{n_fail}/{len(lhs)}", max_lhs_over_printed=float((lhs / printed).max()),
                           max_lhs_over_corrected=float((lhs / corrected).max()))
    return erratum_if(printed_ok, corrected_ok, measured=rows,
                      tolerance="printed: lhs <= (||p||+||dp||)^{alpha-2} ||dp|| on every pair; corrected: "
                                "lhs <= ||dp||^{alpha-1}/(alpha-1) on every pair",
                      explanation="numerics.tsallis gradient on 200 random kernel-deformed pairs (Q uniform on [0,1], "
                                  "401-point trapezoid), alpha in {1.25, 1.5, 1.75}")
