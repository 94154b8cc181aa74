"""Mutation harness: does the claim catalog catch faults in the code it vouches for?

Each NAMED mutation injects one fault into numerics/ or the models (a doubled trapezoid end weight, a
Newton step with the wrong sign, a transposed matrix, an off-by-one mask, a wrong constant, ...).  For
every mutation a fresh subprocess imports attnlab, applies the fault by monkeypatching (every
reference to the patched function inside attnlab is rebound, so `from X import f` copies see it too),
runs the fast claims of the affected paper(s) and reports their verdicts; nothing leaks between
mutations.  A claim *catches* a mutation when its verdict differs from the unmutated run (an error or a
skip that the unmutated run did not have counts).  A mutation no claim catches *survives*: a missing
claim.

    python benchmarks/mutations.py [--paper P] [--only NAME ...] [--json -|FILE] [--list] [--timeout S]

Not part of CI and not collected by pytest; it runs the catalog once per mutation (minutes: run it
with `nice`).  Exit status 0 whatever the score (it measures, it does not gate).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from typing import Callable

from attnlab.errors import ArgumentParser, UsageError

PAPERS = ("efa", "bidir", "fenchel", "kernel")


# ---------------------------------------------------------------------------------------------
# patching helpers (run in the child)
# ---------------------------------------------------------------------------------------------

def _rebind(old, new):
    """Point every attnlab module global that holds `old` at `new`."""
    for mod in list(sys.modules.values()):
        if mod is None or not getattr(mod, "__name__", "").startswith("attnlab"):
            continue
        for k, v in list(vars(mod).items()):
            if v is old:
                setattr(mod, k, new)


def patch(module: str, attr: str, make: Callable):
    """Replace module.attr (a function) by make(original), everywhere in attnlab."""
    import importlib

    mod = importlib.import_module(module)
    old = getattr(mod, attr)
    new = make(old)
    setattr(mod, attr, new)
    _rebind(old, new)


def patch_method(module: str, cls: str, attr: str, make: Callable):
    """Replace the method cls.attr by make(original)."""
    import importlib

    klass = getattr(importlib.import_module(module), cls)
    setattr(klass, attr, make(getattr(klass, attr)))


# ---------------------------------------------------------------------------------------------
# the mutations
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Mutation:
    name: str
    papers: tuple
    where: str
    fault: str
    apply: Callable[[], None]


MUTATIONS: list[Mutation] = []


def mutation(name, papers, where, fault):
    def deco(fn):
        MUTATIONS.append(Mutation(name, tuple(papers), where, fault, fn))
        return fn
    return deco


# --- Fenchel-dual attention ---------------------------------------------------------------------

ED, EO = "attnlab.numerics.entropic_dual", "attnlab.numerics.entropic_ot"


@mutation("fenchel-newton-step-sign", ["fenchel"], f"{ED}.solve_dual_newton",
          "the Newton step solves H s = -g (wrong sign), in whichever linear solver the iteration calls")
def _():
    import importlib
    import types

    import numpy as np

    ed = importlib.import_module(ED)
    linalg = types.SimpleNamespace(**{k: getattr(np.linalg, k) for k in dir(np.linalg) if not k.startswith("_")})
    linalg.solve = lambda a, b: -np.linalg.solve(a, b)
    proxy = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    proxy.linalg = linalg
    ed.np = proxy
    if hasattr(ed, "lapack"):                       # a LAPACK call (dposv) in place of np.linalg.solve
        real = ed.lapack.dposv
        lp = types.SimpleNamespace(**{k: getattr(ed.lapack, k) for k in dir(ed.lapack) if not k.startswith("_")})

        def dposv(a, b, *args, **kw):
            c, x, info = real(a, b, *args, **kw)
            return c, -x, info

        lp.dposv = dposv
        ed.lapack = lp


@mutation("fenchel-logmgf-drops-u", ["fenchel"], f"{ED}.log_mgf", "log M (8) without the weights u")
def _():
    from scipy.special import logsumexp
    patch(ED, "log_mgf", lambda old: lambda lam, T, u: float(logsumexp(T @ lam)))


@mutation("fenchel-recovery-drops-u", ["fenchel"], f"{ED}.tilted", "recovery (9) p = softmax(T lambda), no log u")
def _():
    from scipy.special import softmax
    patch(ED, "tilted", lambda old: lambda lam, T, u: softmax(T @ lam))


@mutation("fenchel-eq16-drops-alpha", ["fenchel"], f"{ED}.h_approx", "(16) evaluated at lambda = z, not alpha z")
def _():
    import numpy as np
    patch(ED, "h_approx", lambda old: lambda T, u, z, alpha: old(T, u, np.asarray(z, float), 1.0))


@mutation("fenchel-eq13-sign", ["fenchel"], f"{ED}.lambda_refined", "(13) with (I - alpha Sigma)^-1")
def _():
    import numpy as np

    def make(old):
        def refined(T, u, z, alpha):
            from attnlab.numerics.entropic_dual import moments
            _, S = moments(np.asarray(T, float), np.asarray(u, float))
            return alpha * np.linalg.solve(np.eye(S.shape[0]) - alpha * S, np.asarray(z, float))
        return refined
    patch(ED, "lambda_refined", make)


@mutation("fenchel-sigma-uncentred", ["fenchel"], f"{ED}.moments", "Sigma returned as the second moment (no centring)")
def _():
    import numpy as np

    def make(old):
        def moments(T, u):
            mu, S = old(T, u)
            return mu, S + np.outer(mu, mu)
        return moments
    patch(ED, "moments", make)


@mutation("fenchel-dual-objective-half", ["fenchel"], f"{ED}.dual_objective", "(7) with ||lambda||^2/alpha (the 1/2 dropped)")
def _():
    def make(old):
        def dual(lam, T, u, z, alpha):
            return old(lam, T, u, z, alpha) - lam @ lam / (2 * alpha)
        return dual
    patch(ED, "dual_objective", make)


@mutation("fenchel-eq33-printed-index", ["fenchel"], f"{EO}.conjugate", "(33) with the printed index p(t), not p(t')")
def _():
    from scipy.special import logsumexp

    def make(old):
        from attnlab.numerics.entropic_ot import entropy

        def conj(g, u, M, gamma):
            keep = u > 0
            inner = logsumexp((g[keep][None, :] - M[:, keep]) / gamma, axis=0)
            return float(gamma * (entropy(u) + u[keep] @ inner))
        return conj
    patch(EO, "conjugate", make)


@mutation("fenchel-prop1-wrong-axis", ["fenchel"], f"{EO}.prop1_true_preference",
          "(37) normalised over the wrong index (softmax over t' instead of t)")
def _():
    from scipy.special import softmax
    patch(EO, "prop1_true_preference", lambda old: lambda u, M, gamma: softmax(-M / gamma, axis=1) @ u)


@mutation("fenchel-eq22-drops-gamma", ["fenchel"], f"{EO}.ot_attention", "(22) with gamma = 1 in the exponent")
def _():
    patch(EO, "ot_attention", lambda old: lambda A, u, M, z, gamma, alpha: old(A, u, M, z, 1.0, alpha))


@mutation("fenchel-layer-scale", ["fenchel"], "attnlab.numerics.fenchel_attention.fenchel_attention",
          "default template scale 1/E instead of 1/sqrt(E)")
def _():
    def make(old):
        def fa(query, key, value, alpha=1.0, log_u=None, attn_mask=None, scale=None, **kw):
            scale = 1.0 / query.shape[-1] if scale is None else scale
            return old(query, key, value, attn_mask=attn_mask, scale=scale, alpha=alpha, log_u=log_u, **kw)
        return fa
    patch("attnlab.numerics.fenchel_attention", "fenchel_attention", make)


@mutation("fenchel-otvit-cost-sign", ["fenchel"], "attnlab.experiments.models.fenchel_vit.ot_attention_weights",
          "OT-ViT layer with M = +a^T b + C (the inner product's sign flipped)")
def _():
    import math

    import torch

    def make(old):
        def w(qk, G, a_mask, u, gamma):
            s = (qk.unsqueeze(2) - G.unsqueeze(1)) / gamma
            s = s.masked_fill(~a_mask[:, None, None, :], -math.inf)
            return (u[:, None, :, None] * torch.softmax(s, dim=-1)).sum(2)
        return w
    patch("attnlab.experiments.models.fenchel_vit", "ot_attention_weights", make)


# --- EFA ------------------------------------------------------------------------------------------

EFA_MODELS, EFA_ATT, EXPFAM = ("attnlab.experiments.models.efa", "attnlab.numerics.efa_attention",
                               "attnlab.numerics.expfam")


@mutation("efa-causal-mask-off-by-one", ["efa"], f"{EFA_MODELS}.AttentionStack.allowed",
          "unidirectional mask tril(1): each position also sees the next one")
def _():
    import torch

    def make(old):
        def allowed(self, valid):
            a = valid[:, None, :].expand(-1, valid.shape[1], -1)
            if self.direction == "unidirectional":
                I = valid.shape[1]
                a = a & torch.ones(I, I, dtype=torch.bool, device=valid.device).tril(1)
            return a
        return allowed
    patch_method(EFA_MODELS, "AttentionStack", "allowed", make)


@mutation("efa-softmax-wrong-axis", ["efa"], f"{EFA_ATT}.AttentionLayer._normalize",
          "attention softmax over outputs (dim -2) instead of contexts: the transposed normalisation")
def _():
    import torch

    def make(old):
        def normalize(self, s, allowed):
            if self.attention == "softmax":
                w = torch.softmax(s.masked_fill(~allowed, -1e30), dim=-2)
                return w.masked_fill(~allowed, 0.0)
            return old(self, s, allowed)
        return normalize
    patch_method(EFA_ATT, "AttentionLayer", "_normalize", make)


@mutation("efa-scores-transposed", ["efa"], f"{EFA_ATT}.AttentionLayer.scores",
          "scores s[i, j] read transposed (q_j . k_i and q_i . k_j swapped)")
def _():
    def make(old):
        return lambda self, Z: old(self, Z).transpose(-1, -2)
    patch_method(EFA_ATT, "AttentionLayer", "scores", make)


@mutation("efa-gaussian-log-partition", ["efa"], f"{EXPFAM}.Gaussian.log_partition",
          "A(eta) = sigma2 eta^2 (the 1/2 dropped)")
def _():
    patch_method(EXPFAM, "Gaussian", "log_partition", lambda old: lambda self, eta: self.sigma2 * eta ** 2)


@mutation("efa-bernoulli-log-partition-sign", ["efa"], f"{EXPFAM}.Bernoulli.log_partition",
          "A(eta) = softplus(-eta)")
def _():
    import torch.nn.functional as F
    patch_method(EXPFAM, "Bernoulli", "log_partition", lambda old: lambda self, eta: F.softplus(-eta))


@mutation("efa-poisson-log-partition", ["efa"], f"{EXPFAM}.PoissonV1.log_partition",
          "A(eta) = exp(eta) + eta (a spurious linear term)")
def _():
    import torch
    patch_method(EXPFAM, "PoissonV1", "log_partition", lambda old: lambda self, eta: torch.exp(eta) + eta)


# --- bidirectional attention as a mixture of word experts ---------------------------------------

BIDIR = "attnlab.experiments.models.bidir"


@mutation("bidir-WKQ-transposed", ["bidir"], f"{BIDIR}.moe_parameters",
          "Lemma 1's W^KQ built as W^Q^T W^K (transposed)")
def _():
    def make(old):
        def moe(model):
            P = old(model)
            return dataclasses.replace(P, W_KQ=P.W_KQ.transpose(-1, -2).clone())
        return moe
    patch(BIDIR, "moe_parameters", make)


@mutation("bidir-residual-dropped", ["bidir"], f"{BIDIR}.moe_parameters",
          "Lemma 1's W^l = W'' W' even with the residual (I + W' expected)")
def _():
    import torch

    def make(old):
        def moe(model):
            P = old(model)
            if not model.residual:
                return P
            with torch.no_grad():
                W_l = model.W2 @ model.W1[0]
                W_LOV = W_l @ model.WO[0].transpose(-1, -2) @ model.WV[0]
            return dataclasses.replace(P, W_l=W_l.clone(), W_LOV=W_LOV.clone())
        return moe
    patch(BIDIR, "moe_parameters", make)


@mutation("bidir-attention-no-sqrt", ["bidir"], f"{BIDIR}.BidirAttentionMLM._layer",
          "attention logits without 1/sqrt(d_w)")
def _():
    import torch

    def make(old):
        def layer(self, h, l):
            q = torch.einsum("bsp,hdp->bhsd", h, self.WQ[l])
            k = torch.einsum("bsp,hdp->bhsd", h, self.WK[l])
            A = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
            v = torch.einsum("bsp,hdp->bhsd", h, self.WV[l])
            z = torch.einsum("bhsd,hdp->bsp", A @ v, self.WO[l])
            zp = h + z if self.residual else z
            zpp = zp + zp @ self.W1[l].T if self.residual else zp @ self.W1[l].T
            return zpp, A
        return layer
    patch_method(BIDIR, "BidirAttentionMLM", "_layer", make)


@mutation("bidir-mask-id-off-by-one", ["bidir"], f"{BIDIR}.mask_sentences",
          "the [MASK] id written as |V| - 1 (a real word) instead of |V|")
def _():
    def make(old):
        def mask(tokens, m, vocab_size):
            x = tokens.clone()
            x.scatter_(1, m[:, None], vocab_size - 1)
            return x
        return mask
    patch(BIDIR, "mask_sentences", make)


@mutation("bidir-gate-softmax-dim", ["bidir"], f"{BIDIR}.CBOWMoE.gate",
          "the MoE gate normalised over the batch instead of over positions")
def _():
    import torch

    def make(old):
        return lambda self, x, m: torch.softmax(self.gate_logits(x, m), dim=0)
    patch_method(BIDIR, "CBOWMoE", "gate", make)


# --- kernel multimodal continuous attention -----------------------------------------------------

QUAD, DEF, CA, KF, TS = ("attnlab.numerics.quadrature", "attnlab.numerics.deformed_exp",
                         "attnlab.numerics.continuous_attention", "attnlab.numerics.kernel_family",
                         "attnlab.numerics.tsallis")


@mutation("kernel-trapezoid-end-weights-doubled", ["kernel"], f"{QUAD}.trapezoid_weights",
          "trapezoid weights with doubled end weights (an O(h) error)")
def _():
    def make(old):
        def w(t):
            w = old(t).clone()
            w[0] *= 2
            w[-1] *= 2
            return w
        return w
    patch(QUAD, "trapezoid_weights", make)


@mutation("kernel-deformed-exp-constant", ["kernel"], f"{DEF}.exp_beta",
          "exp_beta(t) = [1 + (1 - beta) t / 2]_+^(1/(1-beta)) (a wrong constant)")
def _():
    import torch

    def make(old):
        def exp_beta(t, beta):
            beta = float(beta)
            if beta == 1.0:
                return old(t, beta)
            t = t if isinstance(t, torch.Tensor) else torch.as_tensor(t, dtype=torch.float64)
            return torch.relu(1.0 + 0.5 * (1.0 - beta) * t) ** (1.0 / (1.0 - beta))
        return exp_beta
    patch(DEF, "exp_beta", make)


@mutation("kernel-log-alpha-sign", ["kernel"], f"{DEF}.log_beta", "log_beta(t) = (1 - t^(1-beta))/(1-beta)")
def _():
    patch(DEF, "log_beta", lambda old: lambda t, beta: -old(t, beta) if float(beta) != 1.0 else old(t, beta))


@mutation("kernel-softmax-shift-sign", ["kernel"], f"{CA}.kernel_softmax",
          "kernel softmax with the max shift added, A(f) = log Z - max f")
def _():
    def make(old):
        def ks(f, t, log_q0=None):
            dens, A = old(f, t, log_q0)
            g = f if log_q0 is None else f + log_q0
            return dens, A - 2 * g.max(-1).values.detach()
        return ks
    patch(CA, "kernel_softmax", make)


@mutation("kernel-gaussian-kernel-bandwidth", ["kernel"], f"{KF}.gaussian_kernel",
          "k(t, t_i) = exp(-zeta2 (t - t_i)^2 / 2)")
def _():
    patch(KF, "gaussian_kernel", lambda old: lambda t, inducing, zeta2: old(t, inducing, zeta2 / 2))


@mutation("kernel-gaussian-density-std", ["kernel"], f"{CA}.gaussian_density",
          "N(t; mu, sigma2) with sigma2 read as the standard deviation")
def _():
    import torch
    patch(CA, "gaussian_density", lambda old: lambda t, mu, sigma2, domain=None:
          old(t, mu, torch.as_tensor(sigma2, dtype=torch.float64) ** 2, domain))


@mutation("kernel-tsallis-gradient-exponent", ["kernel"], f"{TS}.tsallis_gradient",
          "Eq. 16 with p^alpha instead of p^(alpha-1)")
def _():
    patch(TS, "tsallis_gradient", lambda old: lambda p, alpha: p ** alpha / (alpha - 1.0))


@mutation("kernel-threshold-off", ["kernel"], f"{CA}.kernel_deformed_threshold",
          "the threshold tau returned off by 0.01 (the density itself unchanged)")
def _():
    def make(old):
        def th(f, t, alpha, q0=None, iters=200):
            dens, tau = old(f, t, alpha, q0, iters)
            return dens, tau + 0.01
        return th
    patch(CA, "kernel_deformed_threshold", make)


# ---------------------------------------------------------------------------------------------
# child: apply one mutation, run the fast claims, print verdicts as JSON
# ---------------------------------------------------------------------------------------------

def child(name: str, papers: list[str]) -> int:
    from attnlab import catalog

    catalog.discover()
    if name != "none":
        next(m for m in MUTATIONS if m.name == name).apply()
    out = {}
    for p in papers:
        for c in catalog.all_claims(p, "fast"):
            r = catalog.run_claim(c)
            out[c.id] = r.verdict
    print("MUTATION-RESULT " + json.dumps(out))
    return 0


def run_child(name: str, papers, timeout: float):
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONWARNINGS="ignore")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--papers", ",".join(papers)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - t0, "timeout"
    for line in proc.stdout.splitlines():
        if line.startswith("MUTATION-RESULT "):
            return json.loads(line[len("MUTATION-RESULT "):]), time.perf_counter() - t0, ""
    return None, time.perf_counter() - t0, (proc.stderr.strip().splitlines() or ["no output"])[-1]


def main(argv=None) -> int:
    ap = ArgumentParser(prog="benchmarks/mutations.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--paper", choices=PAPERS, help="only the mutations of this paper")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="only these mutations")
    ap.add_argument("--json", metavar="FILE", help="write the report as JSON ('-' for stdout)")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per mutation run (default 900)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--papers", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return child(a.child, a.papers.split(","))
    muts = [m for m in MUTATIONS if (a.paper is None or a.paper in m.papers)]
    if a.only:
        unknown = sorted(set(a.only) - {m.name for m in MUTATIONS})
        if unknown:
            raise UsageError(f"--only: unknown mutation(s) {', '.join(unknown)}; see --list")
        muts = [m for m in muts if m.name in a.only]
    if a.list:
        for m in muts:
            print(f"{m.name:40s} {','.join(m.papers):8s} {m.fault}")
        return 0
    papers = sorted({p for m in muts for p in m.papers})
    log = sys.stderr if a.json == "-" else sys.stdout
    baseline, secs, err = run_child("none", papers, a.timeout)
    if baseline is None:
        print(f"the unmutated run gave no verdicts: {err}", file=sys.stderr)
        return 1
    print(f"unmutated: {len(baseline)} fast claims of {', '.join(papers)} in {secs:.0f}s", file=log)
    rows = []
    for m in muts:
        res, secs, err = run_child(m.name, m.papers, a.timeout)
        if res is None:
            caught = [f"(run: {err})"]
        else:
            caught = sorted(cid for cid, v in res.items() if v != baseline.get(cid))
        rows.append(dict(name=m.name, papers=list(m.papers), where=m.where, fault=m.fault, caught_by=caught,
                         verdicts={cid: res[cid] for cid in caught if res and cid in res}, seconds=round(secs, 1)))
        print(f"{m.name:40s} {len(caught):3d} verdict(s) changed  ({secs:.0f}s)", file=log)
    # a claim whose unmutated verdict changes between the first and a second run (flaky, or code edited
    # meanwhile) catches nothing
    again, _, _ = run_child("none", papers, a.timeout)
    unstable = sorted(cid for cid in baseline if again is None or again.get(cid) != baseline[cid])
    # so does a claim that the first unmutated run did not have (registered while the harness ran)
    new_ids = sorted(set(again or {}) - set(baseline))
    ignore = set(unstable) | set(new_ids)
    if unstable or new_ids:
        print(f"ignored: unstable without mutation: {', '.join(unstable) or 'none'}; not in the first "
              f"unmutated run: {', '.join(new_ids) or 'none'}", file=log)
    for r in rows:
        r["caught_by"] = [c for c in r["caught_by"] if c not in ignore
                          and (c in baseline or c.startswith("(run"))]
        r["verdicts"] = {c: v for c, v in r["verdicts"].items() if c in r["caught_by"]}
    for r in rows:
        c = r["caught_by"]
        print(f"{r['name']:40s} {'caught by ' + str(len(c)) if c else 'SURVIVED':>14s}"
              + (f"  {', '.join(c[:4])}{' ...' if len(c) > 4 else ''}" if c else ""), file=log)
    survivors = [r["name"] for r in rows if not r["caught_by"]]
    score = dict(caught=len(rows) - len(survivors), total=len(rows))
    print(f"score: {score['caught']}/{score['total']} caught; survivors: {', '.join(survivors) or 'none'}", file=log)
    if a.json:
        text = json.dumps(dict(score=score, survivors=survivors, unstable=unstable, unmutated=baseline,
                               mutations=rows), indent=2)
        if a.json == "-":
            print(text)
        else:
            with open(a.json, "w") as f:
                f.write(text + "\n")
    return 0


if __name__ == "__main__":
    from attnlab.cli import call

    raise SystemExit(call(main, sys.argv[1:]))
