"""Empirical claims of Kernel Multimodal Continuous Attention (`kernel.results.*`), judged from the
committed records of `attnlab run kernel-*` (attnlab.evidence): the headline comparison of Tables 1-4
and 9 -- the kernel (multimodal) families against their unimodal continuous counterparts -- and the
"7-10 %" gain of Table 1.  Each skips, with the reason, until converged records of the paper's
configuration exist for >= 5 seeds.  Data: time warping (the paper's generator) and FordA (UCR, the
paper's); gestures, sentences and ECG are LABELLED SUBSTITUTES (AllGestureWiimote for uWave,
movie-review sentences for IMDB, UCR ECG5000 for the MIT-BIH heartbeats of Table 9)."""
from __future__ import annotations

from attnlab.catalog import claim
from attnlab.evidence import better, not_better


def _beats(cid, ref, experiment, setting, data, winner, loser, margin=0.0, metric="accuracy", config="full"):
    gain = f" by more than {margin:g} points" if margin else ""
    @claim(cid, reference=ref, method="results",
           statement=f"{winner} attention has a higher test {metric} than {loser}{gain} on "
                     f"{experiment.split('-', 1)[1]} ({setting}); data: {data}.")
    def _():
        return better(experiment, config, setting, metric, winner, loser, lower_is_better=False, margin=margin)


_beats("kernel.results.time-warping-softmax", "Table 1 (time warping), Sec 6.1", "kernel-time-warping", "N=64",
       "the paper's generator (App. G)", "Kernel Softmax", "Cts Softmax")

TW = ("kernel-time-warping", "full", "N=64", "accuracy")


@claim("kernel.results.time-warping-sparsemax", reference="Table 1 (time warping), Sec 6.1", method="results",
       expected="erratum",
       statement="Kernel Sparsemax attention has a higher test accuracy than Cts Sparsemax on time warping "
                 "(N=64; Table 1: 88.10 vs 77.96); data: the paper's generator (App. G).",
       corrected="At the paper's configuration over 10 seeds the two are not distinguishable: the paired "
                 "difference Kernel - Cts Sparsemax is +0.6 points with a 95% CI containing 0 (about "
                 "[-0.7, 2.0]); both reach ~91-92 %, far above the paper's 77.96 for Cts Sparsemax.")
def _():
    return not_better(*TW, "Kernel Sparsemax", "Cts Sparsemax", max_abs=2.0)


@claim("kernel.results.time-warping-gain-7-points", reference="Table 1 and Sec 6.1 text (kernel families 7-10 % better)",
       method="results", expected="erratum",
       statement="The kernel (multimodal) families beat their unimodal counterparts by 7-10 points on time warping "
                 "(Table 1: 85.71 vs 77.72 softmax, 88.10 vs 77.96 sparsemax); data: the paper's generator (App. G).",
       corrected="At the paper's configuration over 10 seeds the gains are about 1 point, not 7-10: Kernel - Cts "
                 "Softmax +1.2 (95% CI ~[0.5, 1.9]), Kernel - Cts Sparsemax +0.6 (~[-0.7, 2.0]); the upper ends of "
                 "both CIs are below 2.5 points.  The unimodal models reach ~91-92 %, not the paper's ~78 %.")
def _():
    from attnlab.catalog import erratum_if
    from attnlab.evidence import paired_difference

    d = {k: paired_difference(*TW[:3], TW[3], f"Kernel {k}", f"Cts {k}") for k in ("Softmax", "Sparsemax")}
    printed = all(v["lo"] > 7.0 for v in d.values())
    corrected = all(v["hi"] < 2.5 for v in d.values())
    return erratum_if(printed, corrected,
                      measured={k: {"diff_mean": v["mean"], "ci95": [v["lo"], v["hi"]], "n": v["n"]} for k, v in d.items()},
                      tolerance="printed: both CIs above 7 points; corrected: both CIs' upper ends below 2.5 points",
                      explanation="kernel-time-warping (full), paired differences over seeds")


# FordA: the paper's network and full-length series trained to early stopping on a validation split
# (config full-es; the paper's fixed 100 epochs is config full)
FORDA = ("kernel-forda", "full-es", "test", "accuracy")


@claim("kernel.results.forda", reference="Table 2 (FordA), Sec 6.2", method="results", expected="erratum",
       statement="Kernel Sparsemax attention has a higher test accuracy than Cts Sparsemax on FordA (Table 2: "
                 "92.61 vs 90.95); data: UCR FordA (the paper's).",
       corrected="Trained to early stopping on a validation split (the paper's network and series, config full-es, "
                 "5 seeds, paired by seed) the two are not distinguishable: Kernel - Cts Sparsemax is about +0.9 "
                 "points with a 95% CI containing 0 (about [-0.2, 2.0]); both reach ~92.5-93.5 %.")
def _():
    return not_better(*FORDA, "Kernel Sparsemax", "Cts Sparsemax", max_abs=2.0)


@claim("kernel.results.forda-discrete-softmax", reference="Table 2 (FordA), Sec 6.2", method="results",
       expected="erratum",
       statement="On FordA, the conv-LSTM with discrete softmax attention scores 51.27 % +- 1.86 (chance), far below "
                 "the continuous and kernel families (Table 2); data: UCR FordA (the paper's).",
       corrected="Trained to early stopping on a validation split (the paper's network and series, config full-es), "
                 "discrete softmax attention reaches ~93 % in every seed (95% CI above 85 %), with the kernel "
                 "families: the printed 51.27 % is a run that did not train.")
def _():
    from attnlab.catalog import erratum_if
    from attnlab.evidence import mean_ci
    from attnlab.results import paper_numbers

    paper = paper_numbers("kernel")[("kernel-forda", "test", "Discrete Softmax", "accuracy")]
    v = mean_ci("kernel-forda", "full-es", "test", "Discrete Softmax", "accuracy")
    return erratum_if(v["lo"] <= paper <= v["hi"], v["lo"] > 85.0,
                      measured={"mean": v["mean"], "ci95": [v["lo"], v["hi"]], "n": v["n"], "paper": paper},
                      tolerance="printed: the 95% CI contains Table 2's 51.27; corrected: the CI lies above 85 %",
                      explanation=f"kernel-forda (full-es), Discrete Softmax test accuracy over seeds {v['seeds']}")


_beats("kernel.results.gestures", "Table 3 (uWave), Sec 6.3", "kernel-gestures", "N=64",
       "LABELLED SUBSTITUTE (UCR AllGestureWiimote X/Y/Z for uWaveGestureLibrary)", "Kernel Sparsemax", "Cts Sparsemax")


# Sentences: the labelled substitute for IMDB, the full network trained to early stopping on a
# validation split (config full-es; lr 1e-3, the paper's, chosen on validation).  Sec 6.4's claim is
# about the average over N = 32, 64, 128 (Table 4's row means), so each seed's accuracy is averaged
# over the three N before pairing
SENTENCES_N = ("N=32", "N=64", "N=128")


@claim("kernel.results.sentiment", reference="Table 4 (IMDB) and Sec 6.4 text", method="results",
       expected="erratum",
       statement="Sec 6.4's 'on average, kernel exponential and deformed exponential family slightly outperform the "
                 "continuous softmax and sparsemax' (Table 4 row means over N = 32, 64, 128 on IMDB: kernel softmax "
                 "90.94 vs continuous softmax 90.32, kernel sparsemax 90.39 vs continuous sparsemax 89.95) carries "
                 "over to sentence-level sentiment: averaged over N, each kernel family has a higher test accuracy "
                 "than its unimodal counterpart; data: LABELLED SUBSTITUTE (movie-review sentences for IMDB).",
       corrected="On the movie-review sentences (the full network, early stopping on a validation split, config "
                 "full-es, 5 seeds, accuracy averaged over N and paired by seed) neither kernel family is "
                 "distinguishable from its unimodal counterpart: kernel - continuous softmax about -0.2 points "
                 "(95% CI about [-0.9, 0.5]), kernel - continuous sparsemax about -0.3 (about [-1.3, 0.7]); all "
                 "four reach 74-75 %.")
def _():
    from attnlab.catalog import erratum_if
    from attnlab.evidence import paired_difference

    d = {k: paired_difference("kernel-sentiment", "full-es", SENTENCES_N, "accuracy", f"Kernel {k}", f"Cts {k}")
         for k in ("Softmax", "Sparsemax")}
    printed = all(v["lo"] > 0 for v in d.values())
    corrected = all(v["lo"] <= 0 <= v["hi"] and abs(v["mean"]) < 2.0 for v in d.values())
    return erratum_if(printed, corrected,
                      measured={k: {"diff_mean": v["mean"], "ci95": [v["lo"], v["hi"]], "n": v["n"]} for k, v in d.items()},
                      tolerance="printed: both CIs of kernel - continuous above 0; corrected: both CIs contain 0 and "
                                "|mean| < 2 points",
                      explanation="kernel-sentiment (full-es), accuracy averaged over N = 32, 64, 128, paired over seeds "
                                  f"{d['Softmax']['seeds']}")


# ECG: the labelled substitute (UCR ECG5000 for MIT-BIH) with the paper's network, trained to early
# stopping on a validation split (config full-es: the substitute's 450 training beats make the paper's
# 30 epochs only 240 steps); the learning rate, the paper's 1e-3, chosen on validation
@claim("kernel.results.ecg", reference="Table 9 (MIT-BIH), App. I", method="results", expected="erratum",
       statement="Table 9's ordering of the sparsemax pair (Kernel Sparsemax above Cts Sparsemax: 98.42 vs 98.30 % "
                 "on MIT-BIH) carries over to ECG heartbeats of another database: Kernel Sparsemax attention has a "
                 "higher test accuracy than Cts Sparsemax; data: LABELLED SUBSTITUTE (UCR ECG5000 for MIT-BIH).",
       corrected="On ECG5000 (Table 10's network, early stopping on a validation split, config full-es, 5 seeds, "
                 "paired by seed) the two are not distinguishable: Kernel - Cts Sparsemax is about -1.2 points with a "
                 "95% CI containing 0 (about [-3.8, 1.3]); both reach ~90-93 % (kernel 90.9, continuous 92.1).")
def _():
    return not_better("kernel-ecg", "full-es", "test", "accuracy", "Kernel Sparsemax", "Cts Sparsemax", max_abs=2.0)
