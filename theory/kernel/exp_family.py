"""Claims of "Kernel Multimodal Continuous Attention" (`kernel.*`): the exponential-family attention
density of Sec. 3, Eq. 3, p(t) = exp(f(t) - A(f)) w.r.t. Q, and its log-normaliser A(f).

- Eq. 3 / Eq. 8 with App. E.1: for a kernel expansion f (kernel softmax) A(f) = log int_S exp(f) dQ,
  computed with the max shift C = sup_t f of App. E.1 so that it stays finite where exp(f) under- or
  overflows in float64; checked against Arb's rigorous integral of the normaliser (theory._arb).
- Eq. 3 with f(t) = theta^T (t, t^2): the Gaussian of continuous softmax (Table 4's caption), with
  A(f) in closed form (sympy) and the density against scipy.stats.

Both check numerics.continuous_attention: `kernel_softmax` (density and A) and `gaussian_density`.
"""
from __future__ import annotations

import math

import numpy as np

from attnlab.catalog import claim, holds_if
from attnlab.theory._errors import worse as _worse

# ------------------------------------------------------------------ Eq. 3 / Eq. 8 and App. E.1
LOGNORM_H = 1.0 / 32                  # trapezoid step on R (Cor E.3: exponentially small error)
LOGNORM_L = 17.0                      # |t| <= 17: standard-normal tail mass < 1e-64
LOGNORM_INSTANCES = ((0, 1.0), (1, 3.0), (2, 10.0))        # (seed, gamma scale) of instances.draw
LOGNORM_OFFSETS = (-1000.0, -2.5, 0.0, 7.0, 1000.0)         # f + c: exp(f + c) under/overflows at +-1000
LOGNORM_TOL = 1e-12
# the normaliser by Arb's rigorous integration (theory._arb) at 22 digits: an enclosure whose radius must stay
# below 1e-15 relative, 1000 x below LOGNORM_TOL (the radii come out near 1e-26)
LOGNORM_DPS = 22
LOGNORM_REF_REL = 1e-15
LOGNORM_KNOTS = (-LOGNORM_L, -6, -3, -1, 0, 0.25, 0.5, 0.75, 1, 2, 4, 7, LOGNORM_L)


def _log_normalizer_rows(instances=LOGNORM_INSTANCES, offsets=LOGNORM_OFFSETS, dps=LOGNORM_DPS):
    import mpmath as mp
    import torch

    from attnlab.numerics import continuous_attention as ca
    from attnlab.numerics.kernel_family import gaussian_kernel, kernel_expansion
    from attnlab.numerics.quadrature import real_line_grid, trapezoid
    from attnlab.theory._arb import digits, enclosure, integral
    from attnlab.theory.kernel.instances import INDUCING, ZETA2, draw, integrand_arb

    t = real_line_grid(LOGNORM_H, LOGNORM_L)
    log_q0 = -0.5 * t * t - 0.5 * math.log(2 * math.pi)              # standard normal base density
    K = gaussian_kernel(t, torch.as_tensor(INDUCING), ZETA2)
    rows = {}
    for seed, scale in instances:
        gamma, B = draw(seed, scale)
        f0 = kernel_expansion(torch.as_tensor(gamma), K)
        with digits(dps):                   # int exp(f) dQ, Q = N(0, 1), f = sum_i gamma_i exp(-zeta^2 (t - t_i)^2)
            Z0, Z0_rad = enclosure(integral(integrand_arb(gamma, B, "normal", with_V=False), LOGNORM_KNOTS))
        with mp.workdps(dps):
            logZ0 = mp.log(Z0)
            ref_rel_err = float(Z0_rad / abs(Z0))
        for c in offsets:
            f = f0 + c
            dens, A = ca.kernel_softmax(f, t, log_q0)
            A_ref = float(c + logZ0)                        # log int exp(f + c) dQ = c + log int exp(f) dQ
            p_ref = torch.exp(f0 + log_q0 - float(logZ0))    # q0 exp(f + c - A(f + c)), Lebesgue density
            naive = float(trapezoid(torch.exp(f + log_q0), t))     # the normaliser without the shift
            rows[f"seed={seed},gamma_scale={scale:g},c={c:g}"] = dict(
                A=float(A), A_reference=A_ref, abs_err_A=abs(float(A) - A_ref),
                rel_err_density=float((dens - p_ref).abs().max() / p_ref.abs().max()),
                unshifted_float64_Z=naive, reference_rel_error_estimate=ref_rel_err)
    return rows


def check_log_normalizer(instances=LOGNORM_INSTANCES, offsets=LOGNORM_OFFSETS):
    rows = _log_normalizer_rows(instances, offsets)
    worst_A = max(r["abs_err_A"] for r in rows.values())
    worst_p = max(r["rel_err_density"] for r in rows.values())
    unshifted_fails = sorted(k for k, r in rows.items() if not 0.0 < r["unshifted_float64_Z"] < math.inf)
    ref_err = max(r["reference_rel_error_estimate"] for r in rows.values())
    ok = worst_A < LOGNORM_TOL and worst_p < LOGNORM_TOL and ref_err <= LOGNORM_REF_REL
    return holds_if(ok, measured=dict(max_abs_err_A=worst_A, max_rel_err_density=worst_p,
                                      reference_rel_error_estimate=ref_err),
                    tolerance=dict(A=f"absolute {LOGNORM_TOL:g}", density=f"relative {LOGNORM_TOL:g} (sup norm)",
                                   reference=f"the radius of Arb's enclosure of the normaliser <= "
                                             f"{LOGNORM_REF_REL:g} relative"),
                    explanation="numerics.continuous_attention.kernel_softmax on the trapezoid grid of R with step "
                                f"{LOGNORM_H:g} on [-{LOGNORM_L:g}, {LOGNORM_L:g}], Q = N(0, 1) (log q0 passed), f = "
                                "sum_i gamma_i exp(-10 (t - t_i)^2) + c (10 inducing points on [0, 1], gamma from "
                                "instances.draw at gamma scales 1, 3, 10; offsets c = -1000 .. 1000) vs "
                                "A = c + log int exp(f - c) dQ with the integral by Arb's rigorous integration (22 "
                                f"digits, split at the knots, its radius <= {LOGNORM_REF_REL:g} relative) and the "
                                "density q0 exp(f - A); the normaliser summed without the max shift is 0 or inf in float64 at "
                                "c = -+1000 (unshifted_float64_Z)",
                    unshifted_float64_fails_at=unshifted_fails, rows=rows)


@claim("kernel.eq3.log-normalizer",
       reference="Sec. 3, Eq. 3; Sec. 5.1, Eq. 8; App. E.1",
       statement="The kernel exponential family attention density is p(t) = exp(f(t) - A(f)) w.r.t. Q with "
                 "A(f) = log int_S exp(f) dQ (Eq. 3, Eq. 8); normalising exp(f - C), C = sup_t f, by "
                 "exp(C - A(f)) (App. E.1) gives the same density and A(f), also where exp(f) itself "
                 "under- or overflows.",
       method="mpmath",
       vouches_for=("numerics.continuous_attention.kernel_softmax", "numerics.kernel_family.gaussian_kernel",
                    "numerics.kernel_family.kernel_expansion", "numerics.quadrature.trapezoid"))
def _log_normalizer():
    return check_log_normalizer()


# ------------------------------------------------------------------ Eq. 3 with phi(t) = (t, t^2)
# (mu, sigma2) on R, and (mu, sigma2, a, b) truncated: sigma2 != 1 (where sigma2 and its square root
# coincide), narrow and wide, mu inside and outside [a, b]
GAUSS_CASES = ((0.37, 0.3), (-3.0, 2.5), (0.15, 1e-4), (0.0, 40.0), (12.0, 0.05))
TRUNC_CASES = ((0.37, 0.3, 0.0, 1.0), (1.8, 0.05, 0.0, 1.0), (-2.0, 2.5, -1.0, 3.0), (0.5, 40.0, 0.0, 1.0))
GAUSS_TOL = 1e-12


def _sympy_gaussian():
    """A(f) = log int_R exp(theta1 t + theta2 t^2) dt and exp(f - A) - N(t; mu, sigma2), by sympy."""
    import sympy as sp

    t = sp.symbols("t", real=True)
    th1 = sp.symbols("theta1", real=True)
    lam = sp.symbols("lambda", positive=True)                     # theta2 = -lambda < 0
    Z = sp.integrate(sp.exp(th1 * t - lam * t ** 2), (t, -sp.oo, sp.oo))
    A = sp.simplify(sp.log(Z))
    mu, s2 = th1 / (2 * lam), 1 / (2 * lam)                       # -theta1/(2 theta2), -1/(2 theta2)
    normal = sp.exp(-(t - mu) ** 2 / (2 * s2)) / sp.sqrt(2 * sp.pi * s2)
    residual = sp.simplify(sp.exp(th1 * t - lam * t ** 2 - A) / normal - 1)
    closed = th1 ** 2 / (4 * lam) + sp.log(sp.pi / lam) / 2       # -theta1^2/(4 theta2) + log(pi/(-theta2))/2
    return sp.lambdify((th1, lam), A, "mpmath"), residual, sp.simplify(A - closed)


def check_gaussian_case(cases=GAUSS_CASES, trunc_cases=TRUNC_CASES):
    import mpmath as mp
    import torch
    from scipy import stats

    from attnlab.numerics import continuous_attention as ca
    from attnlab.numerics.quadrature import real_line_grid

    A_sym, residual, closed_diff = _sympy_gaussian()
    symbolic_ok = residual == 0 and closed_diff == 0
    rows, worst_scipy, worst_ks, worst_A = {}, 0.0, 0.0, 0.0
    for mu, s2 in cases:
        sd = math.sqrt(s2)
        t = real_line_grid(sd / 8, 40 * sd, center=mu)              # h = sigma/8: trapezoid error ~ e^(-128 pi^2)
        p = ca.gaussian_density(t, torch.tensor(mu, dtype=torch.float64), torch.tensor(s2, dtype=torch.float64))
        p_scipy = stats.norm.pdf(t.numpy(), loc=mu, scale=sd)
        e_scipy = float(np.abs(p.numpy() - p_scipy).max() / p_scipy.max())
        th1, th2 = mu / s2, -1.0 / (2 * s2)                         # f = theta1 t + theta2 t^2
        dens, A = ca.kernel_softmax(th1 * t + th2 * t * t, t)
        e_ks = float((dens - p).abs().max() / p.abs().max())
        A_ref = float(A_sym(mp.mpf(th1), mp.mpf(-th2)))
        e_A = abs(float(A) - A_ref)
        rows[f"R: mu={mu:g},sigma2={s2:g}"] = dict(gaussian_density_vs_scipy=e_scipy,
                                                  kernel_softmax_vs_gaussian_density=e_ks, A=float(A),
                                                  A_sympy=A_ref, abs_err_A=e_A)
        worst_scipy, worst_ks, worst_A = max(worst_scipy, e_scipy), max(worst_ks, e_ks), max(worst_A, e_A)
    for mu, s2, a, b in trunc_cases:
        sd = math.sqrt(s2)
        t = torch.linspace(a - 0.5, b + 0.5, 401, dtype=torch.float64)
        p = ca.gaussian_density(t, torch.tensor(mu, dtype=torch.float64), torch.tensor(s2, dtype=torch.float64),
                                (a, b)).numpy()
        p_scipy = stats.truncnorm.pdf(t.numpy(), (a - mu) / sd, (b - mu) / sd, loc=mu, scale=sd)
        e = float(np.abs(p - p_scipy).max() / p_scipy.max())
        rows[f"[{a:g}, {b:g}]: mu={mu:g},sigma2={s2:g}"] = dict(gaussian_density_vs_scipy=e)
        worst_scipy = max(worst_scipy, e)
    # a domain that is neither R nor a pair of numbers is refused in one line, whichever way it fails to be read
    # (an int is not iterable: a TypeError inside; a pair of words: a ValueError inside)
    from attnlab.theory._inputs import refused

    t1 = torch.zeros(3, dtype=torch.float64)
    one = torch.tensor(1.0, dtype=torch.float64)
    domain_refused = all(refused(lambda d=d: ca.gaussian_density(t1, one * 0, one, d), "domain must be None/'R' or a pair")
                         for d in (5, ("a", "b"), (None, 1.0), (0.0,)))
    ok = symbolic_ok and max(worst_scipy, worst_ks, worst_A) < GAUSS_TOL and domain_refused
    return holds_if(ok, measured=dict(gaussian_density_vs_scipy=worst_scipy, kernel_softmax_vs_gaussian=worst_ks,
                                      abs_err_A=worst_A, sympy_identity=bool(symbolic_ok),
                                      bad_domains_refused=domain_refused),
                    tolerance=dict(densities=f"relative {GAUSS_TOL:g} (sup norm)", A=f"absolute {GAUSS_TOL:g}",
                                   sympy="exact"),
                    explanation="sympy: int_R exp(theta1 t + theta2 t^2) dt for theta2 < 0 gives A(f) = "
                                "-theta1^2/(4 theta2) + log(pi/(-theta2))/2 and exp(f - A) = N(t; mu, sigma2) "
                                "exactly; numerics.continuous_attention.gaussian_density vs scipy.stats.norm on R "
                                "and scipy.stats.truncnorm on [a, b] (S = [a, b], mu also outside it); "
                                "kernel_softmax of the same quadratic f on a trapezoid grid of R (step sigma/8, "
                                "mu +- 40 sigma, Q Lebesgue) vs gaussian_density and vs the sympy A; sigma2 from "
                                "1e-4 to 40; a domain that is neither R nor a pair of numbers (5, words, None, one "
                                "number) refused in one line",
                    rows=rows)


@claim("kernel.eq3.gaussian-case",
       reference="Sec. 3, Eq. 3 (f = theta^T phi(t)); Table 4 caption",
       statement="With f(t) = theta^T phi(t), phi(t) = (t, t^2), theta_2 < 0 and Q Lebesgue, Eq. 3 is an "
                 "exponential family density, the Gaussian N(t; mu, sigma^2) with mu = -theta_1/(2 theta_2), "
                 "sigma^2 = -1/(2 theta_2) and A(f) = -theta_1^2/(4 theta_2) + log(pi/(-theta_2))/2 on S = R, "
                 "and that Gaussian renormalised on S = [a, b] (continuous softmax, 'Gaussian attention').",
       method="sympy",
       vouches_for=("numerics.continuous_attention.gaussian_density", "numerics.continuous_attention.kernel_softmax"))
def _gaussian_case():
    return check_gaussian_case()


# ------------------------------------------------------------------ Sec. 4: the kernel expansion f
@claim("kernel.sec4.kernel-expansion",
       reference="Sec. 4 (f = sum_i gamma_i k(., t_i) in the RKHS of k); Cor E.3 (Gaussian k, zeta^2 > 0); "
                 "the released code (Laplace k, scale > 0)",
       statement="The library's kernel expansion is f(t) = sum_i gamma_i k(t, t_i) with the Gaussian kernel "
                 "exp(-zeta^2 (t - t_i)^2) or the Laplace kernel exp(-|t - t_i|/scale) and ||f||_H = "
                 "sqrt(gamma^T K gamma), to float64 rounding, for one or many inducing points and grid points, from "
                 "tensors, arrays or lists; it refuses zeta^2 or scale not finite and > 0, grids that are not 1-D and "
                 "gamma whose length is not the number of inducing points, with a ValueError.",
       method="float64",
       vouches_for=("numerics.kernel_family.gaussian_kernel", "numerics.kernel_family.laplace_kernel",
                    "numerics.kernel_family.kernel_expansion", "numerics.kernel_family.rkhs_norm"))
def _kernel_expansion():
    return check_kernel_expansion()


KERNEL_TOL = 1e-13


def check_kernel_expansion():
    """Against numpy transcriptions of the sums (one inducing point and one grid point included; inputs as
    torch tensors, numpy arrays and lists), and the refusals at the hypotheses' boundaries."""
    import torch

    from attnlab.numerics.kernel_family import gaussian_kernel, kernel_expansion, laplace_kernel, rkhs_norm

    rng = np.random.default_rng(11)
    dev, refused, wrong = 0.0, 0, {}
    for I, G in ((1, 1), (1, 7), (5, 1), (6, 33)):
        s, t, g = rng.uniform(-1, 2, I), np.linspace(-0.5, 1.5, G), rng.normal(size=(3, I)) * 0.3
        for zeta2, scale in ((0.5, 0.05), (40.0, 1.0)):
            kg = np.exp(-zeta2 * (t[None, :] - s[:, None]) ** 2)
            kl = np.exp(-np.abs(t[None, :] - s[:, None]) / scale)
            ks = np.exp(-zeta2 * (s[None, :] - s[:, None]) ** 2)
            norm = np.sqrt(np.maximum(np.einsum("bi,ij,bj->b", g, ks, g), 0.0))
            for conv in (torch.as_tensor, np.asarray, lambda a: a.tolist()):
                Kg, Kl = gaussian_kernel(conv(t), conv(s), zeta2), laplace_kernel(conv(t), conv(s), scale)
                f = kernel_expansion(conv(g), Kg)
                nh = rkhs_norm(conv(g), conv(s), zeta2)
                for name, got, ref in (("gaussian", Kg, kg), ("laplace", Kl, kl), ("f", f, g @ kg), ("norm", nh, norm)):
                    if not (isinstance(got, torch.Tensor) and got.dtype == torch.float64 and got.shape == ref.shape):
                        wrong[f"{name} I={I} G={G}"] = f"type/shape {type(got).__name__} {getattr(got, 'shape', None)}"
                        continue
                    dev = _worse(dev, float(np.abs(got.numpy() - ref).max() / max(np.abs(ref).max(), 1e-300)))
    t, s = torch.linspace(0, 1, 5, dtype=torch.float64), torch.tensor([0.2, 0.7], dtype=torch.float64)
    bad = [("zeta2 0", lambda: gaussian_kernel(t, s, 0.0)), ("zeta2 < 0", lambda: gaussian_kernel(t, s, -1.0)),
           ("zeta2 inf", lambda: gaussian_kernel(t, s, math.inf)), ("zeta2 NaN", lambda: gaussian_kernel(t, s, math.nan)),
           ("scale 0", lambda: laplace_kernel(t, s, 0.0)), ("scale inf", lambda: laplace_kernel(t, s, math.inf)),
           ("t 2-D (gaussian)", lambda: gaussian_kernel(t[None], s, 1.0)),
           ("inducing 2-D (gaussian)", lambda: gaussian_kernel(t, s[None], 1.0)),
           ("t 2-D (laplace)", lambda: laplace_kernel(t[None], s, 1.0)),
           ("inducing 2-D (laplace)", lambda: laplace_kernel(t, s[None], 1.0)),
           ("gamma too short", lambda: kernel_expansion(torch.ones(1, dtype=torch.float64), gaussian_kernel(t, s, 1.0))),
           ("gamma too long", lambda: kernel_expansion(torch.ones(3, dtype=torch.float64), gaussian_kernel(t, s, 1.0))),
           ("t 0-D (gaussian)", lambda: gaussian_kernel(t[0], s, 1.0)),
           ("inducing 0-D (gaussian)", lambda: gaussian_kernel(t, s[0], 1.0)),
           ("t 0-D (laplace)", lambda: laplace_kernel(t[0], s, 1.0)),
           ("inducing 0-D (laplace)", lambda: laplace_kernel(t, s[0], 1.0))]
    # 300 inducing points (beyond the integers Python keeps unique): the sizes compare by value
    s3 = torch.linspace(0, 1, 300, dtype=torch.float64)
    try:
        K3 = gaussian_kernel(t, s3, 2.0)
        f3 = kernel_expansion(torch.ones(300, dtype=torch.float64), K3)
        dev = _worse(dev, float((f3 - K3.sum(0)).abs().max() / K3.sum(0).abs().max()))
    except Exception as exc:                                           # noqa: BLE001
        wrong["I = 300"] = f"{type(exc).__name__}: {exc}"
    # a batch of gamma with the wrong last size: the message names gamma's last size and the number of points
    try:
        kernel_expansion(torch.ones(2, 5, dtype=torch.float64), gaussian_kernel(torch.linspace(0, 1, 7), s3[:4], 1.0))
        wrong["gamma (2, 5) against 4 points"] = "accepted"
    except ValueError as exc:
        if "(5)" not in str(exc) or "(4)" not in str(exc):
            wrong["gamma (2, 5) against 4 points"] = f"message does not name 5 and 4: {exc}"
    # a combination in the kernel matrix's near-null space (three inducing points 1e-8 apart): the quadratic
    # form rounds to -1.7e-18 here; the norm must stay finite and within the rounding bound sqrt(16 eps) |g|_1 of
    # the 50-digit norm
    import mpmath as mp

    rng0 = np.random.default_rng(3)
    sn = 0.5 + 1e-8 * rng0.normal(size=3)
    gn = rng0.normal(size=3)
    gn = gn - gn.mean()
    with mp.workdps(50):
        q = mp.fsum(mp.mpf(gn[i]) * mp.mpf(gn[j]) * mp.exp(-(mp.mpf(sn[i]) - mp.mpf(sn[j])) ** 2)
                    for i in range(3) for j in range(3))
        exact = float(mp.sqrt(max(q, 0)))
    got = float(rkhs_norm(torch.tensor(gn), torch.tensor(sn), 1.0))
    if not (math.isfinite(got) and got >= 0 and abs(got - exact) <= math.sqrt(16 * 2.0 ** -52) * np.abs(gn).sum()):
        wrong["rkhs_norm in the near-null space"] = f"{got!r} against {exact!r}"
    # float32 grids at bandwidths float32 cannot hold (zeta^2, 1/zeta^2, scale or 1/scale outside its range): the
    # kernel depends only on zeta^2 (t - t_i)^2 or |t - t_i| / scale, so positions scaled with the bandwidth give
    # the unit-scale kernel; each against the float64 closed form of the float32 positions, rounded to float32
    f32 = (("gaussian zeta2 1e39", "g", 1e39, 1.0), ("gaussian zeta2 1e-40", "g", 1e-40, 1e20),
           ("laplace scale 1e39", "l", 1e39, 1e38), ("laplace scale 1e-300", "l", 1e-300, 1.0))
    for label, kind, bw, c in f32:
        t32 = torch.tensor([-1.5, 0.0, 0.25, 1.0, 1.5], dtype=torch.float64).mul(c).float()
        s32 = torch.tensor([0.0, 1.0], dtype=torch.float64).mul(c).float()
        dd = t32.double().numpy()[None, :] - s32.double().numpy()[:, None]
        ref = (np.exp(-bw * dd ** 2) if kind == "g" else np.exp(-np.abs(dd) / bw)).astype(np.float32)
        try:
            got = (gaussian_kernel if kind == "g" else laplace_kernel)(t32, s32, bw)
            err = float(np.abs(got.numpy().astype(np.float64) - ref).max()) if got.dtype == torch.float32 else math.inf
        except Exception as exc:                                       # noqa: BLE001
            wrong[f"float32 {label}"] = f"{type(exc).__name__}: {exc}"
            continue
        if not err <= 2.0 ** -23:                                      # one float32 rounding of a value in [0, 1]
            wrong[f"float32 {label}"] = f"{got.dtype} off the closed form by {err!r}"
    for label, call in bad:
        try:
            call()
            wrong[label] = "accepted"
        except ValueError:
            refused += 1
        except Exception as exc:                                       # noqa: BLE001 (a crash is no refusal)
            wrong[label] = f"{type(exc).__name__}: {exc}"
    ok = dev <= KERNEL_TOL and not wrong
    return holds_if(ok, measured=dict(max_rel_deviation=dev, refused=refused, wrong=wrong or None),
                    tolerance=f"relative {KERNEL_TOL:g} against numpy; every out-of-domain input a ValueError",
                    explanation="gaussian_kernel, laplace_kernel, kernel_expansion and rkhs_norm for (I, G) in "
                                "{(1, 1), (1, 7), (5, 1), (6, 33)}, zeta^2 in {0.5, 40}, scale in {0.05, 1}, inputs "
                                "as tensors, arrays and lists, against numpy, and 300 inducing points; 16 inputs "
                                "outside the domain (0-D and 2-D positions among them), a batched gamma's refusal "
                                "naming both sizes; rkhs_norm where its quadratic form rounds below 0; float32 "
                                "kernels at zeta^2 in {1e39, 1e-40} and scale in {1e39, 1e-300} (beyond float32's "
                                "range) against the float64 closed form rounded to float32")
