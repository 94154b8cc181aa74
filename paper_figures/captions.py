"""What each committed figure shows, for readers: one caption per figure file (keyed by its stem), with
the number of the paper's figure it regenerates where there is one (``paper_figure``), else None (a
table of the paper as a plot, or a figure of ours that the paper does not have).  `attnlab report`
prints them under the figures; the text is a math text (maths between dollar signs, attnlab.mathtext).

tests/test_report.py keeps this table equal to the committed PNGs: a figure added without a caption,
or a caption left behind by a removed figure, fails.
"""
from __future__ import annotations

from typing import NamedTuple


class Caption(NamedTuple):
    paper_figure: str | None     # "Figure 3", "Figures 1a, 4 and 9": the paper's numbering; None if none
    text: str                    # what the figure shows (a math text)


CAPTIONS = {
    # --- Exponential Family Attention (Wibisono & Wang, 2025)
    "efa_exp_fig3": Caption(
        "Figure 3",
        r"Unidirectional attention weights for two Instacart baskets: the attention of our trained "
        r"unidirectional EFA averaged over heads, one heat map per basket and layer (rows: the masked target "
        r"item $i$; columns: the context items $j$, causal), colours clipped at 0.25 as in the paper."),
    "efa_exp_fig4": Caption(
        "Figure 4",
        r"Per-item query, key and value embeddings of the first layer ($W^Q\beta + b_Q$, $W^K\beta + b_K$, "
        r"$W^V\beta + b_V$) of our trained unidirectional Instacart EFA: three panels per head, the 63 named "
        r"items by 16 dimensions on one colour scale."),
    "efa_exp_fig6": Caption(
        "Figure 6",
        r"Test MSE of the factor model FM($k$) against the number of neighbours $k$ (log scale) above the EFA "
        r"variants (depth $\ell$, 1D and 2D ahead) on their own axis: ours (mean and 95% CI over seeds) on "
        r"Colorado monthly temperatures, a labelled substitute for the paper's daily temperatures of 44 US "
        r"cities, beside the paper's values.  A point none of whose runs was judged converged would be drawn "
        r"hollow (none is: every FM($k$) converged on five seeds); FM(5) is the one a verdict compares."),
    "efa_identifiability": Caption(
        None,
        r"Theorem 1 (linear identifiability): the proof's recoveries on constructed parameter pairs (true "
        r"against recovered entries of $A$, $B = A^{-\top}$ and $C$), and the two counterexamples to the "
        r"statement: (a) shifted centre embeddings $e' = e^* + c$ give identical conditionals but are related "
        r"by no linear map, only an affine one; (b) with $d_j = 2$ the proof's $C$ reproduces $K'(y)$ only at "
        r"the two diversity points."),
    # --- Bidirectional Attention as a Mixture of Continuous Word Experts (UAI 2023): the paper has no figures
    "bidir_exp_table1": Caption(
        None,
        r"The paper's Table 1 as a plot: test accuracy (top) and MSE (bottom) of LR, RF, GB, MLP and ATN in "
        r"each tabular-simulation setting $(n_c, \text{noise}, \text{corr})$; ours (mean and 95% CI over the "
        r"seeds whose runs converged, as `attnlab results` counts them) with the authors' pooled bins and with "
        r"train-only bins, the paper's numbers as black ticks."),
    "bidir_exp_table2": Caption(
        None,
        r"The paper's Table 2 as a plot: test accuracy and MSE on the auto-mpg origin split (245 US cars to "
        r"train, 140 others to test) of the classical baselines, the tabular attention models and ATN; ours "
        r"(mean and 95% CI over the seeds whose runs converged, pooled and train-only bins; hollow where no run "
        r"could be judged converged: the tabular attention models' records store no curve) beside the paper's "
        r"single run (black ticks)."),
    "bidir_toy_scatter": Caption(
        None,
        r"Props 9 and 14 on the App. I toy corpus: the learned $w_i^\top c_j$ of CBOW against Prop 9's target "
        r"$M_{ij}$ (left), and of the Eq. (1) attention objective against Prop 14's Eq. (2) (middle) and "
        r"against $N_{ij}$ (right); one dot per word-context pair, one row per embedding size "
        r"$p = 30, 100, 300, 900$, with the rank and linear correlations and whether the optimiser converged."),
    # --- Deciphering Attention Mechanisms: Optimization and Fenchel Dual Solutions (TMLR submission)
    "fenchel_fig3": Caption(
        "Figure 3",
        r"The exact solution against the closed form (16) for $\alpha = 4, 2, 1, 0.5$ on our instance (the "
        r"paper gives neither $T$ nor $z$): the support of $u$ (the printed weights 0.3, 0.4, 0.6, "
        r"normalised), $\mu$, the evidence arrow from $\mu$ to $\mu + z$, the exact $\hat h$ from the "
        r"maximiser $\lambda^*$ of (7) and the approximation (16), which closes in on it as $\alpha$ falls."),
    "fenchel_error_vs_alpha": Caption(
        None,
        r"Theorem 2's error orders on instance I-rand, log-log against $\alpha$: $\|\lambda^* - \alpha z\|$ "
        r"(14) and $\|\hat h^* - \hat h_{16}\|$ (16) fall with slope 2, the refined (13) and its attention "
        r"with slope 3 (least-squares slopes over $\alpha \le 0.02$)."),
    "fenchel_exp_fig4_bert": Caption(
        "Figure 4a",
        r"The relative deviation $\|\lambda^* - \alpha z\| / \|\lambda^*\|$ per layer, averaged over heads, on "
        r"our BERT-like substitute (small models trained here): its distribution over queries (mean and 95% "
        r"CI over seeds), our mean with its 95% CI, and the paper's mean for bert-base (dashed)."),
    "fenchel_exp_fig4_minilm": Caption(
        "Figure 4a",
        r"The relative deviation $\|\lambda^* - \alpha z\| / \|\lambda^*\|$ per layer, averaged over heads, on "
        r"a real pretrained encoder, all-MiniLM-L6-v2 (movie-review sentences): its distribution over "
        r"queries and our mean, beside the paper's bert-base mean at the same layer index (dashed)."),
    "fenchel_exp_fig4_t5": Caption(
        "Figure 4b",
        r"The relative deviation $\|\lambda^* - \alpha z\| / \|\lambda^*\|$ per layer, averaged over heads, on "
        r"our T5-like substitute: encoder self-, decoder self- and cross-attention, the distribution over "
        r"queries (mean and 95% CI over seeds), our mean and the paper's t5-small mean (dashed)."),
    "fenchel_exp_fig5_bert_heads": Caption(
        "Figure 5",
        r"The relative deviation $\|\lambda^* - \alpha z\| / \|\lambda^*\|$ per layer and head of our "
        r"BERT-like substitute: its distribution over queries (mean and 95% CI over seeds) and our mean, beside "
        r"the paper's mean over the heads of that layer (dashed)."),
    "fenchel_exp_fig5_minilm_heads": Caption(
        "Figure 5",
        r"The relative deviation $\|\lambda^* - \alpha z\| / \|\lambda^*\|$ per layer and head of the "
        r"pretrained all-MiniLM-L6-v2 (6 layers of 12 heads), beside the paper's bert-base mean over the heads "
        r"of each layer (dashed)."),
    "fenchel_exp_fig6_t5_enc_heads": Caption(
        "Figure 6",
        r"The relative deviation $\|\lambda^* - \alpha z\| / \|\lambda^*\|$ per layer and head of the encoder "
        r"self-attention of our T5-like substitute (mean and 95% CI over seeds), beside the paper's mean over "
        r"the heads of that layer (dashed)."),
    "fenchel_exp_fig7_t5_dec_heads": Caption(
        "Figure 7",
        r"The relative deviation $\|\lambda^* - \alpha z\| / \|\lambda^*\|$ per layer and head of the decoder "
        r"self-attention of our T5-like substitute (mean and 95% CI over seeds), beside the paper's mean over "
        r"the heads of that layer (dashed)."),
    "fenchel_exp_fig8_t5_cross_heads": Caption(
        "Figure 8",
        r"The relative deviation $\|\lambda^* - \alpha z\| / \|\lambda^*\|$ per layer and head of the "
        r"cross-attention of our T5-like substitute (mean and 95% CI over seeds), beside the paper's mean over "
        r"the heads of that layer (dashed)."),
    "fenchel_exp_output_errors": Caption(
        None,
        r"Sec. 8's metric beside errors at the output, per layer of our BERT-like and T5-like substitutes (mean "
        r"and 95% CI over seeds): $\|\lambda^* - \alpha z\| / \|\lambda^*\|$ (the paper's Fig. 4 means as "
        r"black ticks), the first-order term $\alpha \|\Sigma z\| / \|z\|$, "
        r"$\operatorname{TV}(p(\lambda^*), p(\alpha z))$ and $\|\hat h(\lambda^*) - \hat h(\alpha z)\|$."),
    "fenchel_exp_ot_vit": Caption(
        None,
        r"The paper's Tables 1-2 as a plot: test accuracy of ViT and OT-ViT; ours on 8×8 digits (a labelled "
        r"substitute; mean and 95% CI over the seeds whose runs converged, hatched where none could be judged "
        r"converged) beside the paper's CIFAR-10, CIFAR-100 (learning-rate grid) and Fashion-MNIST numbers."),
    "fenchel_exp_pretrained": Caption(
        None,
        r"$\lambda^*$ against $\alpha z$ on a real pretrained encoder (all-MiniLM-L6-v2, movie-review "
        r"sentences, $\alpha = 1$, every head): left, Fig. 4a's metric per layer beside the paper's bert-base "
        r"and our BERT-like substitute; right, the metric beside the errors at the output (mean and 95% CI)."),
    # --- Kernel Multimodal Continuous Attention (NeurIPS 2022)
    "kernel_fig2a_convergence": Caption(
        "Figure 2a",
        r"The trapezoid rule for kernel softmax and kernel sparsemax attention on $[0, 1]$, 100 simulations "
        r"(median with its 10-90% band, and mean) against the number of grid points $G$: left the paper's way, "
        r"against the 19-point value, $|I_G - I_{19}|$; right against the true integral, $|I_G - I|$, beside "
        r"the slope $G^{-2}$."),
    "kernel_fig2b_softplus": Caption(
        "Figure 2b",
        r"The kernel-sparsemax integral on $[0, 1]$ against the number of grid points $G$ (one simulation), "
        r"beside its softplus approximations $\exp_{\rho,0}$ for $\rho = 1, 2, 5, 10$: from $\rho = 5$ on the "
        r"approximation cannot be told apart from it."),
    "kernel_convergence_R": Caption(
        None,
        r"App. E's convergence on $\mathbb{R}$: the trapezoid error against the grid spacing $h$ for kernel "
        r"softmax (exponential in $1/h$, Cor. E.3) and for kernel sparsemax, $\alpha = 2$ ($O(h^2)$) and "
        r"$\alpha = 1.5$ ($O(h^3)$)."),
    "kernel_convergence_unit_interval": Caption(
        None,
        r"The trapezoid rule on $[0, 1]$ in App. E.4's setting: the error against the number of grid points "
        r"$G$ falls as $G^{-2}$ for both kernel softmax and kernel sparsemax, the Euler-Maclaurin rate, not "
        r"exponentially."),
    "kernel_exp_forda": Caption(
        "Figures 1a, 4 and 9",
        r"FordA test series with the learned attention density rescaled to the series' maximum, from our runs: "
        r"continuous softmax (the paper's Fig. 4) and kernel sparsemax (Figs. 1a and 9)."),
    "kernel_exp_results": Caption(
        None,
        r"The paper's Tables 1-4 and 9 as a plot: our test accuracy (mean and 95% CI over the seeds whose runs "
        r"converged, each seed where there are fewer than five; a cross where no run was judged converged and "
        r"all are drawn) beside the paper's numbers (black ticks); the tables re-run on substitute data have "
        r"panels and scales of their own, with the paper's range named, not drawn."),
    "kernel_exp_time_warping": Caption(
        None,
        r"Lemma 4.2 on the time-warping data of Table 1 (App. B.3): for three test curves, the class-1 head's "
        r"learned density of continuous softmax, kernel softmax and kernel sparsemax beside the oracle "
        r"individualised density $p_{i1}$, with the observed curve below; and, over every seed, each head's "
        r"attention mass on $[0, u]$ in aligned time $u = g_i(t)$ against the oracle's (band: lowest to highest "
        r"seed)."),
}
