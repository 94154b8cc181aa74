"""Whether a results record's training converged, judged from the curves the record stores (DESIGN.md,
"What a verdict must mean": beats the trivial predictor, levelled off -- not how training stopped).

This module is the one place the rule lives.  The runners call it when they write a record
(:meth:`attnlab.experiment.RunContext.write_record`), and :mod:`attnlab.migrate_convergence`
re-judges the committed records with it.

The rule (``RULE``), for one trained model:

(a) **Beats the trivial predictor.**  The trivial predictor ignores the input: the training split's
    majority class (classification accuracy), the training mean (MSE), the training split's marginal
    frequencies (cross-entropy), a constant Poisson rate fitted on the training targets (Poisson
    loss).  With ``t`` its value and ``p`` the value of a perfect predictor (accuracy 100 %, MSE 0
    or the Bayes MSE where the record stores it, cross-entropy 0, the saturated Poisson loss), the
    model's value ``v`` must close at least ``MARGIN`` of the gap: ``(v - t) / (p - t) >= MARGIN``.
    ``v`` is the best validation value (the weights the runners restore); where a protocol has no
    validation split it is the reported test metric, and ``t`` the trivial predictor on the test
    split (e.g. kernel-time-warping's stored ``test_class_balance``).

    (a) also holds when the record stores the **population optimum of the model's class** (the
    least loss any member of the class can reach on the data's distribution, e.g. efa-synthetic's FM,
    App. H.1: ``extra.fm_population_optimum`` of an FM record, or ``extra.class_optimum``) and ``v``
    is within ``MARGIN * |t - p|`` of it: the model reached the best its class can do, even where
    that is no better than the trivial predictor (a misspecified class), so it is not "at chance".

    Why 5 %: "at chance" must mean "not distinguishable from the trivial predictor", and our
    validation splits hold hundreds to a few thousand examples.  For a binary task at share 0.5 the
    standard error of an accuracy measured on 1,000 examples is 1.6 points; 5 % of the gap to
    perfect is 2.5 points, about 1.6 standard errors -- smaller margins would call noise "learned",
    and much larger ones would call weak but real learning "at chance".  For losses the same margin
    reads "the model removes at least 5 % of the trivial predictor's excess loss over a perfect one".

    Where an accuracy was measured on few examples the 5 % can be less than sampling noise (FordA's
    361 validation series: one standard error is 2.6 points; AllGestureWiimote's 70: 3.6 points), so
    (a) also needs, where the number n of evaluation examples is known (stored with the trivial
    value), a lead over the trivial share t of more than ``Z_NOISE`` = 1.96 binomial standard errors
    of that share, 100·sqrt(t(1-t)/n) points: a lead within it is not distinguishable from the
    trivial predictor (curve-v3; e.g. FordA continuous softmax seed 3, whose restored epoch-1 weights
    score 55.7 % against the majority class's 51.2 %, early-stopped at epoch 11).

(b) **Levelled off.**  Along the stored curve (validation loss; where a protocol has no validation
    split, the training loss) the running best value improved, over the last ``WINDOW_FRACTION``
    (10 %) of the epochs (at least ``MIN_WINDOW`` epochs), by less than ``LEVEL_TOL`` of the whole
    improvement of the running best from the first stored epoch to the end:
    ``rel_change_last_10pct = (best before the window - best overall) / (start - best overall)``,
    where ``start`` is the first value, or the trivial predictor's value t on the curve's own quantity
    where that is known and better (curve-v4: ``start = min(first, t)``, ``max`` for a score).  A first
    epoch far worse than the trivial predictor inflated the whole improvement under curve-v3: an
    efa-temperature FM run starting at 278 against a trivial 0.98 and still falling 18 % per epoch
    measured 0.14 %.  Where the best value is not better than t, ``start`` is the first value (the model
    then fails (a) unless it sits at its class's optimum).
    Early stopping that fired with its best epoch before that window has improvement 0 there, so an
    early-stopped run whose best epoch lies well before its last epoch passes (b) by construction; a
    fixed schedule whose best epoch is among the last 10 % does not, unless the gain there is tiny.

    Why 1 %: for a curve approaching its limit exponentially with time constant tau over n epochs,
    the share of the gain made in the last tenth is ``e^{-0.9 n/tau} (1 - e^{-0.1 n/tau})`` of the
    whole; it falls below 1 % only after about 4.5 time constants, when the gain still to come is
    about 1.8 % of the gain made: the reported value is then within about 2 % of the model's total
    improvement of where training was heading.  The running best (not the last value) is used so
    that one noisy epoch neither makes a curve look flat nor unfinished.

Judgement: ``converged`` = (a) and (b).  Status, in order: ``not-trained`` (the record evaluates given
weights or times kernels: usable, no convergence to judge); ``at-chance`` (a) fails; ``unknown`` when
the curve is missing, truncated or shorter than a window plus one epoch (``converged: null``, which
counts as NOT converged); ``not-levelled`` (b) fails; ``unknown`` when (b) holds but the trivial value is
unknown; else ``converged``.

Records that train several models (bidir-toy-corpus: CBOW and attention per dimension p, trained by
full-batch L-BFGS with no epochs and no validation split) are judged per model, and each metric row
keeps its own ``converged``: there (b) is the optimiser's own first-order test stored in
``extra.per_dim[p][*_lbfgs].converged`` (final max |gradient| <= the run's ``grad_tol``) -- a curve
cannot be had; (a) compares the training loss with the marginal-frequency predictor's where the
caller supplies it (``trivial``), with the stored entropy floor (``loss_floor``) as the perfect value.

Records that fit several models by other means are judged per model too, each metric row carrying the
flag of the model (and setting) it comes from:

- **Models fitted by a library solver, not by epochs** (bidir-tabular-sim, bidir-auto-mpg: the
  scikit-learn baselines, one fit per setting).  (a): the *training* accuracy against the training
  labels' majority share (perfect 100 %), stored by the runners in
  ``extra.majority_class_train_share[setting]`` (the migration recomputes it for older records).  Not
  the test accuracy: these test splits are shifted on purpose (Table 1's covariate shift, auto-mpg's
  held-out origin), so a test accuracy at the majority share is the outcome the papers measure, not a
  sign that the fit failed (curve-v3; curve-v2 held the test accuracy against it and called LR "at
  chance" where the paper's own LR is at chance out of distribution).  (b):
  *tree ensembles* (RF, GB) have no optimiser to converge -- each tree is grown greedily until its own
  stopping rule (depth, purity) and the ensemble's size is a hyper-parameter chosen by the grid search,
  so the fit is complete when ``fit`` returns and (b) holds by construction; *iterative solvers* (LR's
  lbfgs, the MLP's adam) are levelled iff their own stopping criterion fired: ``n_iter < max_iter``
  and no ConvergenceWarning in the final fit, stored in ``extra.solver[setting][model]`` (records
  without it: unknown).  The tabular attention model ATN trains by epochs: (b) on its per-epoch
  training loss ``extra.atn_losses[setting]`` (no validation split), (a) as above.
- **Curves per model** (bidir-analogies: the MLM's ``extra.mlm_losses`` and the CBOW's
  ``extra.cbow_losses``, training losses against ``extra.trivial_loss[model]``; fenchel-ot-vit:
  ``extra.curves[setting][model]`` with the training loss for (b) and the test accuracy against
  ``extra.majority_class_accuracy``; fenchel-deviation's substitutes: ``extra.curves[model]``, the
  held-out loss at evenly spaced checkpoints for (b), its best value against ``extra.trivial_loss``).
  Embeddings loaded as given (GloVe) are not trained.
"""
from __future__ import annotations

import math
from typing import Any

RULE = "curve-v4"
MARGIN = 0.05               # (a): share of the trivial-to-perfect gap the model must close
Z_NOISE = 1.96              # (a), accuracy on n examples: the lead over the trivial share must exceed
                            # this many binomial standard errors of that share
LEVEL_TOL = 0.01            # (b): share of the curve's total improvement allowed in its last window
WINDOW_FRACTION = 0.10      # (b): the last 10 % of the epochs ...
MIN_WINDOW = 2              # ... and never fewer than 2 epochs

STATUSES = ("converged", "not-levelled", "at-chance", "unknown", "not-trained")

# models that are given (pretrained) weights, evaluated only
_PRETRAINED_PREFIXES = ("bert:all-MiniLM",)
# experiments whose records time code and train nothing
_NOT_TRAINING = {"kernel-cost"}
# experiments whose baselines are fitted by a library solver (scikit-learn), one fit per setting
_SOLVER_FITTED = {"bidir-tabular-sim", "bidir-auto-mpg"}
_TREE_ENSEMBLES = ("RF", "GB")
_ITERATIVE_SOLVERS = ("LR", "MLP")


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(float(x))


def _round(x, digits: int = 7):
    """`x` rounded to `digits` significant digits (None stays None)."""
    if x is None or not _finite(x):
        return None
    x = float(x)
    return 0.0 if x == 0 else float(f"{x:.{digits - 1}e}")


# --------------------------------------------------------------------------- the two tests
def window(n: int) -> int:
    """Epochs of the levelling window of an n-epoch curve: the last 10 %, at least MIN_WINDOW."""
    return max(MIN_WINDOW, math.ceil(WINDOW_FRACTION * n))


def levelling(curve, higher_is_better: bool = False, trivial: float | None = None) -> float | None:
    """(b)'s statistic of a per-epoch curve: the running best's improvement over the last window as a
    share of its whole improvement (0 when the curve never improved after its first epoch).  None when
    the curve is too short (fewer than a window plus one epoch) or holds a non-finite value.

    `trivial`: the trivial predictor's value *on the curve's own quantity*, where known.  The whole
    improvement is then counted from the better of the first value and `trivial` (curve-v4), so that a
    first epoch far worse than the trivial predictor (an initialisation transient) does not make a
    curve that is still falling look levelled.  Where the best value is not better than `trivial` that
    count is not positive and the improvement from the first value is used, as in curve-v3 (such a
    model fails (a) unless it sits at its class's optimum)."""
    if curve is None:
        return None
    vals = [float(v) for v in curve]
    if any(not math.isfinite(v) for v in vals):
        return None
    if higher_is_better:
        vals = [-v for v in vals]
    n = len(vals)
    w = window(n)
    if n < w + 1:
        return None
    best_all, best_before = min(vals), min(vals[:n - w])
    total = vals[0] - best_all
    if _counted_from_trivial(curve, higher_is_better, trivial):
        total = (-float(trivial) if higher_is_better else float(trivial)) - best_all
    if total <= 0:
        return 0.0
    return (best_before - best_all) / total


def _counted_from_trivial(curve, higher_is_better: bool, trivial) -> bool:
    """Whether (b) counts the curve's improvement from `trivial` (curve-v4): it is known, better than the
    first value and worse than the best."""
    if not _finite(trivial) or not curve:
        return False
    sign = -1.0 if higher_is_better else 1.0
    vals = [sign * float(v) for v in curve]
    t = sign * float(trivial)
    return min(vals) < t < vals[0]


def gap_closed(value: float, trivial: float, perfect: float) -> float | None:
    """(a)'s statistic: the share of the trivial-to-perfect gap that `value` closes (None when the gap
    is empty)."""
    if not (_finite(value) and _finite(trivial) and _finite(perfect)) or perfect == trivial:
        return None
    return (float(value) - float(trivial)) / (float(perfect) - float(trivial))


def decide(curve, *, higher_is_better: bool = False, compared: float | None = None,
           trivial: float | None = None, perfect: float | None = None, curve_what: str = "validation loss",
           compared_what: str = "best validation value", levelled: bool | None = None,
           levelled_why: str | None = None, class_optimum: float | None = None,
           class_what: str = "the model's class", n_eval: int | None = None) -> dict:
    """The judgement of one trained model: the ``convergence`` object ({status, rule, trivial, best_val,
    rel_change_last_10pct, reason} plus ``converged``).  `curve`: the per-epoch curve for (b) (its
    `higher_is_better`); `compared`: the value held against the `trivial` and `perfect` predictors in
    (a) (default: the curve's best value); `levelled`: (b) decided otherwise (an optimiser's own
    tolerance test) when there is no curve, with `levelled_why` saying how; `class_optimum`: the
    population optimum of the model's class (`class_what`), which (a) also accepts within MARGIN of
    the trivial-to-perfect gap; `n_eval`: for an accuracy in percent, the number of examples it was
    measured on -- then (a) also needs a lead over the trivial share of more than Z_NOISE binomial
    standard errors of that share, 100·sqrt(t(1-t)/n) (a smaller lead is sampling noise)."""
    # the trivial value is on the curve's own scale only where (a) compares the curve's best value
    curve_trivial = trivial if compared is None else None
    rel = levelling(curve, higher_is_better, curve_trivial) if levelled is None else None
    if compared is None and curve is not None and len(curve) and all(_finite(v) for v in curve):
        compared = max(curve) if higher_is_better else min(curve)
    closed = gap_closed(compared, trivial, perfect) if compared is not None and trivial is not None \
        and perfect is not None else None
    at_optimum = None
    if closed is not None and _finite(class_optimum):
        tol = MARGIN * abs(float(trivial) - float(perfect))
        at_optimum = abs(float(compared) - float(class_optimum)) <= tol
        opt_why = (f"{compared_what} {compared:.4g} is {abs(compared - class_optimum):.2g} from the population "
                   f"optimum of {class_what} ({class_optimum:.4g}); allowed {MARGIN:.0%} of the trivial-to-perfect "
                   f"gap = {tol:.2g}")
    out = {"status": None, "rule": RULE, "trivial": _round(trivial), "best_val": _round(compared),
           "rel_change_last_10pct": _round(rel, 4)}
    if _finite(class_optimum):
        out["class_optimum"] = _round(class_optimum)
    noise = None
    if closed is not None and n_eval and perfect == 100.0 and 0.0 < float(trivial) < 100.0:
        t = float(trivial) / 100.0
        noise = Z_NOISE * 100.0 * math.sqrt(t * (1.0 - t) / int(n_eval))
        out["noise_lead"] = _round(noise, 4)
    if closed is not None and closed < MARGIN and not at_optimum:
        out["status"] = "at-chance"
        out["reason"] = (f"{compared_what} {compared:.4g} closes {closed:.1%} of the gap from the trivial "
                         f"predictor ({trivial:.4g}) to a perfect one ({perfect:.4g}); needs {MARGIN:.0%}")
        if at_optimum is False:
            out["reason"] += f", or to reach its class's optimum: {opt_why}"
    elif noise is not None and float(compared) - float(trivial) <= noise:
        out["status"] = "at-chance"
        out["reason"] = (f"{compared_what} {compared:.4g} leads the trivial predictor ({trivial:.4g}) by "
                         f"{float(compared) - float(trivial):.3g} points, within {Z_NOISE:g} binomial standard "
                         f"errors of its share on {int(n_eval)} examples ({noise:.3g} points): not distinguishable "
                         "from it")
    elif levelled is None and rel is None:
        n = 0 if curve is None else len(curve)
        out["status"] = "unknown"
        bad = [] if curve is None else [i for i, v in enumerate(curve) if not _finite(v)]
        out["reason"] = ("no per-epoch curve stored" if curve is None else
                         f"{curve_what} curve holds a value that is not a finite number at epoch {bad[0] + 1} of {n}"
                         + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else "") if bad else
                         f"{curve_what} curve of {n} epochs is too short to judge levelling (needs {window(n) + 1})")
    elif (levelled is False) or (levelled is None and rel >= LEVEL_TOL):
        out["status"] = "not-levelled"
        out["reason"] = (levelled_why or "") if levelled is False else (
            f"{curve_what}: the last {window(len(curve))} of {len(curve)} epochs improved the best value by "
            f"{rel:.1%} of its total improvement" + (
                f" from the trivial predictor's {curve_trivial:.4g} (its first epoch, {float(curve[0]):.4g}, "
                "was worse)" if _counted_from_trivial(curve, higher_is_better, curve_trivial) else "")
            + f" (tolerance {LEVEL_TOL:.0%})")
    elif closed is None:
        out["status"] = "unknown"
        out["reason"] = ("levelled off, but the trivial predictor's value is unknown" if trivial is None
                         else "levelled off, but the trivial-to-perfect gap is empty or unknown")
    else:
        out["status"] = "converged"
        lv = levelled_why if levelled else (f"{curve_what} levelled (last {window(len(curve))} of "
                                            f"{len(curve)} epochs: {rel:.2%} of its improvement)")
        out["reason"] = (f"{lv}; {opt_why} (it closes {closed:.0%} of the trivial-to-perfect gap: the best "
                         "its class can do)" if closed < MARGIN else
                         f"{lv}; {compared_what} closes {closed:.0%} of the trivial-to-perfect gap")
    out["converged"] = {"converged": True, "not-levelled": False, "at-chance": False}.get(out["status"])
    return out


def not_trained(reason: str) -> dict:
    return {"status": "not-trained", "rule": RULE, "trivial": None, "best_val": None,
            "rel_change_last_10pct": None, "reason": reason, "converged": None}


# --------------------------------------------------------------------------- one record
def _metric(rec: dict, name: str) -> float | None:
    for m in rec.get("metrics") or []:
        if m.get("metric") == name and _finite(m.get("value")):
            return float(m["value"])
    return None


def _truncated(history: list, rec: dict) -> bool:
    """The stored history is not the whole run (e.g. only its last epochs were kept)."""
    ep = [h[0] if isinstance(h, (list, tuple)) else h.get("epoch") for h in history]
    run = (rec.get("training") or {}).get("epochs_run") or (rec.get("extra") or {}).get("epochs_run")
    return bool(ep) and (ep[0] != 1 or (run is not None and len(history) != run))


def _class_optimum(rec: dict) -> tuple[float | None, str]:
    """The population optimum of the record's model class where the record stores one: a generic
    ``extra.class_optimum`` {"model", "value"} naming the record's model, or efa-synthetic's
    ``extra.fm_population_optimum`` on an FM record (App. H.1; EFA records store it too, as a
    reference: it is not their class's)."""
    extra = rec.get("extra") or {}
    models = {str(m.get("model")) for m in rec.get("metrics") or []}
    co = extra.get("class_optimum")
    if isinstance(co, dict) and _finite(co.get("value")) and models == {str(co.get("model"))}:
        return float(co["value"]), f"the {co['model']} class"
    if _finite(extra.get("fm_population_optimum")) and models == {"FM"}:
        return float(extra["fm_population_optimum"]), "the FM class (App. H.1)"
    return None, "the model's class"


def judge_record(rec: dict, trivial: dict | None = None) -> dict:
    """The judgement of a record from its stored curves.  `trivial`: {"value": the trivial predictor's
    value on the compared metric and split, "perfect": a perfect predictor's (optional), "rows":
    {model: {...}} for records judged per model}, where the record does not store it.  Returns
    {"converged": True | False | None, "convergence": {...}, "rows": {model: converged} (only for
    records whose rows carry their own flag)}."""
    trivial = dict(trivial or {})
    exp = str(rec.get("experiment") or "")
    extra = rec.get("extra") or {}
    training = rec.get("training") or {}
    models = {str(m.get("model")) for m in rec.get("metrics") or []}

    if exp in _NOT_TRAINING:
        return _done(not_trained(f"{exp} times code; it trains nothing"))
    if models and all(m.startswith(_PRETRAINED_PREFIXES) for m in models):
        return _done(not_trained("evaluates a pretrained model (" + ", ".join(sorted(models)) + "); nothing trained"))
    if isinstance(extra.get("per_dim"), dict) and training.get("grad_tol") is not None:
        return _per_model_lbfgs(rec, trivial)
    if exp in _SOLVER_FITTED:
        return _per_fit_tabular(rec, trivial)
    if exp == "bidir-analogies":
        return _per_model_analogies(rec, trivial)
    if exp == "fenchel-ot-vit":
        return _per_fit_ot_vit(rec, trivial)
    if exp == "fenchel-deviation":
        return _per_model_deviation(rec, trivial)

    hist = extra.get("history")
    if isinstance(hist, list) and hist and isinstance(hist[0], (list, tuple)):
        # [epoch, training loss, validation loss] per epoch (the EFA runners); lower is better
        if _truncated(hist, rec):
            return _done(_unknown(f"extra.history holds {len(hist)} epochs ({hist[0][0]}-{hist[-1][0]}) of "
                                  "the run, not its whole curve", rec, trivial, [h[2] for h in hist]))
        curve = [h[2] for h in hist]
        opt, what = _class_optimum(rec)
        return _done(decide(curve, trivial=trivial.get("value"), perfect=trivial.get("perfect", 0.0),
                            curve_what="validation loss", compared_what="best validation loss",
                            class_optimum=opt, class_what=what))
    if isinstance(hist, list) and hist and isinstance(hist[0], dict):
        if _truncated(hist, rec):
            return _done(_unknown(f"extra.history holds {len(hist)} epochs, not the whole run", rec, trivial))
        if all("val_loss" in h for h in hist):
            # the kernel runners with a validation split: (b) on the validation cross-entropy, (a) on the
            # validation accuracy (%) of the restored (best) epoch against the majority class
            curve = [h["val_loss"] for h in hist]
            best_ep = training.get("best_epoch")
            at = [h for h in hist if h.get("epoch") == best_ep] or [min(hist, key=lambda h: h["val_loss"])]
            acc = at[0].get("val_accuracy")
            return _done(decide(curve, compared=acc, trivial=trivial.get("value"),
                                perfect=trivial.get("perfect", 100.0), curve_what="validation loss",
                                compared_what="validation accuracy (%) at the best epoch",
                                n_eval=trivial.get("n")))
        # no validation split (fixed schedule): (b) on the training loss, (a) on the test accuracy
        curve = [h.get("loss") for h in hist]
        tv = trivial.get("value")
        if tv is None and _finite(extra.get("test_class_balance")):
            b = float(extra["test_class_balance"])
            tv = 100.0 * max(b, 1.0 - b)
        return _done(decide(curve, compared=_metric(rec, "accuracy"), trivial=tv,
                            perfect=trivial.get("perfect", 100.0),
                            curve_what="training loss (no validation split)",
                            compared_what="test accuracy (%) (no validation split)", n_eval=trivial.get("n")))
    return _done(_unknown("no per-epoch curve stored" + ("" if training else " (and no training record)"),
                          rec, trivial))


def _unknown(reason: str, rec: dict, trivial: dict, curve=None) -> dict:
    """Status unknown -- unless what is stored already shows the model at chance."""
    if curve:
        d = decide(None, compared=min(curve), trivial=trivial.get("value"),
                   perfect=trivial.get("perfect", 0.0), compared_what="best stored validation loss")
        if d["status"] == "at-chance":
            return d
    return {"status": "unknown", "rule": RULE, "trivial": _round(trivial.get("value")),
            "best_val": _round(min(curve)) if curve else None, "rel_change_last_10pct": None,
            "reason": reason, "converged": None}


def _done(judgement: dict, rows: dict | None = None) -> dict:
    conv = judgement.pop("converged")
    out = {"converged": conv, "convergence": judgement}
    if rows is not None:
        out["rows"] = rows
    return out


def _per_model_lbfgs(rec: dict, trivial: dict) -> dict:
    """bidir-toy-corpus: per (p, model) the L-BFGS gradient test for (b), training loss for (a)."""
    extra, training = rec["extra"], rec["training"]
    keys = {"CBOW": ("cbow_lbfgs", "cbow_loss"), "attention": ("attn_lbfgs", "attn_loss")}
    per, rows = {}, {}
    tol = training.get("grad_tol")
    for p, d in sorted(extra["per_dim"].items(), key=lambda kv: float(kv[0])):
        for model, (lk, loss_k) in keys.items():
            lb = d.get(lk) or {}
            ok = lb.get("converged")
            why = (f"L-BFGS ended with max |gradient| {lb.get('max_abs_grad', float('nan')):.2g} "
                   f"{'<=' if ok else '>'} grad_tol {tol:g} after {lb.get('iterations')} iterations (no epochs, "
                   "no validation split: the optimiser's own stationarity test replaces the curve)")
            tv = ((trivial.get("rows") or {}).get(f"p={p}") or {}).get("value")
            j = decide(None, compared=d.get(loss_k), trivial=tv, perfect=d.get("loss_floor"),
                       levelled=None if ok is None else bool(ok), levelled_why=why,
                       compared_what="training loss")
            if ok is None:
                j.update(status="unknown", converged=None, reason="no L-BFGS convergence test stored")
            per[f"p={p} {model}"] = j
            rows[(f"p={p}", model)] = j.pop("converged")
    for m in rec.get("metrics") or []:
        if "converged" in m and m.get("model") not in keys:
            # a row of no model (the corpus's entropy floor): nothing trained, usable as it is
            j = not_trained("a property of the corpus (e.g. its entropy floor), not of a trained model")
            j.pop("converged")
            per[f"{m.get('setting')} {m.get('model')}"] = j
            rows[(str(m.get("setting")), str(m.get("model")))] = None
    return _summary(per, rows)


def _summary(per: dict, rows: dict) -> dict:
    """The record's judgement from its per-model ones (`per`: label -> judgement without ``converged``;
    `rows`: (setting, model) -> flag, setting None for every row of the model): converged iff every
    trained model converged, else the first of at-chance, not-levelled, unknown among them."""
    statuses = [j["status"] for j in per.values() if j["status"] != "not-trained"]
    if not statuses:
        return _done(dict(not_trained("no model of this record is trained here"), models=per), rows)
    status = ("converged" if all(s == "converged" for s in statuses) else
              next(s for s in ("at-chance", "not-levelled", "unknown") if s in statuses))
    conv = True if status == "converged" else (None if status == "unknown" else False)
    n_ok = statuses.count("converged")
    summary = {"status": status, "rule": RULE, "trivial": None, "best_val": None, "rel_change_last_10pct": None,
               "reason": f"{n_ok} of {len(per)} models converged; judged per model (rows carry their own flag)",
               "models": per, "converged": conv}
    return _done(summary, rows)


def _rows_of(rec: dict) -> list[tuple[str, str]]:
    """The (setting, model) pairs of a record's metric rows, in order, once each."""
    seen: dict = {}
    for m in rec.get("metrics") or []:
        seen.setdefault((str(m.get("setting")), str(m.get("model"))), None)
    return list(seen)


def _row_value(rec: dict, setting: str, model: str, metric: str) -> float | None:
    for m in rec.get("metrics") or []:
        if (str(m.get("setting")), str(m.get("model")), m.get("metric")) == (setting, model, metric) \
                and _finite(m.get("value")):
            return float(m["value"])
    return None


def _stored_trivial(extra: dict, trivial: dict, key: str, store: str = "majority_class_accuracy"):
    """A trivial value stored by the runner (``extra[store][key]``), else the caller's
    (``trivial["rows"][key]["value"]``, computed by the migration)."""
    v = (extra.get(store) or {}).get(key) if isinstance(extra.get(store), dict) else None
    if _finite(v):
        return float(v)
    v = ((trivial.get("rows") or {}).get(key) or {}).get("value")
    return float(v) if _finite(v) else None


def _pop(j: dict) -> tuple[dict, bool | None]:
    conv = j.pop("converged")
    return j, conv


def _per_fit_tabular(rec: dict, trivial: dict) -> dict:
    """bidir-tabular-sim / bidir-auto-mpg: one judgement per (setting, model) fit.  (a) the training
    accuracy against the training labels' majority share (the test split is shifted by design); (b) by
    construction for tree ensembles, the solver's own stopping test for LR and MLP, the per-epoch
    training loss for ATN."""
    extra = rec.get("extra") or {}
    solver = extra.get("solver") or {}
    atn = extra.get("atn_losses") or {}
    per, rows = {}, {}
    for setting, model in _rows_of(rec):
        acc = _row_value(rec, setting, model, "train_acc")
        tv = _stored_trivial(extra, trivial, setting, "majority_class_train_share")
        common = dict(compared=acc, trivial=tv, perfect=1.0,
                      compared_what="training accuracy (the test split is shifted by design; the training "
                                    "labels' majority share is the trivial predictor)")
        if model in _TREE_ENSEMBLES:
            j = decide(None, levelled=True, levelled_why=(
                "a tree ensemble has no optimiser to converge: each tree is grown greedily to its stopping "
                "rule and the number of trees is a hyper-parameter chosen by the grid search, so the fit is "
                "complete when it returns ((b) holds by construction)"), **common)
        elif model in _ITERATIVE_SOLVERS:
            sv = (solver.get(setting) or {}).get(model)
            if not isinstance(sv, dict) or sv.get("n_iter") is None or sv.get("max_iter") is None:
                j = decide(None, **common)
                if j["status"] == "unknown":
                    j["reason"] = (f"{model} is fitted by an iterative solver whose stopping test (n_iter < "
                                   "max_iter, no ConvergenceWarning) this record does not store")
            else:
                ok = int(sv["n_iter"]) < int(sv["max_iter"]) and not sv.get("convergence_warning")
                why = (f"the solver stopped by its own criterion after {sv['n_iter']} of at most {sv['max_iter']} "
                       "iterations" if ok else
                       f"the solver ran {sv['n_iter']} of at most {sv['max_iter']} iterations" +
                       (" and warned that it did not converge" if sv.get("convergence_warning") else ""))
                j = decide(None, levelled=ok, levelled_why=why, **common)
        elif model == "ATN":
            curve = atn.get(setting) if isinstance(atn, dict) else None
            j = decide(curve, curve_what="training loss (no validation split)", **common)
            if curve is None and j["status"] == "unknown":
                j["reason"] = "no per-epoch curve of ATN stored (records before issue 44)"
        else:
            # pytorch_tabular models: the library's own early stopping; no curve stored
            j = decide(None, **common)
            if j["status"] == "unknown":
                j["reason"] = f"{model} (pytorch_tabular): no per-epoch curve stored"
        per[f"{setting} {model}"], rows[(setting, model)] = _pop(j)
    return _summary(per, rows)


def _per_model_analogies(rec: dict, trivial: dict) -> dict:
    """bidir-analogies: the locally trained MLM and CBOW judged from their per-epoch training losses;
    embeddings loaded as given (GloVe, and the paper's word2vec / BERT when given) are not trained."""
    extra = rec.get("extra") or {}
    curves = {"MLM-local": extra.get("mlm_losses"), "CBOW-local": extra.get("cbow_losses")}
    per, rows = {}, {}
    for model in dict.fromkeys(str(m.get("model")) for m in rec.get("metrics") or []):
        key = next((k for k in curves if model.startswith(k)), None)
        if key is None:
            j = not_trained("embeddings loaded as given (pretrained elsewhere); nothing trained here")
        else:
            j = decide(curves[key], trivial=_stored_trivial(extra, trivial, model, "trivial_loss"), perfect=0.0,
                       curve_what="training loss (no validation split)",
                       compared_what="best training loss (marginal word frequencies are the trivial predictor)")
            if curves[key] is None and j["status"] == "unknown":
                j["reason"] = f"no per-epoch curve of {key} stored (records before issue 44)"
        per[model], rows[(None, model)] = _pop(j)
    return _summary(per, rows)


def _per_fit_ot_vit(rec: dict, trivial: dict) -> dict:
    """fenchel-ot-vit: per (learning rate, model), (b) on the per-epoch training loss (no validation
    split), (a) on the test accuracy against the training labels' majority class."""
    extra = rec.get("extra") or {}
    curves = extra.get("curves") or {}
    tv = extra.get("majority_class_accuracy", trivial.get("value"))
    tv = float(tv) if _finite(tv) else None
    per, rows = {}, {}
    for setting, model in _rows_of(rec):
        c = (curves.get(setting) or {}).get(model) or {}
        j = decide(c.get("train_loss"), compared=_row_value(rec, setting, model, "test_acc"), trivial=tv,
                   perfect=1.0, curve_what="training loss (no validation split)",
                   compared_what="test accuracy (no validation split)")
        if not c and j["status"] == "unknown":
            j["reason"] = "no per-epoch curve stored (records before issue 44)"
        per[f"{setting} {model}"], rows[(setting, model)] = _pop(j)
    return _summary(per, rows)


def _per_model_deviation(rec: dict, trivial: dict) -> dict:
    """fenchel-deviation's substitutes (a BERT-like and a T5-like model trained here): (b) on the held-out
    loss at evenly spaced checkpoints of training, (a) its best value against the marginal-frequency
    predictor of the targets."""
    extra = rec.get("extra") or {}
    curves = extra.get("curves") or {}
    per, rows = {}, {}
    for model in dict.fromkeys(str(m.get("model")) for m in rec.get("metrics") or []):
        if ":" in model:                        # "<kind>:<weights>": pretrained weights given by --weights
            per[model], rows[(None, model)] = _pop(not_trained("evaluates pretrained weights; nothing trained"))
            continue
        c = curves.get(model) or {}
        j = decide(c.get("eval_loss"), trivial=_stored_trivial(extra, trivial, model, "trivial_loss"), perfect=0.0,
                   curve_what="held-out loss at evenly spaced checkpoints",
                   compared_what="best held-out loss (marginal target frequencies are the trivial predictor)")
        if not c and j["status"] == "unknown":
            j["reason"] = "no training curve stored (records before issue 44)"
        per[model], rows[(None, model)] = _pop(j)
    return _summary(per, rows)


def apply(rec: dict, trivial: dict | None = None) -> dict:
    """`rec` with its ``converged`` key(s) re-judged and a ``convergence`` object, every other key and
    the key order unchanged (new keys go after ``converged``, or before ``extra`` where the record had no
    ``converged``)."""
    j = judge_record(rec, trivial)
    out: dict[str, Any] = {}
    placed = False
    for k, v in rec.items():
        if k == "convergence":
            continue
        if k == "extra" and not placed:
            out["converged"], out["convergence"] = j["converged"], j["convergence"]
            placed = True
        if k == "converged":
            out["converged"], out["convergence"] = j["converged"], j["convergence"]
            placed = True
            continue
        if k == "metrics" and "rows" in j:
            v = [_row_flag(m, j["rows"]) for m in v]
        out[k] = v
    if not placed:
        out["converged"], out["convergence"] = j["converged"], j["convergence"]
    return out


def _row_flag(row: dict, flags: dict) -> dict:
    """The row with the flag of its (setting, model), or of its model (setting None); a row of no
    judged model is left as it is."""
    key = (str(row.get("setting")), str(row.get("model")))
    if key not in flags:
        key = (None, str(row.get("model")))
    if key not in flags:
        return row
    if "converged" not in row:
        return dict(row, converged=flags[key])
    return {k: (flags[key] if k == "converged" else v) for k, v in row.items()}
