"""Claim of "Kernel Multimodal Continuous Attention" (`kernel.*`) on the deformed exponential and logarithm
themselves: Eq. 5 (exp_beta, log_beta), the density map exp_{2-alpha} of Eq. 4 / Algorithm 1, the deformed
log-normaliser log_alpha of Lemma 5.3, and the derivative exp_{2-alpha}' = exp_{2-alpha}^{2-alpha} that makes
the escort weights of Lemma D.4 -- as numerics.deformed_exp (torch float64 and its mpmath twins) and
numerics.continuous_attention.escort_weights compute them, against the definitions transcribed here in
mpmath (40 digits; the derivative by mpmath's numerical differentiation of the transcription).

float64 allowances are rounding bounds with the condition number of each function: for
exp_beta(t) = b^{1/(1-beta)}, b = 1 + (1 - beta) t, a relative error eps (1 + |(1 - beta) t|)/b in b becomes
eps (1 + |(1 - beta) t|)/(b (1 - beta)) in the result; log_beta(t) = (t^{1-beta} - 1)/(1 - beta) carries an
absolute error eps (1 + t^{1-beta})/|1 - beta|.
"""
from __future__ import annotations

import math

import numpy as np

from attnlab.catalog import claim, holds_if
from attnlab.theory._inputs import refused

EPS = float(np.finfo(float).eps)
BETAS = (1.0, 0.75, 0.5, 1.0 / 3.0, 0.0, -1.0)    # beta = 2 - alpha for alpha = 1, 1.25, 1.5, 5/3, 2; and beta < 0
ALPHAS = (1.25, 1.5, 5.0 / 3.0, 2.0)


def _mp_exp_beta(t, beta):
    import mpmath as mp

    if beta == 1:
        return mp.exp(t)
    b = 1 + (1 - beta) * t
    return mp.mpf(0) if b <= 0 else b ** (1 / (1 - beta))


def _mp_log_beta(t, beta):
    import mpmath as mp

    return mp.log(t) if beta == 1 else (t ** (1 - beta) - 1) / (1 - beta)


def _exp_allowance(t, beta):
    """Relative float64 allowance of exp_beta(t): 4 eps x [1 + the rounding of b = 1 + (1 - beta) t, raised to
    1/(1 - beta): (1 + |(1 - beta) t|)/(b (1 - beta)), + the rounding of the exponent: |ln b|/(1 - beta)]."""
    if beta == 1.0:
        return 4 * EPS * (1 + abs(t))                        # exp: the rounding of t is relative eps |t| in e^t
    b = 1 + (1 - beta) * t
    return 4 * EPS * (1 + (1 + abs((1 - beta) * t)) / (b * (1 - beta)) + abs(math.log(b)) / (1 - beta))


def _log_allowance(y, beta):
    """Absolute float64 allowance of log_beta(y): 4 eps x [|log y| + 1 for beta = 1; else (1 + y^{1-beta}
    (1 + |ln y| |1 - beta|))/|1 - beta|, the last term the rounding of the exponent 1 - beta]."""
    if beta == 1.0:
        return 4 * EPS * (abs(math.log(y)) + 1)
    p = 1 - beta
    return 4 * EPS * (1 + y ** p * (1 + abs(math.log(y) * p))) / abs(p)


def check_deformed_exp():
    import mpmath as mp
    import torch

    from attnlab.numerics.continuous_attention import escort_weights
    from attnlab.numerics.deformed_exp import exp_2ma, exp_beta, log_alpha, log_beta, mp_exp_beta, mp_log_beta

    worst = dict(exp_beta=0.0, exp_2ma=0.0, log_beta=0.0, log_alpha=0.0, mp_twins=0.0, escort=0.0,
                 support_zero=0.0, round_trip=0.0)
    rows = {}
    with mp.workdps(40):
        for beta in BETAS:
            bm = mp.mpf(beta)
            # t across the support: far inside, near and at its edge t* = -1/(1 - beta) (exact in float64 for
            # beta = 0, 1/2, 3/4), outside it, and large t
            if beta == 1.0:
                ts = np.array([-700.0, -30.0, -1.0, -1e-9, 0.0, 0.5, 3.0, 80.0, 700.0])
                outside = np.array([])
            else:
                edge = -1.0 / (1.0 - beta)
                ts = np.array([edge * 0.999, edge * 0.5, -0.3, 0.0, 1e-12, 0.7, 5.0, 1e3, 1e8])
                outside = np.array([edge * 1.001, edge * 10, -1e8] + ([edge] if beta in (0.0, 0.5, 0.75, -1.0) else []))
            lib = exp_beta(torch.as_tensor(ts), beta).numpy()
            for t, v in zip(ts, lib):
                ref = _mp_exp_beta(mp.mpf(float(t)), bm)
                allow = _exp_allowance(t, beta)
                worst["exp_beta"] = max(worst["exp_beta"], float(abs(v - ref) / ref) / allow)
                worst["mp_twins"] = max(worst["mp_twins"], float(abs(mp_exp_beta(mp.mpf(float(t)), beta) - ref) / ref)
                                        / 1e-35)
            if outside.size:
                vo = exp_beta(torch.as_tensor(outside), beta).numpy()
                worst["support_zero"] = max(worst["support_zero"], float(np.abs(vo).max()) / 1e-300,
                                            max(float(abs(mp_exp_beta(mp.mpf(float(t)), beta))) for t in outside) / 1e-300)
            # log_beta on (0, oo), including t = 1 (log 1 = 0) and both extremes
            ys = np.array([1e-300, 1e-8, 0.3, 1.0 - 1e-9, 1.0, 1.5, 7.0, 1e8, 1e300])
            if beta != 1.0:
                with np.errstate(over="ignore"):
                    ys = ys[(ys ** (1 - beta) < 1e300)]
            lv = log_beta(torch.as_tensor(ys), beta).numpy()
            for y, v in zip(ys, lv):
                ref = _mp_log_beta(mp.mpf(float(y)), bm)
                allow = _log_allowance(y, beta)
                worst["log_beta"] = max(worst["log_beta"], float(abs(v - ref)) / allow)
                mref = mp_log_beta(mp.mpf(float(y)), beta)
                worst["mp_twins"] = max(worst["mp_twins"], float(abs(mref - ref)) / (1e-35 * (1 + abs(ref))))
            # round trip on the support: log_beta(exp_beta(t)) = t
            tr = np.array([-0.3, 0.0, 0.7, 5.0]) if beta != 1.0 else np.array([-30.0, 0.0, 3.0])
            back = log_beta(exp_beta(torch.as_tensor(tr), beta), beta).numpy()
            worst["round_trip"] = max(worst["round_trip"], float(np.abs(back - tr).max()) / (64 * EPS * 30))
            rows[f"beta={beta:.4g}"] = dict(exp_at=dict(zip(map(float, ts[:3]), map(float, lib[:3]))))
        # exp_{2-alpha}, log_alpha (index alpha > 1) and the escort weights exp_{2-alpha}'
        for alpha in ALPHAS:
            am = mp.mpf(alpha)
            edge = -1.0 / (alpha - 1.0)
            xs = np.array([edge * 0.999, edge * 0.5, -0.2, 0.0, 0.4, 3.0, 1e4])
            v2 = exp_2ma(torch.as_tensor(xs), alpha).numpy()
            for x, v in zip(xs, v2):
                ref = _mp_exp_beta(mp.mpf(float(x)), 2 - am)
                allow = _exp_allowance(x, 2.0 - alpha)
                worst["exp_2ma"] = max(worst["exp_2ma"], float(abs(v - ref) / ref) / allow)
            zs = np.array([1e-6, 0.2, 1.0, 2.3, 1e6])
            la = log_alpha(torch.as_tensor(zs), alpha).numpy()
            for z, v in zip(zs, la):
                ref = (mp.mpf(float(z)) ** (1 - am) - 1) / (1 - am)
                allow = _log_allowance(z, alpha)
                worst["log_alpha"] = max(worst["log_alpha"], float(abs(v - ref)) / allow)
            # escort weights at f - tau: d/dx exp_{2-alpha}(x) by mpmath's differentiation of the transcription,
            # inside the support (for alpha = 2 the derivative of relu(1 + x) is the indicator of the support)
            f = torch.as_tensor(np.array([edge * 0.9 + 0.25, 0.1, 0.25, 1.5, 4.0]))
            tau = 0.25
            ew = escort_weights(f, tau, alpha).numpy()
            for fi, v in zip(f.numpy(), ew):
                x = mp.mpf(float(fi)) - mp.mpf(tau)
                ref = mp.diff(lambda u: _mp_exp_beta(u, 2 - am), x)
                worst["escort"] = max(worst["escort"], float(abs(v - ref) / ref) / 1e-13)
            off = escort_weights(torch.as_tensor([edge - 1.0 + tau, edge * 3 + tau]), tau, alpha)   # outside: 0
            worst["escort"] = max(worst["escort"], float(off.abs().max()) / 1e-300)
    # the index domain 1 < alpha <= 2 the paper assumes throughout: alpha = 1 (the limit, not an index here), 0.5,
    # 2.5, nan and inf are refused in one line naming (1, 2]; 1 + 1e-9 and 2 are accepted
    from attnlab.numerics.deformed_exp import alpha_division

    one = torch.ones(1, dtype=torch.float64)
    domain = {f"{fn.__name__}({a!r}) refused": refused(lambda fn=fn, a=a: fn(one, a), "alpha", "(1, 2]")
              for fn in (exp_2ma, log_alpha) for a in (1.0, 0.5, 2.5, math.nan, math.inf)}
    domain["alpha_division(alpha=1) refused"] = refused(lambda: alpha_division(one, one, 1.0), "alpha", "(1, 2]")
    # the fat-tailed beta > 1 is not the paper's: exp_beta and its mpmath twin refuse it
    domain["exp_beta, mp_exp_beta at beta 1.5 refused"] = (refused(lambda: exp_beta(one, 1.5), "beta")
                                                          and refused(lambda: mp_exp_beta(0.5, 1.5), "beta must be <= 1"))
    domain["1 + 1e-9 and 2 accepted"] = bool(torch.isfinite(exp_2ma(one, 1 + 1e-9)).all()
                                             and torch.isfinite(log_alpha(one, 2.0)).all())
    ok = all(v <= 1 for v in worst.values()) and all(domain.values())
    return holds_if(ok, measured=dict(deviation_in_allowances=worst, alpha_domain=all(domain.values())), rows=rows,
                    tolerance=dict(float64="relative 4 eps x the condition number, the exponent's rounding included "
                                           "(exp_beta, exp_2ma); absolute 4 eps (1 + t^{1-beta}(1 + |ln t (1-beta)|))"
                                           "/|1-beta| (log_beta, log_alpha)",
                                   mp_twins="relative 1e-35 (40 digits)", escort="relative 1e-13",
                                   support="exactly 0 outside the support (<= 1e-300)",
                                   round_trip="log_beta(exp_beta(t)) = t within 64 eps x 30"),
                    explanation="numerics.deformed_exp (exp_beta for beta in {1, 3/4, 1/2, 1/3, 0, -1}, exp_2ma and "
                                "log_alpha for alpha in {1.25, 1.5, 5/3, 2}, log_beta, the mpmath twins mp_exp_beta "
                                "and mp_log_beta) and numerics.continuous_attention.escort_weights against Eq. 5 "
                                "transcribed in mpmath at 40 digits, t from the edge of the support (at it, just "
                                "inside, just outside) to 1e8, log from 1e-300 to 1e300; the escort weights against "
                                "mpmath's derivative of the transcribed exp_{2-alpha}; deviations in units of "
                                "their allowance (<= 1 passes); an index outside (1, 2] (and beta > 1) refused in one line")


@claim("kernel.eq5.deformed-exp-log",
       reference="Sec. 3, Eq. 4 and Eq. 5 (beta-exponential); Sec. 5.2, Lemma 5.3 (log_alpha); App. D, Lemma D.4 "
                 "(exp_{2-alpha}' = exp_{2-alpha}^{2-alpha}, the escort weights)",
       statement="exp_beta(t) = [1 + (1 - beta) t]_+^{1/(1 - beta)} (exp for beta = 1, zero off the support "
                 "1 + (1 - beta) t > 0), log_beta(t) = (t^{1-beta} - 1)/(1 - beta) (log for beta = 1) inverts it on "
                 "the support, exp_{2-alpha} (beta = 2 - alpha) is the attention's density map, log_alpha the "
                 "deformed log-normaliser (index alpha), and d/dx exp_{2-alpha}(x) = exp_{2-alpha}(x)^{2-alpha} "
                 "(the indicator of the support for alpha = 2): as the library computes them, to float64 rounding.",
       method="mpmath",
       vouches_for=("numerics.deformed_exp.exp_beta", "numerics.deformed_exp.exp_2ma",
                    "numerics.deformed_exp.log_beta", "numerics.deformed_exp.log_alpha",
                    "numerics.deformed_exp.mp_exp_beta", "numerics.deformed_exp.mp_log_beta",
                    "numerics.continuous_attention.escort_weights"))
def _deformed_exp_log():
    return check_deformed_exp()
