"""Claims of the bidir paper on the App. I toy corpus (`bidir.app-i.*`, `bidir.prop9.toy-*`,
`bidir.prop14.toy-*`): the exact population of the corpus (fast) and the Sec. 4.2 correlations of
trained CBOW / Eq. (1) attention embeddings with the targets of Props 9 and 14 (slow, training).

The paper's toy-corpus check is in App. G.1 (Sec. 4.2 restates Prop 9 as Prop 3).  The training protocol is that of
`attnlab run bidir-toy-corpus` (experiments/bidir/toy_corpus.py): full-batch L-BFGS from
N(0, 0.1^2), every masking instance of a 10,000-sentence corpus drawn with seed s.
"""
from __future__ import annotations

import numpy as np

from attnlab.catalog import claim, holds_if

# Loose thresholds fixed before training for the attention analogue (Prop 14), which the paper does not
# report: Spearman > 0.6, Pearson > 0.5.
SPEARMAN_MIN, PEARSON_MIN = 0.6, 0.5
SLOW_DIMS, SLOW_SEEDS, SLOW_STEPS = (30, 100), (0, 1, 2), 1000


# App. I as printed, transcribed here from the paper's text (not read from experiments/bidir/toy_corpus.py,
# whose distribution, population and sampler are held against it).
APP_I_SCORES = {"mathematics": (4, 2, 4, 2), "statistics": (6, 0, 5, 1), "sociology": (1, 5, 2, 4),
                "history": (0, 6, 0, 6)}                        # (fun, boring, easy, difficult)
APP_I_ADJECTIVES = ("fun", "boring", "easy", "difficult")
APP_I_TYPE1 = (4, 5, 1, 1)                                      # /11, in the order of APP_I_SCORES
APP_I_SAMPLE, APP_I_Z_MAX = 3_000, 5.0


def app_i_printed():
    """sympy: App. I's sentence distribution as printed, {tuple of words: Rational}, by the three types
    (each with probability 1/3), and its population co-occurrence {(center word, context word):
    Rational} over the 20 ordered (center, context) position pairs of a 5-word sentence."""
    import itertools

    import sympy as sp

    subjects = list(APP_I_SCORES)
    third, quarter = sp.Rational(1, 3), sp.Rational(1, 4)
    t1 = {s: sp.Rational(k, sum(APP_I_TYPE1)) for s, k in zip(subjects, APP_I_TYPE1)}
    dist: dict = {}

    def add(words, pr):
        if pr != 0:
            dist[words] = dist.get(words, 0) + pr

    for s1 in subjects:                        # Type 1: I like subj1 and subj2
        for s2 in subjects:
            add(("I", "like", s1, "and", s2), third * t1[s1] * t1[s2])
    for s1 in subjects:                        # Type 2: subj1 and subj2 is adj, adj prop. to score(s1)+score(s2)
        for s2 in subjects:
            tot = sum(APP_I_SCORES[s1]) + sum(APP_I_SCORES[s2])
            for k, adj in enumerate(APP_I_ADJECTIVES):
                add((s1, "and", s2, "is", adj),
                    third * quarter * quarter * sp.Rational(APP_I_SCORES[s1][k] + APP_I_SCORES[s2][k], tot))
    for s in subjects:                         # Type 3: subj is adj1 and adj2, adj iid prop. to score(subj)
        tot = sum(APP_I_SCORES[s])
        for k1, a1 in enumerate(APP_I_ADJECTIVES):
            for k2, a2 in enumerate(APP_I_ADJECTIVES):
                add((s, "is", a1, "and", a2),
                    third * quarter * sp.Rational(APP_I_SCORES[s][k1], tot) * sp.Rational(APP_I_SCORES[s][k2], tot))
    pairs: dict = {}
    for words, pr in dist.items():
        for i, j in itertools.permutations(range(len(words)), 2):
            pairs[(words[i], words[j])] = pairs.get((words[i], words[j]), 0) + pr / 20
    return dist, pairs


def app_i_text_matches() -> bool | None:
    """Whether the transcription above is App. I's text (scores and Type 1 probabilities), when the paper's
    text is found (attnlab.experiments.data.paper_text); None when it is not."""
    import re

    from attnlab.theory.bidir.analogy import _paper_text

    text = _paper_text()
    if text is None:
        return None
    i = text.find("I Corpus generation process")
    body = text[i:i + 2500] if i >= 0 else ""
    scores = {sub: tuple(int(v) for v in re.findall(r"\d+", tup))
              for sub, tup in re.findall(r"\(\w\) (\w+): \(([\d, ]+)\)", body)}
    probs = re.search(r"probability \(([\d/, ]+)\)", body)
    t1 = tuple(int(f.split("/")[0]) for f in probs.group(1).split(",")) if probs else None
    adjectives = re.search(r"four adjectives \(([\w, ]+)\)", body)
    adj = tuple(a.strip() for a in re.split(r",| and ", adjectives.group(1)) if a.strip()) if adjectives else None
    return scores == APP_I_SCORES and t1 == APP_I_TYPE1 and adj == APP_I_ADJECTIVES


def _masking_instances_loop(corpus: np.ndarray) -> dict:
    """{(masked sentence, m, b): count}: every position of every sentence masked in turn, by plain loops."""
    from collections import Counter

    out: Counter = Counter()
    for sent in corpus.tolist():
        for m in range(len(sent)):
            x = list(sent)
            x[m] = 12                                                  # [MASK] = |V| (0-based ids 0..11)
            out[(tuple(x), m, sent[m])] += 1
    return out


def check_population(n_sample: int = APP_I_SAMPLE, seed: int = 0):
    import sympy as sp

    from attnlab.experiments.bidir.toy_corpus import (VOCAB, cooccurrence_counts, masking_instances,
                                                      population_cooccurrence, sample_corpus,
                                                      sentence_distribution)
    from attnlab.theory.bidir.analogy import _pair_counts

    dist_p, pairs_p = app_i_printed()
    words = list(VOCAB)
    Vn = len(words)
    # the library's exact distribution and population against the printed ones, cell by cell
    lib = {tuple(words[t] for t in s): sp.Rational(f.numerator, f.denominator)
           for s, f in sentence_distribution().items()}
    dist_mismatch = sum(1 for k in set(lib) | set(dist_p) if lib.get(k, 0) != dist_p.get(k, 0))
    P_lib = population_cooccurrence()
    P = sp.Matrix(Vn, Vn, lambda i, j: pairs_p.get((words[i], words[j]), 0))
    pop_mismatch = sum(1 for i in range(Vn) for j in range(Vn)
                       if sp.Rational(P_lib[i][j].numerator, P_lib[i][j].denominator) != P[i, j])
    total = sum(dist_p.values())
    symmetric = (P - P.T).is_zero_matrix
    zeros = sum(1 for v in P if v == 0)
    types = [sum(pr for w, pr in dist_p.items() if w[:2] == ("I", "like")),
             sum(pr for w, pr in dist_p.items() if w[1] == "and" and w[3] == "is"),
             sum(pr for w, pr in dist_p.items() if w[1] == "is" and w[3] == "and")]
    # the library's sampler against the printed distribution: every sampled sentence has positive printed
    # probability; sentence types, sentences and co-occurrence cells within APP_I_Z_MAX standard errors
    corpus = sample_corpus(n_sample, np.random.default_rng(seed))
    sampled = [tuple(words[t] for t in row) for row in corpus.tolist()]
    support_ok = all(dist_p.get(w, 0) > 0 for w in sampled)
    z_types = max(abs(sum(1 for w in sampled if (w[:2] == ("I", "like"), w[1] == "and" and w[3] == "is",
                                                   w[1] == "is" and w[3] == "and")[t]) - n_sample / 3)
                  / np.sqrt(n_sample * (1 / 3) * (2 / 3)) for t in range(3))
    from collections import Counter

    freq = Counter(sampled)                    # sentences are iid: a binomial standard error per sentence
    z_sentences = max(abs(freq.get(w, 0) - n_sample * float(pr)) / np.sqrt(n_sample * float(pr) * (1 - float(pr)))
                      for w, pr in dist_p.items())
    n = cooccurrence_counts(corpus)
    counts_ok = bool(np.array_equal(n, _pair_counts(corpus, ~np.eye(5, dtype=bool), Vn)))
    emp = n / (20 * n_sample)
    pf = np.array(P.tolist(), dtype=float)
    se = np.sqrt(pf * (1 - pf) / (n_sample * 20)) * np.sqrt(20)     # pairs within a sentence are dependent
    z = float(np.max(np.abs(emp - pf)[pf > 0] / se[pf > 0]))
    # the library's masking instances against plain loops (what the toy-corpus models train on)
    x, m, b, w = masking_instances(corpus[:500])
    lib_inst = {(tuple(int(v) for v in xi), int(mi), int(bi)): float(wi) for xi, mi, bi, wi in zip(x, m, b, w)}
    loop_inst = {k: float(v) for k, v in _masking_instances_loop(corpus[:500]).items()}
    instances_ok = lib_inst == loop_inst
    text = app_i_text_matches()
    ok = (dist_mismatch == 0 and pop_mismatch == 0 and total == 1 and symmetric and zeros == 24
          and all(t == sp.Rational(1, 3) for t in types) and support_ok and z_types < APP_I_Z_MAX
          and z_sentences < APP_I_Z_MAX and z < APP_I_Z_MAX and counts_ok and instances_ok and text is not False)
    return holds_if(ok, measured=dict(library_distribution_mismatches=dist_mismatch,
                                      library_population_mismatches=pop_mismatch,
                                      n_sentences=len(dist_p), total=str(total), symmetric=bool(symmetric),
                                      zero_cells=zeros, type_probs=[str(t) for t in types],
                                      transcription_matches_paper_text=text,
                                      sample=dict(support_within_printed=support_ok, max_z_types=float(z_types),
                                                  max_z_sentences=float(z_sentences),
                                                  max_z_cells=z, counts_equal_loop_counts=counts_ok,
                                                  masking_instances_equal_loops=instances_ok)),
                    tolerance=f"exact (rationals, integer counts); sample: |z| < {APP_I_Z_MAX} (types and "
                              "each of the 122 sentences: binomial SE; cells: a conservative per-sentence SE)",
                    explanation="App. I transcribed as printed (sympy Rationals, the three types by their "
                                + ("wording; read against the paper's text, which matches it) " if text else
                                   "wording; NOT read against the paper's text here: it was not found (set "
                                   "ATTNLAB_PAPERS to the folder that holds it)) ")
                                + "against the library's sentence_distribution and population_cooccurrence, "
                                f"every sentence and cell exactly; {n_sample} sentences of the library's "
                                f"sampler (seed {seed}) against the printed distribution; its cooccurrence_counts "
                                "and masking_instances (500 sentences) against plain loops",
                    population=[[str(v) for v in row] for row in P.tolist()])


@claim("bidir.app-i.toy-corpus-population",
       reference="App. I (corpus generation); Sec. 4.2",
       statement="The App. I sentence distribution (as printed) is finite; the library's exact distribution "
                 "and population co-occurrence matrix (whole-sentence window) are those of App. I, an exact "
                 "rational, symmetric joint with 24 zero cells of 144; a sample drawn by the library's App. I "
                 "sampler matches it within sampling error, and its counts and masking instances are those of "
                 "plain loops.",
       method="sympy",
       vouches_for=("experiments.bidir.toy_corpus.sentence_distribution",
                    "experiments.bidir.toy_corpus.population_cooccurrence",
                    "experiments.bidir.toy_corpus.cooccurrence_counts",
                    "experiments.bidir.toy_corpus.masking_instances"))
def _population():
    return check_population()


# --------------------------------------------------------------------------- Sec. 4.2's statistics
def _average_ranks(values) -> list[float]:
    """Ranks 1..n, tied values sharing the mean of their positions (Spearman's convention)."""
    order = sorted(range(len(values)), key=lambda k: values[k])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in order[i:j + 1]:
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _pearson(a, b) -> float:
    import math

    n = len(a)
    ma, mb = math.fsum(a) / n, math.fsum(b) / n
    sab = math.fsum((x - ma) * (y - mb) for x, y in zip(a, b))
    return sab / math.sqrt(math.fsum((x - ma) ** 2 for x in a) * math.fsum((y - mb) ** 2 for y in b))


def _statistics_printed(sim, R, M):
    """Sec. 4.2 as printed: (1) Spearman between w_i^T c_j and p(w_i,c_j)/p(c_j) over every (i, j); (2) Pearson
    between w_i^T c_j and M_ij over the (i, j) where M is defined; and (2) after removing each column's mean
    over its defined cells (the gauge-free form the experiment adds)."""
    cells = [(i, j) for i in range(sim.shape[0]) for j in range(sim.shape[1])]
    defined = [(i, j) for i, j in cells if R[i, j] > 0]
    spearman = _pearson(_average_ranks([sim[c] for c in cells]), _average_ranks([R[c] for c in cells]))
    pearson = _pearson([sim[c] for c in defined], [M[c] for c in defined])
    a, t = [], []
    for j in range(sim.shape[1]):
        col = [i for i in range(sim.shape[0]) if R[i, j] > 0]
        if len(col) >= 2:
            ms, mt = sum(sim[i, j] for i in col) / len(col), sum(M[i, j] for i in col) / len(col)
            a += [sim[i, j] - ms for i in col]
            t += [M[i, j] - mt for i in col]
    return dict(spearman=spearman, pearson=pearson, n_cells=len(defined), centred=_pearson(a, t))


def _entropies_printed(corpus, x, b, w):
    """The trivial predictor's mean cross entropy (every position of every sentence masked once: the
    masked words' frequencies are the corpus's token frequencies) and the loss floor (the empirical
    conditional entropy of the masked word given the multiset of the masked sentence), by plain loops."""
    import math
    from collections import Counter, defaultdict

    tok = Counter(int(t) for row in corpus.tolist() for t in row)
    N = sum(tok.values())
    marginal = -math.fsum(c / N * math.log(c / N) for c in tok.values())
    groups: dict = defaultdict(Counter)
    for xi, bi, wi in zip(x.tolist(), b.tolist(), w.tolist()):
        groups[tuple(sorted(xi))][bi] += wi
    tot = math.fsum(w.tolist())
    floor = -math.fsum(c * math.log(c / sum(g.values())) for g in groups.values() for c in g.values()) / tot
    return marginal, floor


def check_toy_statistics(seed: int = 42):
    import math

    import torch

    from attnlab.experiments.bidir.toy_corpus import (V as NV, column_centred_pearson, correlations, loss_floor,
                                                      marginal_entropy, masking_instances, population_cooccurrence,
                                                      prop9_targets, sample_corpus, train)
    from attnlab.experiments.models.bidir import CBOW

    rng = np.random.default_rng(seed)
    Pf = population_cooccurrence()
    R, M = prop9_targets(np.array([[float(v) for v in row] for row in Pf]))   # 24 empty cells: ties, nan
    dev = {}
    # random similarities, a monotone one (Spearman 1 with ties in R) and a rounded one (ties in sim)
    sims = {"random": rng.normal(size=(NV, NV)), "monotone": 4.0 * R,     # an exact scaling: order and ties kept
            "rounded": np.round(rng.normal(size=(NV, NV)), 1) + 0.3 * (NV * R - 1)}
    for name, sim in sims.items():
        lib_all, lib_def = correlations(sim, R), correlations(sim, M, R > 0)
        ref = _statistics_printed(sim, R, M)
        dev[name] = dict(spearman=abs(lib_all["spearman"] - ref["spearman"]),
                         pearson=abs(lib_def["pearson"] - ref["pearson"]),
                         centred=abs(column_centred_pearson(sim, M) - ref["centred"]),
                         n_cells=int(lib_def["n_cells"] != ref["n_cells"]))
    monotone_spearman = correlations(sims["monotone"], R)["spearman"]
    corpus = sample_corpus(60, rng)
    x, m, b, w = masking_instances(corpus)
    marginal, floor = _entropies_printed(corpus, x, b, w)
    ent_dev = dict(marginal=abs(marginal_entropy(corpus) - marginal) / marginal,
                   floor=abs(loss_floor(x, b, w) - floor) / floor)
    # the runner's training loop: the loss it returns is the count-weighted mean cross entropy of the model
    # it leaves, computed here from the model's W and C as CBOW is printed (W times the context mean)
    cbow = CBOW(NV, 4, window=None, init_std=0.1, generator=torch.Generator().manual_seed(seed))
    data = tuple(torch.as_tensor(a) for a in (x, m, b)) + (torch.as_tensor(w, dtype=torch.float64),)

    returned = train(cbow, data, 15)
    W, C = cbow.W.detach().numpy(), cbow.C.detach().numpy()

    def printed(W, C):
        ce = []
        for xi, mi, bi in zip(x, m, b):
            logits = W @ np.mean([C[a] for j, a in enumerate(xi) if j != mi], axis=0)
            ce.append(math.log(math.fsum(math.exp(v - logits.max()) for v in logits)) + logits.max() - logits[bi])
        return math.fsum(c * wi for c, wi in zip(ce, w)) / math.fsum(w)

    start = CBOW(NV, 4, window=None, init_std=0.1, generator=torch.Generator().manual_seed(seed))
    start_loss = printed(start.W.detach().numpy(), start.C.detach().numpy())
    train_dev = abs(returned - printed(W, C)) / returned
    # ... and the objective it minimises is the count-weighted one: the same start trained on the instances
    # repeated by their counts (weights 1) is the same function, so L-BFGS takes the same path to rounding (an
    # unweighted mean over the distinct instances is another function, and another path); and it descends
    rep = np.repeat(np.arange(len(w)), w.astype(int))
    twin = CBOW(NV, 4, window=None, init_std=0.1, generator=torch.Generator().manual_seed(seed))
    train(twin, tuple(torch.as_tensor(a[rep]) for a in (x, m, b)) + (torch.ones(len(rep), dtype=torch.float64),), 15)
    path_dev = max(float((twin.W - cbow.W).detach().abs().max()), float((twin.C - cbow.C).detach().abs().max()))
    descent = dict(start_loss=start_loss, loss_after_15=returned, repeated_instances_param_dev=path_dev)
    worst = max(max(v.values()) for v in dev.values())
    ok = (worst <= 1e-12 and abs(monotone_spearman - 1) <= 1e-12 and max(ent_dev.values()) <= 1e-12
          and train_dev <= 1e-12 and returned < start_loss and path_dev <= 1e-8)
    return holds_if(ok, measured=dict(correlations=dev, monotone_spearman=monotone_spearman, entropies=ent_dev,
                                      train_loss_rel_dev=train_dev, training=descent),
                    tolerance=dict(statistics=1e-12, train_loss_rel_dev=1e-12,
                                   training="the loss falls; parameters trained on the repeated instances within "
                                            "1e-8 (float64 L-BFGS, 15 steps)"),
                    explanation="the library's correlations and column_centred_pearson against Sec. 4.2's "
                                "definitions by plain sums (average ranks for ties) on the App. I population's "
                                "R and M (24 empty cells: ties in R, M undefined there) with random, monotone "
                                "(Spearman 1) and rounded (tied) similarities; marginal_entropy and loss_floor "
                                "against plain-loop entropies on 60 sentences; the loss train returns against "
                                "the weighted cross entropy of the CBOW it leaves, as printed (15 L-BFGS steps), below the "
                                "start's, and the same 15 steps on the instances repeated by their counts (weights "
                                "1: the same objective) reaching the same parameters")


@claim("bidir.sec4-2.toy-statistics",
       reference="Sec. 4.2 / App. G.1 (the statistics of the toy-corpus check: \"(1) the Spearman correlation "
                 "between w_i^T c_j and p(w_i, c_j)/p(c_j) for each i, j; (2) the Pearson correlation ... for "
                 "each i, j such that the latter is well-defined\")",
       statement="The statistics of the toy-corpus check, as the paper defines them: (1) Spearman over every "
                 "(i, j) between w_i^T c_j and p(w_i,c_j)/p(c_j); (2) Pearson between w_i^T c_j and "
                 "log(p(w_i,c_j)/p(c_j)) + log|V| over the (i, j) where it is defined; with the trivial and "
                 "floor losses the runner's convergence is judged by, and the training loss it reports.",
       method="float64",
       vouches_for=("experiments.bidir.toy_corpus.correlations",
                    "experiments.bidir.toy_corpus.column_centred_pearson",
                    "experiments.bidir.toy_corpus.marginal_entropy", "experiments.bidir.toy_corpus.loss_floor",
                    "experiments.bidir.toy_corpus.train"))
def _toy_statistics():
    return check_toy_statistics()


def _train_all():
    from attnlab.experiments.bidir.toy_corpus import run_dimension, sample_corpus

    import torch

    torch.set_num_threads(1)
    out = {}
    for s in SLOW_SEEDS:
        corpus = sample_corpus(10_000, np.random.default_rng(s))
        for p in SLOW_DIMS:
            out[(s, p)] = run_dimension(corpus, p, s, SLOW_STEPS, 0.1)
    return out


_CACHE: dict = {}


def _results():
    if "res" not in _CACHE:
        _CACHE["res"] = _train_all()
    return _CACHE["res"]


def _summary(key_s: str, key_p: str) -> dict:
    res = _results()
    out = {}
    for p in SLOW_DIMS:
        sp_ = [res[(s, p)][key_s]["spearman"] for s in SLOW_SEEDS]
        pe_ = [res[(s, p)][key_p]["pearson"] for s in SLOW_SEEDS]
        out[f"p={p}"] = dict(spearman_mean=float(np.mean(sp_)), spearman_per_seed=sp_,
                             pearson_mean=float(np.mean(pe_)), pearson_per_seed=pe_)
    return out


PROP9_DIMS, PROP9_SEEDS = (30, 100, 300, 900), (0, 1, 2, 3, 4)


def train_cbow(seed: int, p: int, steps: int = SLOW_STEPS) -> dict:
    """CBOW of `attnlab run bidir-toy-corpus` (same corpus, initialisation and L-BFGS) for one seed and
    dimension: Spearman with p(w_i,c_j)/p(c_j) and Pearson with M_ij, and the final loss."""
    import torch

    from attnlab.experiments.bidir.toy_corpus import (V as NV, _torch_instances, cooccurrence_counts,
                                                      correlations, prop9_targets, sample_corpus, train)
    from attnlab.experiments.models.bidir import CBOW

    torch.set_num_threads(1)
    corpus = sample_corpus(10_000, np.random.default_rng(seed))
    data, _ = _torch_instances(corpus)
    R, M = prop9_targets(cooccurrence_counts(corpus))
    cbow = CBOW(NV, p, window=None, init_std=0.1, generator=torch.Generator().manual_seed(10_000 * seed + p))
    loss = train(cbow, data, steps)
    with torch.no_grad():
        sim = cbow.similarity().numpy()
    return dict(spearman=correlations(sim, R)["spearman"], pearson=correlations(sim, M, R > 0)["pearson"],
                loss=loss)


def prop9_registration():
    """How the slow claim is judged: the rule of attnlab.evidence for a value claim, on the paper's data
    (the App. I corpus) under a substitute protocol (the paper gives no optimiser or initialisation), every
    dimension and both correlations as parts, the paper's single runs (R = 1), seeds PROP9_SEEDS.  Not in
    the registry of the `results` claims: this one trains in its check."""
    from attnlab.theory.preregistration import _TOY, Registration, _toy_parts

    return Registration("bidir.prop9.toy-corpus-correlation", "bidir-toy-corpus", "full", "value",
                        tuple(part for p in PROP9_DIMS for part in _toy_parts(p)), PROP9_SEEDS, "substitute",
                        "not-reproduced-on-substitute", paper_runs=1, deviation=_TOY,
                        margin_source="no margin: the paper's single-run value against the interval of a single run")


PROP9_REGISTRATION = prop9_registration()


def judge_prop9(values: dict, reg=PROP9_REGISTRATION):
    """values[(p, metric)] = per-seed list, metric in ('spearman', 'pearson').  Each part by the value rule
    of attnlab.evidence: supported when the paper's single-run value lies in mean +- t sd sqrt(1/n + 1/R),
    contradicted otherwise; the claim is reproduced on the substitute when every part is supported, not
    reproduced when any part is contradicted (a substitute protocol cannot make an erratum)."""
    from attnlab.catalog import Evidence
    from attnlab.evidence import VERDICT_OF, _decide, t_interval

    metric_of = dict(spearman_prop9_ratio="spearman", pearson_prop9_M="pearson")
    per, decisions = {}, []
    for part in reg.parts:
        p = int(part.setting.split("=")[1])
        v = [float(x) for x in values[(p, metric_of[part.metric])]]
        ci, wide = t_interval(v), t_interval(v, reg.paper_runs)
        d = _decide(reg, part, dict(ci, values=v))
        decisions.append(d)
        per[f"{part.setting} {metric_of[part.metric]}"] = dict(
            per_seed=[round(x, 4) for x in v], mean=round(ci["mean"], 4), ci95=[round(ci["lo"], 4), round(ci["hi"], 4)],
            single_run_interval=[round(wide["lo"], 4), round(wide["hi"], 4)], paper=part.paper, decision=d)
    overall = ("contradicted" if "contradicted" in decisions else
               "supported" if all(d == "supported" for d in decisions) else "undecided")
    verdict = VERDICT_OF[(overall, reg.data_source)]
    # the corrected statement says the correlations are positive at every p: where a part's 95% interval is not
    # above 0, that statement fails whatever the paper comparison says (embeddings of noise gave the expected
    # "not reproduced" through the registered rule alone, which a pipeline that learns nothing also meets)
    not_positive = [k for k, r in per.items() if not r["ci95"][0] > 0]
    if not_positive:
        verdict = "fails"
    first = next((k for k, r in per.items() if r["decision"] == overall), next(iter(per)))
    n = min(len(r["per_seed"]) for r in per.values())
    return Evidence(verdict, measured=per, tolerance=reg.tolerance_text(),
                    explanation="CBOW (full softmax, whole-sentence context) trained by L-BFGS (1000 iterations, "
                                "N(0, 0.1^2)) on the App. I corpus (10,000 sentences drawn with seed s), seeds "
                                f"{list(PROP9_SEEDS)}, p in {list(PROP9_DIMS)}: per-seed correlations against the "
                                f"paper's single runs; {reg.rule_text()}; and the corrected statement's sign: every "
                                "part's 95% interval above 0, else fails"
                                + (f" (not above 0: {', '.join(not_positive)})" if not_positive else ""),
                    data={"results": {"data_source": reg.data_source, "statistic": reg.statistic,
                                      "ci95": per[first]["ci95"], "paper_effect": per[first]["paper"], "margin": None,
                                      "n_seeds_registered": len(reg.seeds), "n_seeds_used": n},
                          "deciding_part": first})


@claim("bidir.prop9.toy-corpus-correlation",
       reference="Prop 9 (= Prop 3), App. G.1 toy-corpus check, App. I corpus",
       statement="CBOW trained on the App. I corpus gives Spearman (0.74, 0.77, 0.77, 0.77) between w_i^T c_j and "
                 "p(w_i,c_j)/p(c_j), and Pearson (0.67, 0.71, 0.70, 0.71) with M_ij, at p = 30, 100, 300, 900 "
                 "(single runs; the paper gives no optimiser, initialisation or seed).",
       corrected="Not reproduced under our protocol (converged full-batch L-BFGS from N(0, 0.1^2), 5 seeds): the "
                 "correlations are positive at every p; at p = 30 and 100 the printed values lie inside the interval "
                 "a single run of ours falls in, at p = 300 and 900 above it (e.g. Spearman 0.77 against 0.57-0.73 "
                 "at p = 300).  Not a paper error: for p > |V| = 12 the learned w_i^T c_j are not identified by "
                 "the loss and depend on the optimiser and initialisation, which the paper does not give.",
       method="training", tier="slow", expected="not-reproduced-on-substitute", registration=PROP9_REGISTRATION,
       # (a transposed similarity or swapped targets keep correlations of this size: those functions are held by
       # the fast claims bidir.prop9.single-context-optimum and bidir.prop9.*; this one sees a training that
       # learns nothing, through the sign of its correlations)
       vouches_for=("experiments.models.bidir.CBOW.forward", "experiments.bidir.toy_corpus.train"))
def _prop9_toy():
    values = {}
    for p in PROP9_DIMS:
        runs = [train_cbow(s, p) for s in PROP9_SEEDS]
        values[(p, "spearman")] = [r["spearman"] for r in runs]
        values[(p, "pearson")] = [r["pearson"] for r in runs]
    return judge_prop9(values)


@claim("bidir.prop14.toy-corpus-correlation",
       reference="Prop 14 (= Prop 6), Eq. (2), on the App. I corpus (not reported in the paper)",
       statement="The Eq. (1) attention objective trained on the App. I corpus learns w_i^T c_j that correlate "
                 "with Prop 14's target: Spearman with Eq. (2) (from the learned tau) and Pearson with "
                 "N_ij = log(pbar(w_i,c_j)/pbar(c_j)) + log|V|.",
       method="training", tier="slow",
       vouches_for=("experiments.models.bidir.AttentionCBOW.forward", "experiments.models.bidir.AttentionCBOW.log_tau",
                    "experiments.models.bidir.AttentionCBOW.similarity", "experiments.bidir.toy_corpus.run_dimension",
                    "experiments.bidir.toy_corpus.train", "experiments.bidir.toy_corpus.prop14_statistics",
                    "experiments.bidir.toy_corpus.prop14_target", "experiments.bidir.toy_corpus.correlations"))
def _prop14_toy():
    summ = _summary("attn_prop14", "attn_prop14_N")
    ok = all(v["spearman_mean"] > SPEARMAN_MIN and v["pearson_mean"] > PEARSON_MIN for v in summ.values())
    return holds_if(ok, measured=summ, tolerance=dict(spearman_min=SPEARMAN_MIN, pearson_min=PEARSON_MIN),
                    explanation=f"p in {SLOW_DIMS}, seeds {SLOW_SEEDS}, L-BFGS {SLOW_STEPS} iterations, tau "
                                "learned; the Prop 9 thresholds applied to the attention analogue")
