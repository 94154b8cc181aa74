"""The LaTeX forms of the Exponential Family Attention claims (Wibisono & Wang, 2025): the statements,
and each erratum's corrected form, with the maths between dollar signs, as `attnlab report` renders them
(attnlab.mathtext).  The same words as the plain statements of the claims; ``of`` is the fingerprint of
the plain wording each was written for."""
from attnlab.mathtext import Tex

LATEX = {
    "efa.eq1.score-orientation": Tex(
        r"In Eq. (1), $X'_i = W^V X_i \operatorname{softmax}_{\mathrm{col}}((W^Q X_i)^\top W^K X_i / K + M)$, "
        r"the score of context column $j$ for output column $i$ is $(W^Q x_j)\cdot(W^K x_i)/K + M[j, i]$: the query "
        r"vector belongs to the context word $j$ and the key vector to the output (masked) word $i$, the transpose "
        r"of the usual $q_i \cdot k_j$; with $W^Q \ne W^K$ the two orientations give different conditionals $\eta_i$.",
        of="a0d351bf"),
    "efa.eq3.expfam-loglik": Tex(
        r"The summand of Eq. (3), $\kappa^\top t(y) - A(\kappa)$, equals the log-density of the printed exponential "
        r"family minus $\log h(y)$ (Categorical, Gaussian with known $\sigma^2$, Poisson v1 and v2, Bernoulli), and "
        r"an EFA module's log-likelihood is that log-density at its natural parameter.",
        of="46caf342"),
    "efa.eq4.theta-disjoint": Tex(
        r"$\theta_1 = (\delta, \beta, P, W^Q, W^K, W^V)$ and $\theta_2 = (\bar\delta, \bar\beta, \bar P, \bar W^Q, "
        r"\bar W^K, \bar W^V, \lambda_1, \lambda_2)$ are disjoint: the joint EFA shares no parameter between its two "
        r"parts, and the first term of Eq. (4) does not depend on $\theta_2$ nor the second on $\theta_1$, so "
        r"maximising Eq. (4) splits into two problems.",
        of="459737d0"),
    "efa.footnote3.gaussian-nll-mse": Tex(
        r"The Gaussian negative log-likelihood with known $\sigma^2$ is an affine, increasing function of the MSE, "
        r"so its minimiser does not depend on $\sigma^2$: on a parameter grid the argmin of the NLL at "
        r"$\sigma^2 \in \{0.5, 1, 4\}$ equals the argmin of the MSE.",
        of="976043e5"),
    "efa.prop1.bidirectional": Tex(
        r"With $p_i = 0$, $\beta_{[\mathrm{MASK}]} = 0$, $W^Q = W^K = 0$, $W^V = I$, $M = 0$, $\beta = \alpha$, "
        r"$\delta = \frac{I}{I-1}\rho$, bidirectional EFA equals the latent factor model "
        r"$x_i \mid x_{-i} \sim \operatorname{Cat}\big(\operatorname{softmax}\big(\rho^\top \sum_{j \ne i} "
        r"\alpha_{x_j} / (I-1)\big)\big)$; its attention is uniform.",
        of="c9dbaac1"),
    "efa.prop1.unidirectional-factor": Tex(
        r"With the causal mask the same construction gives $X'_{ii} = \frac{1}{i} \sum_{j<i} \beta_{x_j}$: the EFA "
        r"logits equal the unidirectional FM's (printed $1/(I-1)$) times $I/i$, so the construction does not give "
        r"the unidirectional FM (deviation $> 10^{-3}$), and multiplying by $i/I$ restores it exactly.",
        of="823777e8"),
    "efa.prop2.gaussian-fm": Tex(
        r"With $\lambda_1(y) = y$, $\lambda_1([\mathrm{MASK}]) = 0$, $g = h$, "
        r"$W^V = \operatorname{diag}(0, \dots, 0, 1)$, "
        r"$W^Q = W^K = \operatorname{diag}(1, \dots, 1, 0)$, linear attention $/(K+1)$ and "
        r"$\lambda_2(z) = (K+1) z_{K+1}$, EFA equals $y_i \mid y_{-i} \sim \mathcal{N}\big(h(\tau_i)^\top "
        r"\sum_{j \ne i} h(\tau_j) y_j, \sigma^2\big)$.",
        of="939d988d"),
    "efa.prop3.poisson-fm": Tex(
        r"The construction of App. G ($\bar\beta = \rho$, $\bar\delta = \alpha/(I-1)$, "
        r"$W^V = \operatorname{diag}(0, \dots, 1)$, $W^Q = \operatorname{diag}(\mathbf{1}_K, 0)$, the printed second "
        r"block matrix as $W^K$, linear attention, $\lambda_2(z) = (2K+1) z_{2K+1}$) turns EFA into the Poisson "
        r"latent factor model $y_i - 1 \mid y_{-i} \sim \operatorname{Poisson}\big(\exp\big(\rho_{x_i}^\top "
        r"\sum_{j \ne i} \alpha_{x_j} y_j / (I-1)\big)\big)$.",
        r"As printed every attention score is 0 ($W^Q Y$ lives on rows $1..K$, $W^K Y$ on rows $K+1..2K$), so the "
        r"output is identically 0. With $W^K = \begin{pmatrix} 0 & I_K & 0 \\ 0 & 0 & 0 \\ 0 & 0 & 0 \end{pmatrix}$ "
        r"($I_K$ in rows $1..K$, columns $K+1..2K$; the printed block transposed, and labelled $W^K$ not $W^V$) the "
        r"reduction is exact under $q_i \cdot k_j$; under the paper's literal column convention "
        r"$S[j,i] = q_j \cdot k_i$ it gives the FM with $\rho$ and $\alpha$ swapped.",
        of="6d3726a0"),
    "efa.props1-3.sympy-constructions": Tex(
        r"At a generic size ($D = 3$, $K = 2$, $I = 3$, all embeddings, attribute values and ratings symbolic) the "
        r"parameter settings of App. E and F turn Eq. (1) into the latent factor models of Props 1 and 2 "
        r"identically; App. G does so with $W^K$ corrected ($I_K$ in rows $1..K$, columns $K+1..2K$, under "
        r"$q_i \cdot k_j$), while the printed $W^K$ gives $\kappa = 0$ identically.",
        of="0dd6d338"),
    "efa.remark1.latent-factor-form": Tex(
        r"The EFA logit is a reweighted latent factor model: $\delta^\top X'_{ii} = \sum_j A[j, i]\, \delta^\top W^V "
        r"X_i[:, j]$, with $A = \operatorname{softmax}_{\mathrm{col}}((W^Q X_i)^\top W^K X_i / K + M)$ (summed over "
        r"heads for several heads).",
        of="6eada93a"),
    "efa.remark12.normalization": Tex(
        r"The unidirectional EFA is a normalized joint distribution: $\sum_{x \in [3]^4} \prod_i p(x_i \mid "
        r"x_{1:i-1}) = 1$, and jointly with Bernoulli $y$, $\sum_{(x, y)} p(x, y) = 1$; the bidirectional product of "
        r"full conditionals is only a pseudo-likelihood and does not sum to 1.",
        of="7f812e89"),
    "efa.remark13.k-le-d-minus-1": Tex(
        r"Assumption 2 needs $K \le D - 1$: for $K = D$ every choice of $K$ difference columns "
        r"$e(x_A) - e(x_B)$ of $D$ embeddings is singular, while for $K = D - 1$ random embeddings give "
        r"invertible $L$.",
        of="f270ef9b"),
    "efa.remark3.causality": Tex(
        r"With the causal mask $M$, $\eta_i$ depends only on $x_{1:i-1}$ and $\kappa_i$ only on $x_{1:i}$, "
        r"$y_{1:i-1}$ (2 layers, 2 heads): resampling the future leaves them unchanged.",
        of="c0b9b58e"),
    "efa.remark4-5.bidirectional-dependence": Tex(
        r"With $M = 0$ the model conditions on the whole sequence ($x_{-i}$, and $x$, $y_{-i}$): resampling the "
        r"future changes $\eta_i$ and $\kappa_i$.",
        of="515bd83e"),
    "efa.sec4.fm-order-invariance-linearity": Tex(
        r"The FM natural parameter, $c\, \rho_{x_i}^\top \sum_{j \in \mathrm{ctx}} \alpha_{x_j} y_j$ (Sec 4), is "
        r"invariant to permuting the context and linear in the context values; EFA with positional embeddings is "
        r"not order invariant and EFA with softmax attention is not linear in the values.",
        of="988836bd"),
    "efa.synthetic.exact-references": Tex(
        r"In the synthetic experiment the Bayes MSE is 1 in both settings, the best bidirectional FM "
        r"($1/(I-1)$) has population MSE $593093675221711336/227665572164344425 = 2.605109\ldots$, the best "
        r"unidirectional FM has $4.518119\ldots$ with the code's $1/\max(i-1,1)$ and $5.298547\ldots$ with the "
        r"printed $1/(I-1)$, and a per-movie constant has $273/125$.",
        of="59caf799"),
    "efa.synthetic.fm-unidirectional-normalization": Tex(
        r"The unidirectional FM of App. H.1, $y_i \mid y_{<i} \sim \mathcal{N}\big(\frac{1}{I-1} "
        r"\rho_{x_i}^\top \sum_{j<i} \alpha_{x_j} y_j, \sigma^2\big)$, reaches the test MSE 4.519 of Table 1.",
        r"The best FM with the printed $1/(I-1)$ has population MSE 5.2985, 0.78 above 4.519 (more than 5 standard "
        r"errors of a 2,500-user test MSE); 4.519 is what the FM with the mean over the previous movies, "
        r"$1/\max(i-1, 1)$ (the authors' code), reaches: its population optimum is 4.5181.",
        of="266eb816"),
    "efa.table2.closer-to-123": Tex(
        r"In all four settings of Table 2 the mean predicted ratings of EFA are closer to $(1, 2, 3)$ than those of "
        r"FM (as printed); arithmetic on the paper's printed numbers, no library code and no records.",
        of="51dee6b1"),
    "efa.table2.constant-predictor": Tex(
        r"Table 2's test cross-entropies are Poisson negative log-likelihoods without the log-factorial term (v1: "
        r"$y - 1 \sim \operatorname{Poisson}(e^z)$; v2: $y \sim \operatorname{Poisson}(1 + e^z)$). Under these "
        r"losses the best constant predictor of the MovieLens ratings (mean 2.120) scores $\mu - \mu \log \mu = "
        r"0.993$ (v1, $\mu = \text{mean} - 1$) and 0.527 (v2, $\mu = \text{mean}$), and every FM and EFA entry of "
        r"Table 2 lies below it (v1 0.945-0.972, v2 0.494-0.508).",
        of="de5548fd"),
    "efa.thm1.gap-pointwise": Tex(
        r"Under Assumptions 1 and 4, equal Gaussian conditionals imply $K'(y) = C K^*(y)$ for all $y$ and "
        r"$L' = D L^*$ with invertible $C$, $D$ (linear identifiability of $\theta_2$).",
        r"For $d_j \ge 2$ the proof gives $K'(y) = C K^*(y)$ only at the $d_j$ points of $N$: equal scalar means "
        r"constrain only the projection onto $L$. Counterexample: $K^*(y) = (y, y^2)$, $K'(y) = (y, y^6 + 2y^2)$, "
        r"$L^* = L' = (1, 0)$ have equal means for every $y$ and invertible $N$ at $y = 1, 2$; the proof's $C$ "
        r"matches there but $K'(y) - C K^*(y)$ is not 0, and no constant $C$ works. ($L' = D L^*$ holds but is "
        r"vacuous.)",
        of="6a275d9d"),
    "efa.thm1.gap-shift": Tex(
        r"Under Assumptions 2 and 3, equal conditionals imply $e'(x) = B e^*(x)$ for an invertible $B$ (linear "
        r"identifiability of the center embeddings, Def 1).",
        r"Only the affine relation $\begin{bmatrix} 1 \\ e'(x) \end{bmatrix} = \tilde B \begin{bmatrix} 1 \\ "
        r"e^*(x) \end{bmatrix}$ ($\tilde B = (M^* M'^{-1})^\top$) follows: $e' = e^* + c$ with $H' = H^*$ gives "
        r"identical conditionals and satisfies Assumptions 2-3, but for $D \ge K+1$ affinely independent "
        r"embeddings no linear $B$ maps $e^*$ to $e'$. The context part $H' = A H^*$ is unaffected.",
        of="afa5343f"),
    "efa.thm1.recovery-theta1": Tex(
        r"Two causal EFAs with equal conditionals $p(x_i \mid x_{1:i-1})$ -- $\theta'$ obtained by fitting an "
        r"independently initialised EFA to $\theta^*$'s conditionals -- have context embeddings related by one "
        r"invertible linear map, $H'(x)_i = A H^*(x)_i$ with $A = (L^* L'^{-1})^\top$, on every context, and "
        r"center embeddings related affinely, $\begin{bmatrix} 1 \\ e' \end{bmatrix} = \tilde B "
        r"\begin{bmatrix} 1 \\ e^* \end{bmatrix}$ with $\tilde B = (M^* M'^{-1})^\top$.",
        of="6cb7ef1e"),
    "efa.thm1.recovery-theta2": Tex(
        r"The algebra of the proof for $\theta_2$ (not identifiability itself): for a Gaussian EFA pair constructed "
        r"with equal means ($K' = C_0 K^*$, $L' = C_0^{-\top} L^*$), the proof's $D = (N^* N'^{-1})^\top$ and "
        r"$C = (D^{-1})^\top$ return $C = C_0$, $D L^* = L'$, and $K'(y) = C K^*(y)$ on fresh data. (Whether equal "
        r"means force $K' = C K^*$ is efa.thm1.gap-pointwise: they do not.)",
        of="07d382e2"),
    "efa.thm2.erm-decomposition": Tex(
        r"The empirical risk minimiser $\hat\theta$ satisfies $L(\hat\theta) \le \inf_\theta L(\theta) + 2 "
        r"\sup_\theta |X_\theta|$, $X_\theta = \hat L(\theta) - L(\theta)$.",
        of="b8137e36"),
    "efa.thm2.excess-loss-rate": Tex(
        r"On a data model whose infimum is known in advance ($y_i = \mu_i(\tau) + \varepsilon_i$, $\mu_i$ the "
        r"prediction of a Sec 5.2 teacher that reads no $y$, $\varepsilon_i$ uniform, mean 0, $|y_i| \le B_y$; the "
        r"teacher is then the Bayes predictor, $\inf_\Theta L = L(\text{teacher})$ and $L(\theta) - \inf L = "
        r"\mathbb{E}[(f_\theta - \mu)^2]/2$ exactly), the excess population loss of local empirical risk "
        r"minimisers (Adam from the teacher; empirical risk $\le$ the teacher's) decreases with $F$ at least like "
        r"$F^{-0.4}$: the mean over 5 seeds is non-increasing in $F = 2^6, \dots, 2^{13}$ (one violation allowed) "
        r"with log-log slope $\le -0.4$. Random-start ERM is reported beside it; the constant $C$ of Thm 2 is "
        r"unspecified, so the bound itself is not compared.",
        of="1bdca928"),
    "efa.thm2.log-constant": Tex(
        r"$\log\big(4 + 4(L+1) B_H^L B_\Theta B / B_y\big) \le 43 L \log\big(2 + \max(B, R, 1/(2 B_y))\big)$ with "
        r"$B_H = (1+B^2)(1+B^2 R^3)$, $B_\Theta = B R (1 + B R^2 + B^3 R^2)$, on the grid $B, R, B_y \in "
        r"[10^{-6}, 10^{8}]$ (29 log-spaced points each), $L \in \{1,2,3,5,10,50,200\}$.",
        of="93e9f159"),
    "efa.thm2.log-constant-proof": Tex(
        r"For every $L \ge 1$ and $B, R, B_y > 0$: $\log\big(4 + 4(L+1) B_H^L B_\Theta B / B_y\big) \le 43 L "
        r"\log\big(2 + \max(B, R, 1/(2 B_y))\big)$, with $B_H = (1+B^2)(1+B^2 R^3)$, $B_\Theta = B R (1 + B R^2 + "
        r"B^3 R^2)$.",
        of="0d5260e4"),
    "efa.thm2.loss-bound-lipschitz": Tex(
        r"For $|y| \le B_y$ and clipped predictions: $0 \le \ell(\theta; Z) \le 2 B_y^2$; $|(y-a)^2 - (y-b)^2| "
        r"\le 4 B_y |a-b|$; and $\|\mathrm{Exp}_\theta - \mathrm{Exp}_{\tilde\theta}\|_{2,\infty} \le B R\, "
        r"|||\theta - \tilde\theta|||$ for $|||\theta|||, |||\tilde\theta||| \le B$.",
        of="431f87aa"),
    "efa.thm2.parameter-count": Tex(
        r"The Sec 5.2 transformer class has exactly $d = L(3 M D^2 + 2 D D') + K'(K + \tau)$ parameters, with "
        r"token width $D = K + 1$: the sizes of its matrices ($G_1$, $G_2$, and per layer $M$ heads of $Q$, $K$, "
        r"$V$ and the MLP $W_1$, $W_2$) sum to $d$; for $L \ge 2$ the prediction depends on every one of them, for "
        r"$L = 1$ on all but the $M (K+1)$ entries of the last column of each $Q_m$ (they multiply the masked "
        r"$y_i = 0$ of the only query column), so $d$ counts them and remains an upper bound; its weights start "
        r"$\mathcal N(0, s^2 / \text{fan}_\text{in})$ ($s$ = init\_scale), as documented.",
        of="64728f15"),
    "efa.thm2.transformer-lipschitz": Tex(
        r"For $|||\theta|||, |||\tilde\theta||| \le B$ and clipping radius $R$, "
        r"$\|\mathrm{TF}^R_\theta(\mathrm{Exp}^R_\theta(Z)) - \mathrm{TF}^R_{\tilde\theta}"
        r"(\mathrm{Exp}^R_{\tilde\theta}(Z))\|_{2,\infty} \le (L+1) B_H^L B_\Theta\, |||\theta - \tilde\theta|||$ "
        r"with $B_H = (1+B^2)(1+B^2 R^3)$ and $B_\Theta = B R (1 + B R^2 + B^3 R^2)$.",
        of="95687a63"),
    "efa.eq1.torch-layer": Tex(
        r"The attention of Eq. (1), $Z'^\top = \sum_h W^V_h Z^\top \operatorname{softmax}_{\mathrm{col}}((W^Q_h "
        r"Z^\top)^\top W^K_h Z^\top / E + M)$ (or its linear form), is what the torch layers users get compute: "
        r"EFAMultiheadAttention with convention='paper' (causal and padding masks through torch's arguments) and "
        r"efa_attention in scaled_dot_product_attention's calling convention.",
        of="0afc5f6d"),
    "efa.sec5.model-setup": Tex(
        r"The EFA models start from the documented distributions -- $\beta$, $P$ and the value-side embeddings "
        r"$\mathcal{U}(\pm 0.05)$ (and the FM baseline's $\rho$, $\alpha$), $\delta$ glorot, "
        r"$\mathcal{U}(\pm\sqrt{6/(D + K)})$, $W^Q_h, W^K_h, W^V_h$ "
        r"glorot per head over (head\_dim, width), $W^O$ glorot, biases $0$ -- accept their option names from any "
        r"string equal to them, and check their inputs except inside input\_checks(False).",
        of="e918c941"),
    "efa.remark8.multi-layer": Tex(
        r"Remark 8's multi-layer EFA -- step 3 repeated, $X_i^{(l)} = \sum_h W^{V(l)}_h X_i^{(l-1)} "
        r"\operatorname{softmax}_{\mathrm{col}}((W^{Q(l)}_h X_i^{(l-1)})^\top W^{K(l)}_h X_i^{(l-1)} / K + M)$, "
        r"$X'_i = X_i^{(L)}$, $\eta_i = \delta^\top X'_{ii}$ -- and its variants with residual connections, layer "
        r"normalisation, a feed-forward block and concatenated heads (the authors' layer: $q_i \cdot k_j / "
        r"\sqrt{d_h}$, biases, $W^O$) is what EFACategorical computes, for causal and bidirectional masks, softmax "
        r"and linear attention, and sequences with padding.",
        of="7d102d8d"),
    "efa.sec2-2.family-mean-code-loss": Tex(
        r"For each family of the paper (Gaussian with known $\sigma^2$, Poisson v1 $y - 1 \sim "
        r"\operatorname{Poisson}(e^z)$ and v2 $y \sim \operatorname{Poisson}(1 + e^z)$, Bernoulli, Categorical) "
        r"the mean prediction is $\mathbb{E}[y]$ under the printed density at $\kappa$, the negative "
        r"log-likelihood is minus its log-density, and the loss the authors' code minimised is the MSE, the "
        r"Poisson negative log-likelihood without its log-factorial, or the cross-entropy, at every raw output.",
        of="9d9e1eb2"),
    "efa.sec2-2.value-model": Tex(
        r"The exponential family part of EFA: $\kappa_i = \lambda_2(Y'_{ii})$, $Y_i$'s columns "
        r"$[\bar\beta_{x_j}; \bar\delta_{x_j}; g(\tau_j); \lambda_1(y_j)] + \bar p_j$ with "
        r"$\lambda_1([\mathrm{MASK}])$ at the target ($x_i$ stays visible), transformed by the attention of step 3 "
        r"(repeated, Remark 8), and $\log p(y_i \mid \cdot) = \kappa^\top t(y_i) - A(\kappa) + \log h(y_i)$ "
        r"(Eq. (3)); the library's EFAValue computes these for the Gaussian, Poisson (v1, v2), Bernoulli and "
        r"Categorical families and the embedding choices of Remarks 6-7, with attributes, both directions and "
        r"padding, and its mean prediction and code loss are those of $\kappa$.",
        of="aa9ee6e6"),
    "efa.sec3.order-irrelevance": Tex(
        r"Without positional embeddings the bidirectional EFA treats the sequence as a set: permuting the positions "
        r"(items, values and attributes together) permutes the conditionals $\eta_i$ and $\kappa_i$, as Sec "
        r"3.1-3.2 need when the order is unknown or irrelevant; with positional embeddings, or with the causal "
        r"mask, the order changes them.",
        of="d60bb4ec"),
}
