"""The toy corpus of App. I (|V| = 12, sentences of length 5) and the Sec. 4.2 / App. G.1 check of
Prop 9 on it; `attnlab run bidir-toy-corpus`.

Corpus (App. I): subjects mathematics, statistics, sociology, history with adjective scores
(fun, boring, easy, difficult) = (4,2,4,2), (6,0,5,1), (1,5,2,4), (0,6,0,6).  A sentence type is
drawn uniformly from three:
  1. "I like subj1 and subj2", subj1, subj2 iid with probabilities (4, 5, 1, 1)/11;
  2. "subj1 and subj2 is adj", subj1, subj2 iid uniform, adj proportional to score(subj1)+score(subj2);
  3. "subj is adj1 and adj2", subj uniform, adj1, adj2 iid proportional to score(subj).
The sentence distribution is finite, so it is given exactly (`sentence_distribution`, Fractions)
together with its population co-occurrence matrix (`population_cooccurrence`).

Experiment: for each embedding dimension p in {30, 100, 300, 900} train
  * CBOW with a full softmax, context = the whole sentence but the center (4 words, averaged);
  * the attention objective of Eq. (1) (App. G.2: no residuals, no positions; `AttentionCBOW`),
on every masking instance of a 10,000-sentence corpus, then correlate the learned w_i^T c_j with
  * Prop 9's targets: (1) Spearman with p(w_i,c_j)/p(c_j) over all (i, j); (2) Pearson with
    M_ij = log(p(w_i,c_j)/p(c_j)) + log|V| over the cells where it is defined (the paper reports
    (0.74, 0.77, 0.77, 0.77) and (0.67, 0.71, 0.70, 0.71) for CBOW, Sec. 4.2);
  * Prop 14's target, Eq. (2), computed from the learned tau (Spearman and Pearson), and
    N_ij = log(pbar(w_i,c_j)/pbar(c_j)) + log|V| (Pearson) -- not reported in the paper.
p is estimated from the training corpus counts, as in the paper.  The paper does not give the
optimizer, learning rate, epochs, initialisation or seed; ours (CONFIG) is full-batch L-BFGS
from N(0, 0.1^2) (docs/instances.md).
"""
from __future__ import annotations

from attnlab.errors import UsageError, strict_int

import functools
import itertools
import math
from fractions import Fraction

import numpy as np

VOCAB = ("I", "like", "and", "is", "mathematics", "statistics", "sociology", "history",
         "fun", "boring", "easy", "difficult")
IDX = {w: i for i, w in enumerate(VOCAB)}
MAX_SENTENCES = 10_000_000     # --sentences: the corpus and its masking instances are held in memory
SUBJECTS = VOCAB[4:8]
ADJECTIVES = VOCAB[8:12]
SCORES = {"mathematics": (4, 2, 4, 2), "statistics": (6, 0, 5, 1),
          "sociology": (1, 5, 2, 4), "history": (0, 6, 0, 6)}
TYPE1_SUBJECT_PROBS = (Fraction(4, 11), Fraction(5, 11), Fraction(1, 11), Fraction(1, 11))
N_SENTENCES, SENTENCE_LENGTH, V = 10_000, 5, len(VOCAB)

# The paper's numbers (Sec. 4.2), CBOW only; keys as written by main() into the records.
TOY_PAPER_NUMBERS = {
    **{("bidir-toy-corpus", f"p={p}", "CBOW", "spearman_prop9_ratio"): v
       for p, v in zip((30, 100, 300, 900), (0.74, 0.77, 0.77, 0.77))},
    **{("bidir-toy-corpus", f"p={p}", "CBOW", "pearson_prop9_M"): v
       for p, v in zip((30, 100, 300, 900), (0.67, 0.71, 0.70, 0.71))},
}

CONFIG = dict(dims=[30, 100, 300, 900], n_sentences=N_SENTENCES,
              optimizer="L-BFGS (strong Wolfe, history 50), full batch", steps=1000, init_std=0.1, batch="full (weighted distinct instances)",
              masking="every position of every sentence (S tasks per sentence)", dtype="float64")
CONFIG_QUICK = dict(CONFIG, dims=[30], steps=100)
#: the largest embedding dimension --dims takes (the paper's is 900; 100,000,000 ran without end)
MAX_DIM = 10000


# --------------------------------------------------------------------------- exact distribution
def sentence_distribution() -> dict[tuple[int, ...], Fraction]:
    """Every sentence of App. I (as token ids) with its exact probability (sums to 1)."""
    dist: dict[tuple[int, ...], Fraction] = {}
    third = Fraction(1, 3)

    def add(words, prob):
        if prob:
            key = tuple(IDX[w] for w in words)
            dist[key] = dist.get(key, Fraction(0)) + prob

    for (s1, q1), (s2, q2) in itertools.product(zip(SUBJECTS, TYPE1_SUBJECT_PROBS), repeat=2):
        add(("I", "like", s1, "and", s2), third * q1 * q2)
    for s1, s2 in itertools.product(SUBJECTS, repeat=2):
        for a, adj in enumerate(ADJECTIVES):
            w = Fraction(SCORES[s1][a] + SCORES[s2][a], sum(SCORES[s1]) + sum(SCORES[s2]))
            add((s1, "and", s2, "is", adj), third * Fraction(1, 16) * w)
    for s in SUBJECTS:
        tot = sum(SCORES[s])
        for (a1, j1), (a2, j2) in itertools.product(enumerate(ADJECTIVES), repeat=2):
            w = Fraction(SCORES[s][a1], tot) * Fraction(SCORES[s][a2], tot)
            add((s, "is", j1, "and", j2), third * Fraction(1, 4) * w)
    return dist


def population_cooccurrence(dist: dict | None = None) -> list[list[Fraction]]:
    """Exact joint p(w_i, c_j): over sentences and center positions m, the S-1 ordered
    (center, context) pairs, weighted by the sentence probability; normalised to sum 1."""
    dist = sentence_distribution() if dist is None else dist
    P = [[Fraction(0)] * V for _ in range(V)]
    per = Fraction(1, SENTENCE_LENGTH * (SENTENCE_LENGTH - 1))
    for sent, pr in dist.items():
        for m, j in itertools.permutations(range(SENTENCE_LENGTH), 2):
            P[sent[m]][sent[j]] += pr * per
    return P


# --------------------------------------------------------------------------- sampling
def sample_corpus(n: int = N_SENTENCES, rng: np.random.Generator | None = None) -> np.ndarray:
    """n sentences (n, 5) of token ids drawn by App. I's generative process."""
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n must be an integer >= 1; got {n!r}")
    if rng is None or not isinstance(rng, np.random.Generator):
        raise ValueError("rng must be a numpy.random.Generator")
    subj = np.array([IDX[s] for s in SUBJECTS])
    adj = np.array([IDX[a] for a in ADJECTIVES])
    sc = np.array([SCORES[s] for s in SUBJECTS], dtype=float)                  # (4 subjects, 4 adj)
    q1 = np.array([float(q) for q in TYPE1_SUBJECT_PROBS])
    out = np.empty((n, SENTENCE_LENGTH), dtype=np.int64)
    types = rng.integers(0, 3, size=n)
    for i, t in enumerate(types):
        if t == 0:
            a, b = rng.choice(4, size=2, p=q1)
            out[i] = (IDX["I"], IDX["like"], subj[a], IDX["and"], subj[b])
        elif t == 1:
            a, b = rng.integers(0, 4, size=2)
            w = sc[a] + sc[b]
            j = rng.choice(4, p=w / w.sum())
            out[i] = (subj[a], IDX["and"], subj[b], IDX["is"], adj[j])
        else:
            a = rng.integers(0, 4)
            j1, j2 = rng.choice(4, size=2, p=sc[a] / sc[a].sum())
            out[i] = (subj[a], IDX["is"], adj[j1], IDX["and"], adj[j2])
    return out


def cooccurrence_counts(corpus: np.ndarray) -> np.ndarray:
    """#(w_i, c_j) (V, V): ordered (center, context) pairs within each sentence."""
    corpus = np.asarray(corpus)
    if corpus.ndim != 2 or corpus.min() < 0 or corpus.max() >= V:
        raise ValueError(f"corpus must be an (n, S) array of token ids in [0, {V - 1}]")
    n = np.zeros((V, V))
    S = corpus.shape[1]
    for m, j in itertools.permutations(range(S), 2):
        np.add.at(n, (corpus[:, m], corpus[:, j]), 1.0)
    return n


def masking_instances(corpus: np.ndarray):
    """Distinct (masked sentence, m, b) instances with their counts: every position of every
    sentence masked in turn (S tasks per sentence, App. G.2).  Returns (x, m, b, weight) numpy arrays
    with x holding the [MASK] id V at position m."""
    corpus = np.asarray(corpus)
    S = corpus.shape[1]
    rows = np.concatenate([np.concatenate([corpus, np.full((len(corpus), 1), m)], 1) for m in range(S)])
    uniq, cnt = np.unique(rows, axis=0, return_counts=True)
    tokens, m = uniq[:, :S], uniq[:, S]
    b = tokens[np.arange(len(m)), m]
    x = tokens.copy()
    x[np.arange(len(m)), m] = V
    return x, m, b, cnt.astype(float)


def loss_floor(x, b, w) -> float:
    """The least mean cross entropy any model of the context multiset can reach (the empirical
    conditional entropy of b given the multiset of the masked sentence's tokens)."""
    groups: dict = {}
    for xi, bi, wi in zip(map(tuple, np.sort(x, axis=1)), b, w):
        groups.setdefault(xi, {}).setdefault(int(bi), 0.0)
        groups[xi][int(bi)] += wi
    H = 0.0
    for g in groups.values():
        c = np.array(list(g.values()))
        H -= float((c * np.log(c / c.sum())).sum())
    return H / float(np.sum(w))


# --------------------------------------------------------------------------- targets
def prop9_targets(counts: np.ndarray):
    """(R, M): R_ij = p(w_i,c_j)/p(c_j) and M_ij = log R_ij + log|V| (nan where R = 0), Prop 9."""
    pc = counts.sum(0, keepdims=True)
    R = counts / pc
    with np.errstate(divide="ignore"):
        M = np.where(R > 0, np.log(np.where(R > 0, R, 1.0)) + math.log(V), np.nan)
    return R, M


def prop14_statistics(x: np.ndarray, m: np.ndarray, b: np.ndarray, w: np.ndarray, log_tau: np.ndarray):
    """(A, B, Q) of Prop 14 from masking instances: A_ij = sum over occurrences of center i with
    context word j of gamma = tau_j/sum_s tau_{a_s}; B_j = sum_i A_ij; Q_j = sum gamma^2.  Columns
    run over j in [|V|+1] (the last is [MASK])."""
    lt = np.asarray(log_tau, dtype=float)
    if lt.shape != (V + 1,):
        raise ValueError(f"log_tau must have shape ({V + 1},)")
    lg = lt[x]
    gam = np.exp(lg - lg.max(1, keepdims=True))
    gam /= gam.sum(1, keepdims=True)                                           # gamma_j (n, S)
    A = np.zeros((V, V + 1))
    Q = np.zeros(V + 1)
    S = x.shape[1]
    for j in range(S):
        np.add.at(A, (b, x[:, j]), w * gam[:, j])
        np.add.at(Q, x[:, j], w * gam[:, j] ** 2)
    return A, A.sum(0), Q


def prop14_target(A, B, Q, S: int = SENTENCE_LENGTH):
    """Eq. (2): (|V| A_ij - B_j) / (S Q_j) for the |V| word columns; NaN in the column of a word that is
    never in a context (Q_j = B_j = 0: the target is undefined there, and the correlations leave it out)."""
    with np.errstate(invalid="ignore"):
        return (V * A[:, :V] - B[None, :V]) / (S * Q[None, :V])


def prop14_log_ratio(A, B):
    """N_ij = log(A_ij / B_j) + log |V| for the |V| word columns, the attention analogue of Prop 9's log-ratio
    target; NaN where A_ij = 0 (no such co-occurrence: undefined, and the correlations leave it out)."""
    with np.errstate(divide="ignore"):
        return np.where(A[:, :V] > 0, np.log(np.where(A[:, :V] > 0, A[:, :V], 1.0) / B[None, :V]) + math.log(V),
                        np.nan)


def marginal_entropy(corpus: np.ndarray) -> float:
    """Mean cross entropy of the trivial predictor, the masked words' marginal frequencies (ignoring the
    context), over every masking instance of `corpus`: attnlab.convergence's trivial value (the models'
    training loss is the same average, over the same instances)."""
    _, _, b, w = masking_instances(corpus)
    c = np.bincount(b, weights=w)
    c = c[c > 0]
    return float(-(c * np.log(c / c.sum())).sum() / c.sum())


def trivial(corpus: np.ndarray, dims) -> dict:
    """The trivial value of every (p, model) row of a record (:func:`attnlab.convergence.judge_record`)."""
    h = marginal_entropy(corpus)
    return {"rows": {f"p={d}": {"value": h} for d in dims}}


# --------------------------------------------------------------------------- training
def _torch_instances(corpus):
    import torch

    x, m, b, w = masking_instances(corpus)
    return (torch.as_tensor(x), torch.as_tensor(m), torch.as_tensor(b),
            torch.as_tensor(w, dtype=torch.float64)), (x, m, b, w)


GRAD_TOL = 1e-5     # a run converged when L-BFGS ends with max |gradient| at most this


def train(model, data, steps: int, progress=None, name: str = "", info: dict | None = None) -> float:
    """Full-batch L-BFGS (strong-Wolfe line search, history 50) on the count-weighted cross entropy
    of all masking instances, for at most `steps` iterations.  (Full-batch Adam at lr 1e-2 drives
    the attention logits of Eq. (1) into saturation, a poor stationary point with loss 1.56 against
    the 0.78 floor; L-BFGS reaches 0.80 for both models.)  `info`, when given, receives how L-BFGS
    ended: iterations, function evaluations, the final max |gradient| and `converged` (that max at
    most GRAD_TOL).  CBOW converges (max |gradient| ~1e-7); the Eq. (1) attention model does not
    within 1000 iterations: its log-temperatures keep decreasing (log tau -> -inf) while the loss
    creeps down, so it has no finite minimiser to reach."""
    import torch

    x, m, b, w = data
    wn = w / w.sum()
    opt = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=steps, max_eval=int(steps * 1.25),
                            history_size=50, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-10, tolerance_change=1e-14)
    calls = [0]

    def closure():
        opt.zero_grad()
        loss = (model.loss(x, m, b, reduction="none") * wn).sum()
        loss.backward()
        calls[0] += 1
        if progress is not None and calls[0] % 50 == 0:
            progress.update(min(calls[0], steps), model=name, loss=float(loss.detach()))
        return loss

    opt.step(closure)
    if info is not None:
        st = opt.state[opt._params[0]]
        final = closure()
        gmax = max(float(q.grad.abs().max()) for q in model.parameters() if q.grad is not None)
        info.update(iterations=int(st.get("n_iter", 0)), evaluations=int(st.get("func_evals", 0)),
                    max_abs_grad=gmax, converged=bool(gmax <= GRAD_TOL), loss=float(final.detach()))
    with torch.no_grad():
        return float((model.loss(x, m, b, reduction="none") * wn).sum())


def correlations(sim: np.ndarray, target: np.ndarray, mask: np.ndarray | None = None) -> dict:
    from scipy.stats import pearsonr, spearmanr

    a, t = np.asarray(sim, float).ravel(), np.asarray(target, float).ravel()
    keep = np.isfinite(t) if mask is None else (np.asarray(mask).ravel() & np.isfinite(t))
    return dict(spearman=float(spearmanr(a[keep], t[keep]).statistic),
                pearson=float(pearsonr(a[keep], t[keep]).statistic), n_cells=int(keep.sum()))


def column_centred_pearson(sim: np.ndarray, target: np.ndarray) -> float:
    """Pearson correlation after removing each column's mean over its defined cells, from both.

    Full-softmax CBOW and Eq. (1) only identify w_i^T c_j up to a per-column shift c_j^T u
    (w_i -> w_i + u adds the same u^T context to every logit), so the correlation over all cells
    depends on an unidentified gauge; the column-centred one does not."""
    sim, target = np.asarray(sim, float), np.asarray(target, float)
    ok = np.isfinite(target)
    a, t = [], []
    for j in range(target.shape[1]):
        k = ok[:, j]
        if k.sum() >= 2:
            a.append(sim[k, j] - sim[k, j].mean())
            t.append(target[k, j] - target[k, j].mean())
    a, t = np.concatenate(a), np.concatenate(t)
    return float(np.corrcoef(a, t)[0, 1])


def run_dimension(corpus: np.ndarray, p: int, seed: int, steps: int, init_std: float,
                  device: str = "cpu", progress=None) -> dict:
    """Train CBOW and the Eq. (1) attention model with dimension p; return learned similarities,
    targets and correlations."""
    import torch

    from attnlab.experiments.models.bidir import CBOW, AttentionCBOW

    tdata, (x, m, b, w) = _torch_instances(corpus)
    tdata = tuple(t.to(device) for t in tdata)
    counts = cooccurrence_counts(corpus)
    R, M = prop9_targets(counts)
    out = dict(p=p, loss_floor=loss_floor(x, b, w))

    g = torch.Generator().manual_seed(10_000 * seed + p)
    cbow = CBOW(V, p, window=None, init_std=init_std, generator=g).to(device)
    out["cbow_lbfgs"] = {}
    out["cbow_loss"] = train(cbow, tdata, steps, progress, f"CBOW p={p}", out["cbow_lbfgs"])
    with torch.no_grad():
        sim_c = cbow.similarity().cpu().numpy()
    out["cbow_sim"] = sim_c
    out["cbow_prop9_ratio"] = correlations(sim_c, R)
    out["cbow_prop9_M"] = correlations(sim_c, M, R > 0)
    out["cbow_prop9_M_centred"] = column_centred_pearson(sim_c, M)

    g = torch.Generator().manual_seed(10_000 * seed + p + 1)
    att = AttentionCBOW(V, p, init_std=init_std, generator=g).to(device)
    out["attn_lbfgs"] = {}
    out["attn_loss"] = train(att, tdata, steps, progress, f"attention p={p}", out["attn_lbfgs"])
    with torch.no_grad():
        sim_a = att.similarity().cpu().numpy()
        log_tau = att.log_tau().cpu().numpy()
    A, B, Q = prop14_statistics(x, m, b, w, log_tau)
    T14 = prop14_target(A, B, Q)
    N = prop14_log_ratio(A, B)
    with np.errstate(invalid="ignore"):                          # (undefined where word j is in no context: NaN)
        zeta = (Q / B)[:V]
    out.update(attn_sim=sim_a, log_tau=log_tau, prop14_target=T14, N=N, prop9_R=R, prop9_M=M,
               zeta_spread=float(np.ptp(zeta[np.isfinite(zeta)])),       # over the defined zeta_j (App. G.2)
               attn_prop14=correlations(sim_a, T14),
               attn_prop14_N=correlations(sim_a, N, A[:, :V] > 0),
               attn_prop14_N_centred=column_centred_pearson(sim_a, N),
               attn_prop9_ratio=correlations(sim_a, R),
               attn_prop9_M=correlations(sim_a, M, R > 0))
    return out


def metrics_of(res: dict) -> list[dict]:
    from attnlab.experiment import metric_row

    s = f"p={res['p']}"
    # each model's rows say whether its L-BFGS converged (the two end differently; see train())
    cb = res.get("cbow_lbfgs", {})
    at = res.get("attn_lbfgs", {})
    c_ok, a_ok = bool(cb.get("converged", False)), bool(at.get("converged", False))
    rows = [metric_row(s, "CBOW", "spearman_prop9_ratio", res["cbow_prop9_ratio"]["spearman"], c_ok),
            metric_row(s, "CBOW", "pearson_prop9_M", res["cbow_prop9_M"]["pearson"], c_ok),
            metric_row(s, "CBOW", "pearson_prop9_M_colcentred", res["cbow_prop9_M_centred"], c_ok),
            metric_row(s, "CBOW", "train_loss", res["cbow_loss"], c_ok),
            metric_row(s, "attention", "spearman_prop14_eq2", res["attn_prop14"]["spearman"], a_ok),
            metric_row(s, "attention", "pearson_prop14_eq2", res["attn_prop14"]["pearson"], a_ok),
            metric_row(s, "attention", "pearson_prop14_N", res["attn_prop14_N"]["pearson"], a_ok),
            metric_row(s, "attention", "pearson_prop14_N_colcentred", res["attn_prop14_N_centred"], a_ok),
            metric_row(s, "attention", "spearman_prop9_ratio", res["attn_prop9_ratio"]["spearman"], a_ok),
            metric_row(s, "attention", "pearson_prop9_M", res["attn_prop9_M"]["pearson"], a_ok),
            metric_row(s, "attention", "train_loss", res["attn_loss"], a_ok),
            metric_row(s, "-", "loss_floor", res["loss_floor"])]
    for model, info, ok in (("CBOW", cb, c_ok), ("attention", at, a_ok)):
        if "max_abs_grad" in info:
            rows.append(metric_row(s, model, "lbfgs_max_abs_grad", info["max_abs_grad"], ok))
            rows.append(metric_row(s, model, "lbfgs_iterations", info["iterations"], ok))
    return rows


def main(argv: list[str]) -> int:
    from attnlab.experiment import context
    from attnlab.parallel import run_tasks
    from attnlab.run_args import experiment_parser, overridden_folder, seeds_of

    p = experiment_parser("bidir-toy-corpus",
                          "App. I toy corpus: CBOW (full softmax) and the Eq. (1) attention objective, "
                          "correlation of w_i^T c_j with Prop 9's and Prop 14's targets (Sec. 4.2).")
    p.add_argument("--dims", default=None,
                   help="comma-separated embedding dimensions (default 30,100,300,900; --quick: 30)")
    p.add_argument("--sentences", type=int, default=None,
                   help=f"corpus size (default {N_SENTENCES}, the paper's; smaller only for testing)")
    p.add_argument("--steps", type=int, default=None, help="L-BFGS iterations per model (default 1000; --quick: 100)")
    args = p.parse_args(argv)
    cfg = dict(CONFIG_QUICK if args.quick else CONFIG)
    defaults = dict(cfg)
    if args.dims is not None:
        try:
            dims = [strict_int(d) for d in args.dims.split(",")]
            if not dims or min(dims) < 1 or max(dims) > MAX_DIM or len(set(dims)) != len(dims):
                raise ValueError                   # (--dims 100000000 ran without end)
        except ValueError:
            shown = args.dims if len(args.dims) <= 60 else args.dims[:40] + f"...({len(args.dims)} characters)"
            raise UsageError(f"--dims must be comma-separated integers in [1, {MAX_DIM}], none twice; got "
                             f"{shown!r}") from None
        cfg["dims"] = dims
    if args.steps is not None:
        if args.steps < 1:
            raise UsageError(f"--steps must be an integer >= 1; got {args.steps}")
        cfg["steps"] = args.steps
    if args.sentences is not None:
        if not 1 <= args.sentences <= MAX_SENTENCES:    # (10^12 asked numpy for 36 TiB)
            raise UsageError(f"--sentences must be an integer in 1..{MAX_SENTENCES:,}; got {args.sentences}")
        cfg["n_sentences"] = args.sentences
        # defined by the config value from here on (the flag named otherwise, --sentences 10000 given against the
        # default refused the resume of the same run: "--sentences: None there, 10000 now")
        args.sentences = None
    # values given by flags that differ from the config's make another config, recorded in a folder of its own
    # (full-dims30, full-steps100): written into the config's folder they were read as the paper's
    folder = overridden_folder("quick" if args.quick else "full", cfg, defaults,
                               {"dims": "dims", "steps": "steps", "n_sentences": "sentences"})

    def one(seed):
        """One seed: both models at every dimension, one checkpoint per dimension; writes the seed's record
        and returns its lines (None when the record existed)."""
        ctx = context(args, "bidir-toy-corpus", cfg, seed, config_name=folder)
        if ctx.done():
            return None
        state = ctx.load_checkpoint() or {"done": {}}
        corpus = sample_corpus(cfg["n_sentences"], np.random.default_rng(ctx.seed))
        prog = ctx.progress(cfg["steps"])
        extra = {"per_dim": {}}
        rows = []
        for dim in cfg["dims"]:
            if str(dim) in state["done"]:
                res = state["done"][str(dim)]
                if "cbow_prop9_M_centred" not in res:      # checkpoint of an earlier version
                    t = record_targets({"extra": {"per_dim": {str(dim): res}}, "seed": ctx.seed,
                                        "config_values": cfg}, dim)
                    res["cbow_prop9_M_centred"] = column_centred_pearson(t["sim_cbow"], t["M"])
                    res["attn_prop14_N_centred"] = column_centred_pearson(t["sim_attention"], t["N"])
            else:
                full = run_dimension(corpus, dim, ctx.seed, cfg["steps"], cfg["init_std"],
                                     ctx.device, prog)
                res = {k: v for k, v in full.items() if not isinstance(v, np.ndarray)}
                res["similarity_cbow"] = np.round(full["cbow_sim"], 6).tolist()
                res["similarity_attention"] = np.round(full["attn_sim"], 6).tolist()
                res["log_tau"] = np.round(full["log_tau"], 6).tolist()
                state["done"][str(dim)] = res
                ctx.save_checkpoint(state)
            rows += metrics_of(res)
            extra["per_dim"][str(dim)] = res
        runs = {f"{model} p={d}": bool(extra["per_dim"][str(d)].get(key, {}).get("converged", False))
                for d in cfg["dims"] for model, key in (("CBOW", "cbow_lbfgs"), ("attention", "attn_lbfgs"))}
        ctx.write_record(rows, extra=extra, training={
            "stopped": "tolerance" if all(runs.values()) else "max-epochs", "max_epochs": cfg["steps"],
            "grad_tol": GRAD_TOL, "converged_runs": runs}, trivial=trivial(corpus, cfg["dims"]))
        return "\n".join(
            f"seed {ctx.seed} p={dim}: CBOW spearman {r['cbow_prop9_ratio']['spearman']:.3f} "
            f"pearson {r['cbow_prop9_M']['pearson']:.3f} (loss {r['cbow_loss']:.4f}, floor "
            f"{r['loss_floor']:.4f}); attention vs Eq.2 spearman {r['attn_prop14']['spearman']:.3f} "
            f"pearson {r['attn_prop14']['pearson']:.3f}"
            for dim in cfg["dims"] for r in [extra["per_dim"][str(dim)]])

    run_tasks(args, one, seeds_of(args))                # --jobs / --backend ray fan the seeds out
    return 0


@functools.lru_cache(maxsize=4)
def _corpus_statistics(n_sentences: int, seed: int) -> tuple:
    """The masking instances (x, m, b, w) and Prop 9's (R, M) of the corpus a record of this runner was drawn
    from (the same for each of its dimensions: computed once; read-only)."""
    corpus = sample_corpus(n_sentences, np.random.default_rng(seed))
    out = (*masking_instances(corpus), *prop9_targets(cooccurrence_counts(corpus)))
    for a in out:
        a.flags.writeable = False
    return out


def record_targets(record: dict, dim: int) -> dict:
    """Rebuild, from a results record of this runner, the learned similarities and their targets for
    embedding dimension `dim` (the corpus is regenerated from the record's seed and size)."""
    per = record.get("extra", {}).get("per_dim", {})
    if str(dim) not in per:
        raise ValueError(f"dim must be one of the record's dimensions {sorted(per, key=int)}; got {dim!r}")
    r = per[str(dim)]
    x, m, b, w, R, M = _corpus_statistics(int(record["config_values"]["n_sentences"]), int(record["seed"]))
    log_tau = np.asarray(r["log_tau"], dtype=float)
    A, B, Q = prop14_statistics(x, m, b, w, log_tau)
    N = prop14_log_ratio(A, B)
    return dict(sim_cbow=np.asarray(r["similarity_cbow"]), sim_attention=np.asarray(r["similarity_attention"]),
                R=R, M=M, eq2=prop14_target(A, B, Q), N=N, log_tau=log_tau, summary=r)
