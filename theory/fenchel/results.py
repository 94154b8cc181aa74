"""Empirical claims of the Fenchel-dual attention paper (`fenchel.results.*`), judged from the committed
records of `attnlab run fenchel-*` (attnlab.evidence): Figs 4-8 ("lambda* ~ alpha z", a small relative
deviation in every layer) and Tables 1-2 (OT-ViT against ViT).  Each skips, with the reason, until
converged records exist for >= 5 seeds.  Data: LABELLED SUBSTITUTES (small BERT-like / T5-like models
trained on movie-review sentences instead of pretrained bert-base / t5-small; the digits data set
instead of CIFAR)."""
from __future__ import annotations

from attnlab.catalog import claim, holds_if
from attnlab.evidence import better, mean_ci


def _small(cid, ref, model, settings, bound):
    @claim(cid, reference=ref, method="results",
           statement=f"In the {model} substitute, the per-layer head average of the relative deviation "
                     f"||lambda* - alpha z|| / ||lambda*|| stays below {bound} in every layer "
                     f"({', '.join(settings)}); data: LABELLED SUBSTITUTE (small model trained on movie-review "
                     "sentences).")
    def _():
        stats = {s: mean_ci("fenchel-deviation", "full", s, model, "rel_dev_mean") for s in settings}
        return holds_if(all(v["hi"] < bound for v in stats.values()),
                        measured={s: [round(v["lo"], 4), round(v["hi"], 4)] for s, v in stats.items()},
                        tolerance=f"upper end of every layer's 95% CI < {bound}",
                        explanation="fenchel-deviation (full), rel_dev_mean per layer, over seeds")


_small("fenchel.results.bert-rel-dev-small", "Figs 4-5 (BERT)", "bert", [f"layer{i}" for i in (1, 2)], 0.1)
_small("fenchel.results.t5-enc-rel-dev-small", "Figs 4, 6 (T5 encoder)", "t5", [f"enc/layer{i}" for i in (1, 2)], 0.1)


@claim("fenchel.results.ot-vit-beats-vit-digits", reference="Tables 1-2 (OT-ViT vs ViT), Sec 9",
       statement="OT-ViT has a higher test accuracy than ViT (lr 3e-3); data: LABELLED SUBSTITUTE (the digits "
                 "data set instead of CIFAR-10/100).", method="results")
def _():
    return better("fenchel-ot-vit", "full", "digits/lr=3e-03", "test_acc", "ot-vit", "vit", lower_is_better=False)


@claim("fenchel.results.ot-vit-beats-vit-cifar100", reference="Table 2 (CIFAR-100), Sec 9",
       statement="OT-ViT has a higher CIFAR-100 test accuracy than ViT at lr 3e-4 (the paper's data, given "
                 "by path).", method="results")
def _():
    return better("fenchel-ot-vit", "full", "cifar100/lr=3e-04", "test_acc", "ot-vit", "vit", lower_is_better=False)
