"""The masked language model of "Bidirectional Attention as a Mixture of Continuous Word Experts" (Sec. 2.1)
as the library trains and guards it: `bidir.sec2-1.mlm-domain` (the inputs the model is defined for, and
the one-line refusals of everything else) and `bidir.sec5.mlm-training` (train_mlm, the loop that trains
the Table 3 substitute, against a plain transcription of its documented schedule).

Conventions: tokens are ids 0..|V|-1, the [MASK] id is |V| (Sec. 2.1's extra row of C); sizes are integers.
"""
from __future__ import annotations

import copy
import math

import numpy as np

from attnlab.theory._errors import worse as _worse
from attnlab.theory._inputs import refused as _refusal
from attnlab.catalog import claim, holds_if


def check_mlm_domain():
    import torch

    from attnlab.experiments.models.bidir import AttentionCBOW, BidirAttentionMLM, mask_sentences

    V, S = 8, 4                                          # (|V| even: |V| ^ 1 is not |V| - 1)

    def model(**kw):
        args = dict(vocab_size=V, seq_len=S, p=4, heads=2, d=2, d_w=2)
        args.update(kw)
        return BidirAttentionMLM(**args)
    net = model()
    tok = torch.tensor([[0, 1, 2, 3], [4, 5, 6, 0]])
    m = torch.tensor([1, 3])
    x = mask_sentences(tok, m, V)
    b = tok[torch.arange(2), m]
    cases = {
        # sizes: integers, not bools (True == 1) or floats (2.0)
        "heads=True refused": _refusal(lambda: model(heads=True), "heads", ">= 1", "True"),
        "heads=2.0 refused": _refusal(lambda: model(heads=2.0), "heads", "2.0"),
        "vocab_size=1 refused": _refusal(lambda: model(vocab_size=1), "vocab_size", ">= 2"),
        "layers=0 refused": _refusal(lambda: model(layers=0), "layers", ">= 1"),
        "p='4' refused": _refusal(lambda: model(p="4"), "p must be an integer"),
        # tokens and targets: ids in [0, |V|-1]; [MASK] = |V| only at m
        "target |V| refused, range stated": _refusal(lambda: net.loss(x, m, torch.tensor([0, V])),
                                                      f"[0, {V - 1}]", "b (the masked tokens)"),
        "target -1 refused": _refusal(lambda: net.loss(x, m, torch.tensor([-1, 0])), f"[0, {V - 1}]"),
        "token |V| unmasked refused": _refusal(lambda: mask_sentences(torch.tensor([[0, V, 1, 2]]),
                                                                      torch.tensor([0]), V), f"[0, {V - 1}]"),
        "position S refused": _refusal(lambda: net(x, torch.tensor([1, S])), f"[0, {S - 1}]"),
        "no [MASK] at m refused": _refusal(lambda: net(tok, m), f"[MASK] id {V}"),
        # sentences: a 2-D integer batch (batch, S): one sentence without its batch dimension, a float batch
        "x 1-D refused": _refusal(lambda: net(x[0], m[:1]), "x must be an integer tensor of shape (batch, S)"),
        "x float refused": _refusal(lambda: net(x.double(), m), "x must be an integer tensor of shape (batch, S)"),
        # targets: one per sentence, a 1-D tensor
        "targets (2, 1) refused": _refusal(lambda: net.loss(x, m, b[:, None]), "b must be an integer tensor of shape (2,)"),
        "3 targets for 2 sentences refused": _refusal(lambda: net.loss(x, m, torch.tensor([0, 1, 2])),
                                                      "shape (2,)"),
        # targets are class indices: int32 and float targets refused naming b (a traceback from the loss before)
        "targets int32, float refused": all(_refusal(lambda d=d: net.loss(x, m, b.to(d)), "b (the masked tokens)",
                                                     "int64") for d in (torch.int32, torch.float32)),
        # the CBOW of Eq. (1): its initial scale is a number > 0
        "AttentionCBOW init_std -0.1, 0, '0.1', inf refused": all(
            _refusal(lambda s=s: AttentionCBOW(V, 4, init_std=s), "init_std must be a finite number > 0")
            for s in (-0.1, 0, "0.1", math.inf)),
    }
    # on the valid batch: [MASK] at m and every other token kept (by hand), and the loss the mean of
    # -log softmax(logits)_b written out from the model's logits
    by_hand = tok.clone()
    by_hand[torch.arange(2), m] = V
    masked_ok = torch.equal(x, by_hand) and torch.equal(tok, torch.tensor([[0, 1, 2, 3], [4, 5, 6, 0]]))
    with torch.no_grad():
        logits = net(x, m)
        ce = -(logits[torch.arange(2), b] - torch.logsumexp(logits, -1)).mean()
        loss_dev = float(abs(net.loss(x, m, b) - ce) / abs(ce))
    ok = all(cases.values()) and masked_ok and loss_dev <= 1e-12
    return holds_if(ok, measured=dict(cases, masked_as_printed=masked_ok, loss_rel_dev=loss_dev),
                    tolerance="every refusal a ValueError of one line naming the argument and what is allowed; "
                              "the loss within 1e-12 (float64)",
                    explanation=f"BidirAttentionMLM (|V| = {V}, S = {S}) and mask_sentences on integer and "
                                "non-integer sizes, targets and tokens outside [0, |V| - 1] (and targets not one per "
                                "sentence), AttentionCBOW's initial scale not a number > 0, a position outside "
                                "[0, S - 1] and a batch without [MASK] at m; on a valid batch, the masked "
                                "sentences against [MASK] set by hand and the loss against the cross-entropy "
                                "written out from the logits")


@claim("bidir.sec2-1.mlm-domain",
       reference="Sec. 2.1 (the MLM: |V| tokens plus [MASK], sentences of length S, H heads)",
       statement="The MLM is defined for integer sizes (|V| >= 2, S, p, d, d_w, H, layers >= 1), token ids in "
                 "[0, |V| - 1] with [MASK] = |V| at the masked position m in [0, S - 1]; the library refuses "
                 "anything else (a bool or float size, a target or token out of range, a position out of range, "
                 "a batch without [MASK] at m) in one line naming the argument and the allowed range; the masked "
                 "sentence is the sentence with [MASK] at m, and the loss the cross-entropy of the masked token.",
       method="torch",
       vouches_for=("experiments.models.bidir.mask_sentences", "experiments.models.bidir.BidirAttentionMLM.loss"))
def _mlm_domain():
    return check_mlm_domain()


# --------------------------------------------------------------------------- train_mlm
DOC_LR, DOC_BATCH = 3e-3, 256       # docs/bidir_experiments.md: "Adam lr 3e-3, batch 256"
TRAIN_TOL = 1e-6                    # float32, the same operations in the same order: equal up to rounding


def mlm_by_hand(win: np.ndarray, V: int, p: int, heads: int, epochs: int, seed: int):
    """The schedule train_mlm documents, written out: the linear bidirectional attention of Sec. 2.1 with
    H heads of size p/H, one layer, N(0, 0.1^2) weights (W' at 0.3 of that) drawn from the run's generator;
    each epoch a random permutation of the windows and one uniformly drawn masked position per window
    (from the same generator, in that order); batches of DOC_BATCH in permutation order, the mean
    cross-entropy of the masked token, one Adam step (lr DOC_LR) per batch; the epoch's loss is the mean
    over windows.  Returns (parameters, losses)."""
    import torch

    from attnlab.experiments.models.bidir import BidirAttentionMLM

    g = torch.Generator().manual_seed(seed)
    S = win.shape[1]
    net = BidirAttentionMLM(V, S, p, d=p // heads, d_w=p // heads, heads=heads, layers=1, init_std=0.1,
                            w1_scale=0.3, generator=g, dtype=torch.float32)
    opt = torch.optim.Adam(net.parameters(), lr=DOC_LR)
    X = torch.as_tensor(win)
    n = len(win)
    losses = []
    for _ in range(epochs):
        perm = torch.randperm(n, generator=g)
        pos = torch.randint(0, S, (n,), generator=g)
        total = 0.0
        for start in range(0, n, DOC_BATCH):
            rows = perm[start:start + DOC_BATCH]
            tok, m = X[rows], pos[rows]
            target = tok[torch.arange(len(rows)), m]
            x = tok.clone()
            x[torch.arange(len(rows)), m] = V                          # [MASK]
            logits = net(x, m)
            loss = torch.nn.functional.cross_entropy(logits, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(rows)
        losses.append(total / n)
    return {k: v.detach().clone() for k, v in net.state_dict().items()}, losses


def check_mlm_training(seed: int = 5):
    import torch

    from attnlab.experiments.models.bidir_analogy import train_mlm, windows

    rng = np.random.default_rng(seed)
    V, S, p, heads, epochs = 11, 5, 8, 2, 3
    docs = [list(rng.integers(0, V, size=int(k))) for k in (260, 140, 230)]      # 600 windows: 3 batches/epoch
    docs = [[int(t) for t in d] for d in docs]
    win = windows(docs, S)
    ref_params, ref_losses = mlm_by_hand(win, V, p, heads, epochs, 0)        # train_mlm's default seed is 0
    kept = []
    model, losses = train_mlm(win, V, p=p, heads=heads, epochs=epochs,
                              on_epoch=lambda ep, loss, st: kept.append((ep, loss, copy.deepcopy(st))))

    def rel(a, b):
        return float((a - b).abs().max() / max(1.0, float(b.abs().max())))
    dev = {"losses": max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses)) if len(losses) == epochs
           else float("inf")}
    got = model.state_dict()
    dev["parameters"] = (max(rel(got[k], ref_params[k]) for k in ref_params)
                         if set(got) == set(ref_params) and all(got[k].shape == ref_params[k].shape for k in got)
                         else float("inf"))
    # resumed from the epoch-2 state (a stored count off by one shows as a repeated or skipped epoch): the same run
    ep1 = kept[1][2] if len(kept) > 1 else None
    resumed, r_losses = (train_mlm(win, V, p=p, heads=heads, epochs=epochs, seed=seed, state=ep1)   # (seed unused)
                         if ep1 is not None else (None, []))
    same = (resumed is not None and r_losses == losses
            and all(torch.equal(resumed.state_dict()[k], got[k]) for k in got))
    told = ([(ep, loss) for ep, loss, _ in kept] == [(k + 1, v) for k, v in enumerate(losses)]
            and [st["epoch"] for _, _, st in kept] == [k + 1 for k in range(len(losses))])
    refuses = _refusal(lambda: train_mlm(win[0], V, p=p, heads=heads, epochs=1), "win must be a 2-d array")
    ok = _worse(*dev.values()) <= TRAIN_TOL and same and told and refuses
    return holds_if(ok, measured=dict(rel_dev=dev, losses=losses, resumed_same_run=same, epochs_told=told,
                                      refuses_1d_windows=refuses),
                    tolerance=dict(rel_dev=TRAIN_TOL),
                    explanation=f"train_mlm with its default lr, batch and seed on {len(win)} random windows (|V| = {V}, "
                                f"S = {S}, p = {p}, H = {heads}, {epochs} epochs: 3 batches of <= {DOC_BATCH} each) "
                                "against the documented schedule written out (torch's Adam at lr 3e-3, the mean "
                                "cross-entropy of the masked token from the model's logits, the [MASK] id set by "
                                "hand); the run resumed from its epoch-2 state against the straight run; the "
                                "epochs on_epoch is told and the epoch each state stores; 1-d windows refused")


@claim("bidir.sec5.mlm-training",
       reference="Sec. 5 / Table 3 (the MLM whose embeddings answer analogies; here the local substitute) and "
                 "Sec. 2.1 (the MLM objective)",
       statement="train_mlm trains the linear bidirectional attention of Sec. 2.1 (H heads of size p/H, one "
                 "layer) by masked-token prediction: each epoch a random order of the windows and one uniformly "
                 "drawn masked position per window, batches of 256, one Adam step (lr 3e-3) on the mean "
                 "cross-entropy of the masked token per batch; an epoch's loss is the mean over windows; a run "
                 "resumed from a saved epoch is the same run.",
       method="torch",
       vouches_for=("experiments.models.bidir_analogy.train_mlm",))
def _mlm_training():
    return check_mlm_training()
