"""Word-analogy evaluation (Wibisono & Wang, UAI 2023, Sec. 4.1, App. F, Table 3) and a small
bidirectional-attention MLM trained on a local corpus (the offline substitute for BERT).

Protocol (App. F): for a question a : b :: c : d, the prediction is
``argmax_{x ∉ {a, b, c}} cos(v_x, v_b + v_c − v_a)`` over the model's vocabulary (3CosAdd with the
unnormalised offset vector, as gensim's ``similar_by_vector``); the metrics are top-1 accuracy and the
mean cosine similarity ``cos(v_d, v_b + v_c − v_a)``.  Questions are grouped into semantic (categories
without the ``gram`` prefix) and syntactic (``gram1``–``gram9``).

For attention models the vectors are the static token (input) embeddings C, as the paper does with
BERT's ``word_embeddings`` matrix.
"""
from __future__ import annotations

import numpy as np
import torch

from attnlab.experiments.models.bidir import BidirAttentionMLM, mask_sentences


def read_questions(path) -> list[tuple[str, str, str, str, str]]:
    """Parse ``questions-words.txt`` into (category, a, b, c, d), words lower-cased."""
    out, cat = [], None
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            if line.startswith(":"):
                cat = line[1:].strip()
                continue
            w = line.lower().split()
            if len(w) != 4 or cat is None:
                raise ValueError(f"malformed analogy line {line!r} in {path}")
            out.append((cat, *w))
    return out


def group_of(category: str) -> str:
    return "syntactic" if category.startswith("gram") else "semantic"


class Embeddings:
    """A vocabulary and its vectors; ``cos`` queries are on unit-normalised candidate rows."""

    def __init__(self, words: list[str], vectors: np.ndarray):
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(words) != vectors.shape[0]:
            raise ValueError(f"vectors must be (len(words), dim); got {vectors.shape} for {len(words)} words")
        self.words = list(words)
        self.index = {}
        for i, w in enumerate(self.words):
            self.index.setdefault(w, i)          # first occurrence wins (as the authors' BART table)
        self.vectors = vectors
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        self.unit = vectors / np.maximum(norms, 1e-12)

    def __contains__(self, w: str) -> bool:
        return w in self.index


def evaluate(emb: Embeddings, questions, chunk: int = 64) -> list[dict]:
    """Per-question rank-1 correctness and cosine (App. F).  Questions with a word outside the
    vocabulary must be filtered out beforehand."""
    out = []
    for s in range(0, len(questions), chunk):
        qs = questions[s:s + chunk]
        ia = np.array([emb.index[q[1]] for q in qs])
        ib = np.array([emb.index[q[2]] for q in qs])
        ic = np.array([emb.index[q[3]] for q in qs])
        idd = np.array([emb.index[q[4]] for q in qs])
        f = emb.vectors[ib] + emb.vectors[ic] - emb.vectors[ia]
        f /= np.maximum(np.linalg.norm(f, axis=1, keepdims=True), 1e-12)
        sims = f @ emb.unit.T                                    # cos(v_x, f) for every candidate x
        cos_d = sims[np.arange(len(qs)), idd].copy()
        for arr in (ia, ib, ic):
            sims[np.arange(len(qs)), arr] = -np.inf               # exclude a, b, c
        pred = sims.argmax(1)
        for q, p, cd in zip(qs, pred, cos_d):
            out.append({"category": q[0], "group": group_of(q[0]), "correct": bool(emb.words[p] == q[4]),
                        "cosine": float(cd)})
    return out


def summarize(results: list[dict]) -> dict:
    """Accuracy and mean cosine for semantic, syntactic and overall (Table 3), with counts, and the same
    per category of ``questions-words.txt`` under ``"categories"`` ({category: {n, acc, cosine,
    group}}, in the file's order): a group's score is its categories' scores weighted by their
    counts, so the counts say which categories a group's number is really about."""
    def stats(rs):
        return {"n": len(rs),
                "acc": float(np.mean([r["correct"] for r in rs])) if rs else float("nan"),
                "cosine": float(np.mean([r["cosine"] for r in rs])) if rs else float("nan")}

    out = {grp: stats([r for r in results if grp == "overall" or r["group"] == grp])
           for grp in ("semantic", "syntactic", "overall")}
    cats = list(dict.fromkeys(r["category"] for r in results))
    out["categories"] = {c: {**stats([r for r in results if r["category"] == c]), "group": group_of(c)} for c in cats}
    return out


def windows(token_ids: list[list[int]], S: int) -> np.ndarray:
    """All length-S windows (stride 1) of each document's token ids, as an (n, S) array."""
    if not isinstance(S, int) or S < 2:
        raise ValueError(f"S must be an integer >= 2; got {S!r}")
    rows = [doc[i:i + S] for doc in token_ids for i in range(0, len(doc) - S + 1)]
    if not rows:
        raise ValueError(f"no document has S = {S} in-vocabulary tokens")
    return np.asarray(rows, dtype=np.int64)


def train_mlm(win: np.ndarray, vocab_size: int, p: int = 50, heads: int = 2, epochs: int = 10,
              batch: int = 256, lr: float = 3e-3, seed: int = 0, state: dict | None = None,
              on_epoch=None) -> tuple[BidirAttentionMLM, list[float]]:
    """Train the linear bidirectional attention of Sec. 2.1 (``BidirAttentionMLM``: positional
    encodings, residuals, H heads, one layer) with the MLM objective on fixed-length windows; each
    window is masked at one uniformly drawn position per epoch.  float32, Adam."""
    if win.ndim != 2:
        raise ValueError(f"win must be a 2-d array of windows; got shape {win.shape}")
    g = torch.Generator().manual_seed(int(seed))
    S = win.shape[1]
    model = BidirAttentionMLM(vocab_size, S, p, d=p // heads, d_w=p // heads, heads=heads, layers=1,
                              init_std=0.1, w1_scale=0.3, generator=g, dtype=torch.float32)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses, start = [], 0
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        g.set_state(state["generator"])
        losses, start = list(state["losses"]), int(state["epoch"])
    X = torch.as_tensor(win)
    n = X.shape[0]
    for ep in range(start, epochs):
        perm = torch.randperm(n, generator=g)
        m_all = torch.randint(0, S, (n,), generator=g)
        tot = 0.0
        for i in range(0, n, batch):
            idx = perm[i:i + batch]
            tok, m = X[idx], m_all[idx]
            b = tok.gather(1, m[:, None]).squeeze(1)
            loss = model.loss(mask_sentences(tok, m, vocab_size), m, b)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            tot += float(loss.detach()) * len(idx)
        losses.append(tot / n)
        if on_epoch is not None:
            on_epoch(ep + 1, losses[-1], {"model": model.state_dict(), "optim": opt.state_dict(),
                                          "generator": g.get_state(), "losses": losses, "epoch": ep + 1})
    return model, losses
