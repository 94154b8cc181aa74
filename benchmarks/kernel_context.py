"""Benchmark: the batched torch context vector c = B E_p[psi] (attnlab.numerics.continuous_attention) against
per-example scipy.integrate.quad at matched accuracy (1e-8), and against the closed forms of the
unimodal baselines (Gaussian, truncated parabola).  Prints ratios measured side by side in one run.

    python benchmarks/kernel_context.py [--batch 64] [--seed 0]

Setting (kernel softmax, the paper's Cor E.3 setting on R): q0 = N(0, 1) pdf, Gaussian kernel with
zeta2 = 10 and I = 10 inducing points on [0, 1], gamma ~ U(-1, 1), N = 16 Gaussian RBFs (sigma = 0.1)
on [0, 1], D = 4.  torch uses the coarsest h in {1/4, 1/8, ...} whose max error against quad is
<= 1e-8; quad integrates Z and the N basis integrals of every example (epsabs = epsrel = 1e-11).
The truncated parabola has kinks at mu +- r: its integrals run over the support on a shared reference
grid (t = mu + r s, s in [-1, 1]), with and without the Euler-Maclaurin end correction.
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from attnlab.errors import ArgumentParser, UsageError  # noqa: E402
from attnlab.run_args import MAX_SEED, seed_value  # noqa: E402
from attnlab.numerics import continuous_attention as ca  # noqa: E402
from attnlab.numerics.kernel_family import gaussian_kernel, kernel_expansion  # noqa: E402
from attnlab.numerics.quadrature import real_line_grid, trapezoid, uniform_grid  # noqa: E402


def _best_time(fn, repeat=5):
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv=None) -> int:
    ap = ArgumentParser(prog="benchmarks/kernel_context.py", description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=seed_value, default=0, help=f"seed of the random instance (0..{MAX_SEED}; default 0)")
    args = ap.parse_args(argv)
    if args.batch < 1:
        raise UsageError(f"--batch must be an integer >= 1; got {args.batch}")
    torch.set_num_threads(1)
    from scipy.integrate import quad

    rng = np.random.default_rng(args.seed)
    b, I, N, D, zeta2 = args.batch, 10, 16, 4, 10.0
    ti = np.linspace(0, 1, I)
    gam = rng.uniform(-1, 1, (b, I))
    B = rng.uniform(-1, 1, (D, N))
    cen, wid = np.linspace(0, 1, N), np.full(N, 0.1)
    phi = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)

    # ---- per-example scipy quad (reference and timing)
    def quad_all():
        out = np.empty((b, D))
        for e in range(b):
            f = lambda x: math.exp(float(np.exp(-zeta2 * (x - ti) ** 2) @ gam[e])) * phi(x)
            pts = dict(epsabs=1e-11, epsrel=1e-11, limit=200)
            Z = quad(f, -np.inf, np.inf, **pts)[0]
            # psi_n is below e^-72 outside c +- 12 sigma
            r = [quad(lambda x, c=c, s=s: f(x) * math.exp(-((x - c) / s) ** 2 / 2) / (s * math.sqrt(2 * math.pi)),
                      c - 12 * s, c + 12 * s, **pts)[0] for c, s in zip(cen, wid)]
            out[e] = B @ (np.array(r) / Z)
        return out

    t_quad, c_quad = _best_time(quad_all, repeat=1)

    # ---- batched torch trapezoid on R
    g_t = torch.tensor(gam)
    B_t = torch.tensor(B)

    def torch_ctx(h):
        t = real_line_grid(h, 12.0)
        f = kernel_expansion(g_t, gaussian_kernel(t, torch.tensor(ti), zeta2))
        dens, _ = ca.kernel_softmax(f, t, log_q0=-t * t / 2)
        return ca.context_vector(dens, t, ca.gaussian_rbf(t, torch.tensor(cen), torch.tensor(wid)), B_t).numpy()

    h, err = 0.25, math.inf
    while True:
        err = float(np.abs(torch_ctx(h) - c_quad).max())
        if err <= 1e-8 or h < 1e-3:
            break
        h /= 2
    t_torch, _ = _best_time(lambda: torch_ctx(h))
    print(f"kernel softmax on R, batch {b}: torch trapezoid h = {h:g} ({len(real_line_grid(h, 12.0))} nodes), "
          f"max |c_torch - c_quad| = {err:.2e}")
    print(f"  scipy quad per example: {t_quad * 1e3:9.1f} ms")
    print(f"  batched torch:          {t_torch * 1e3:9.3f} ms")
    print(f"  speed-up (quad / torch): {t_quad / t_torch:8.0f}x   (target >= 100x)")

    # ---- closed forms: Gaussian (continuous softmax) and truncated parabola (continuous sparsemax)
    mu = torch.tensor(rng.uniform(0.2, 0.8, b))
    s2 = torch.tensor(rng.uniform(0.01, 0.2, b))
    cen_t, wid_t = torch.tensor(cen), torch.tensor(wid)
    tg = real_line_grid(1.0 / 64, 12.0)
    dens = ca.gaussian_density(tg, mu, s2)
    c_grid = ca.context_vector(dens, tg, ca.gaussian_rbf(tg, cen_t, wid_t), B_t)
    c_cf = ca.gaussian_rbf_expectation(mu, s2, cen_t, wid_t) @ B_t.T
    print(f"continuous softmax (Gaussian), batch {b}: max |torch trapezoid (h = 1/64 on R) - closed form| = "
          f"{float((c_grid - c_cf).abs().max()):.2e}   (target 1e-10)")
    # truncated parabola: the density has kinks at mu +- r, so integrate over its support with a shared
    # reference grid s in [-1, 1]: int g(t) dt = r int g(mu + r s) ds
    r = ca.truncated_parabola_radius(mu, s2)
    G = 20001
    s = uniform_grid(-1.0, 1.0, G)
    t_b = mu[:, None] + r[:, None] * s                                      # [b, G]
    p_b = torch.relu((r[:, None] ** 2 - (t_b - mu[:, None]) ** 2) / (2 * s2[:, None]))

    def psi(t):
        return torch.exp(-((t[..., None, :] - cen_t[:, None]) / wid_t[:, None]) ** 2 / 2) / (
            wid_t[:, None] * math.sqrt(2 * math.pi))

    e_grid = trapezoid(psi(t_b) * p_b[:, None, :], s) * r[:, None]           # [b, N]
    # Euler-Maclaurin end correction: the error is (h^2/12)(g'(b) - g'(a)) + O(h^4) with g = p psi,
    # and p = 0 at the ends, so g'(mu +- r) = -+ (r/sigma^2) psi(mu +- r)
    h_t = r * 2.0 / (G - 1)
    ends = psi(torch.stack([mu + r, mu - r], -1))                           # [b, N, 2]
    dg = -(r / s2)[:, None] * ends.sum(-1)
    e_corr = e_grid - (h_t ** 2 / 12)[:, None] * dg
    c_cf = ca.truncated_parabola_rbf_expectation(mu, s2, cen_t, wid_t) @ B_t.T
    print(f"continuous sparsemax (truncated parabola), batch {b}, torch trapezoid on the support (G = {G}): "
          f"max |trapezoid - closed form| = {float((e_grid @ B_t.T - c_cf).abs().max()):.2e}; with the "
          f"Euler-Maclaurin end correction: {float((e_corr @ B_t.T - c_cf).abs().max()):.2e}   (target 1e-10)")
    return 0


if __name__ == "__main__":
    from attnlab.cli import call

    raise SystemExit(call(main, sys.argv[1:]))
