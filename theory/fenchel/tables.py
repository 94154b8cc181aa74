"""Tables 1 and 2 of the Fenchel-dual attention paper (Sec 9, ViT vs OT-ViT) read against each other and
against the text around them: arithmetic on the printed numbers only (the runs themselves are judged by
the `fenchel.results.*` claims)."""
from __future__ import annotations

from attnlab.catalog import claim, erratum_if, holds_if

# Table 1: CIFAR100 test accuracy (+- 95% CI) per learning rate
TABLE1 = {"vit": {"3e-3": (0.228, 0.01), "3e-4": (0.463, 0.01), "3e-5": (0.452, 0.01)},
          "ot-vit": {"3e-3": (0.175, 0.01), "3e-4": (0.491, 0.01), "3e-5": (0.412, 0.01)}}
# Table 2: test accuracy (+- 95% CI) per data set, at the selected learning rate
TABLE2 = {"vit": {"fashion-mnist": (0.928, 0.01), "cifar10": (0.751, 0.01), "cifar100": (0.463, 0.01)},
          "ot-vit": {"fashion-mnist": (0.937, 0.01), "cifar10": (0.772, 0.02), "cifar100": (0.491, 0.01)}}
SELECTED_LR = "3e-4"                    # "both models achieved the best performance ... 3 x 10^-4"


def check_tables(table1=TABLE1, table2=TABLE2, paper_numbers=None):
    """Table 2's CIFAR100 column against Table 1's row at the selected learning rate, the selection
    itself, and the transcription the results claims compare against (experiments.paper_numbers)."""
    if paper_numbers is None:
        from attnlab.experiments.paper_numbers.fenchel import PAPER_CI, PAPER_NUMBERS
        paper_numbers = (PAPER_NUMBERS, PAPER_CI)
    numbers, cis = paper_numbers
    diff = {m: [abs(table2[m]["cifar100"][k] - table1[m][SELECTED_LR][k]) for k in (0, 1)] for m in table1}
    same = all(max(v) < 1e-12 for v in diff.values())
    best = {m: max(table1[m], key=lambda lr: table1[m][lr][0]) for m in table1}
    selected = all(b == SELECTED_LR for b in best.values())
    key = ("fenchel-ot-vit", f"cifar100/lr={float(SELECTED_LR):.0e}")
    stored = {m: (numbers[key + (m, "test_acc")], cis[key + (m, "test_acc")]) for m in table1}
    transcribed = all(abs(stored[m][k] - table2[m]["cifar100"][k]) < 1e-12 for m in table1 for k in (0, 1))
    return holds_if(same and selected and transcribed,
                    measured=dict(table2_minus_table1=diff, best_lr=best, paper_numbers=stored),
                    tolerance="equal as printed (1e-12)",
                    explanation="Table 2 CIFAR100 (accuracy, CI) minus Table 1 at LR 3e-4, per model; argmax of "
                                "Table 1 per model; the CIFAR100 entries the results claims use")


@claim("fenchel.tables.cifar100-consistency",
       reference="Sec 9, Tables 1 and 2",
       statement="Table 2's CIFAR100 column (ViT 0.463 +- 0.01, OT-ViT 0.491 +- 0.01) is Table 1's column at "
                 "LR 3 x 10^-4, the learning rate at which, by Table 1, both models do best and which the text "
                 "says was used for all data sets.",
       method="float64")
def _tables():
    return check_tables()


def check_outperforms(table2=TABLE2):
    """Table 2: OT-ViT's accuracy above ViT's on every data set (printed reading: the means), and the
    difference against its 95% half-width sqrt(h_1^2 + h_2^2) (independent, normal estimates)."""
    import math

    rows = {}
    for ds in table2["vit"]:
        (a, ha), (b, hb) = table2["ot-vit"][ds], table2["vit"][ds]
        rows[ds] = dict(diff=round(a - b, 6), half_width=round(math.hypot(ha, hb), 6))
    means_higher = all(r["diff"] > 0 for r in rows.values())
    separated = [ds for ds, r in rows.items() if r["diff"] > r["half_width"]]
    # printed: 'consistently outperforms', read as: higher on every data set beyond the stated intervals
    printed = means_higher and len(separated) == len(rows)
    corrected = means_higher and 0 < len(separated) < len(rows)
    return erratum_if(printed, corrected, measured=dict(rows, separated=separated),
                      tolerance="difference > sqrt(h_OT^2 + h_ViT^2) (95%, independent normal estimates)",
                      explanation="Table 2 as printed: OT-ViT minus ViT per data set against the 95% half-width "
                                  "of a difference of two independent estimates with the printed half-widths")


@claim("fenchel.tables.ot-vit-outperforms",
       reference="Sec 9, Table 2 ('OT-ViT consistently outperforms ViT')",
       statement="By Table 2, OT-ViT consistently outperforms ViT: its test accuracy is higher on Fashion-MNIST, "
                 "CIFAR10 and CIFAR100, beyond the 95% confidence intervals the table reports.",
       method="float64", expected="erratum",
       corrected="The means are higher on all three data sets, but with the table's own intervals the difference "
                 "is outside its 95% interval only on CIFAR100 (0.028 +- 0.014); on Fashion-MNIST (0.009 +- 0.014) "
                 "and CIFAR10 (0.021 +- 0.022) the table does not separate the two models.")
def _outperforms():
    return check_outperforms()
