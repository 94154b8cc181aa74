"""Claim that the ViT and OT-ViT the Fenchel paper's Tables 1-2 train are the networks Sec 9 / App. D
describe (experiments.models.fenchel_vit): a pre-LN ViT, and the same with the class token's attention in
the last layer replaced by the OT-based attention (22) with cost M(a, b) = -a^T b + C.

The oracle is a float64 numpy transcription written from the paper's description: patches cut by hand and
embedded, the class token and positions, pre-LN layers whose attention is softmax(Q K^T / sqrt(d')) V per head,
a GELU MLP, and in OT-ViT's last layer (22) as printed,

    p*(t) = sum_i u_i exp((alpha <t, z> - M(t, t_i)) / gamma) / sum_{t' in A} exp((alpha <t', z> - M(t', t_i)) / gamma),

with templates t = x / sqrt(d') (the LayerNorm'd token features), alpha <t, z> the attention logit of the
class token (Sec 8's reparameterisation, Eq. 19), u uniform on the image's patch templates and C = 3.7 (it
cancels: the check shows it), with and without the templates of a same-class partner image in A.
"""
from __future__ import annotations

import math

import numpy as np

from attnlab.theory._errors import worse as _worse
from attnlab.catalog import claim, holds_if

VIT_TOL = 1e-10
C_COST = 3.7


def _np(p):
    return p.detach().numpy().astype(np.float64)


def _ln(x, mod):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + mod.eps) * _np(mod.weight) + _np(mod.bias)


def _gelu(x):
    from scipy.special import erf

    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def _mlp(x, mlp):
    h = _gelu(x @ _np(mlp[0].weight).T + _np(mlp[0].bias))
    return h @ _np(mlp[3].weight).T + _np(mlp[3].bias)


def _mha(y, attn):
    """softmax(Q K^T / sqrt(d')) V per head, then the output projection (nn.MultiheadAttention's weights)."""
    D, H = y.shape[-1], attn.num_heads
    dh = D // H
    W, b = _np(attn.in_proj_weight), _np(attn.in_proj_bias)
    q, k, v = (y @ W[i * D:(i + 1) * D].T + b[i * D:(i + 1) * D] for i in range(3))
    out = np.zeros_like(y)
    for h in range(H):
        sl = slice(h * dh, (h + 1) * dh)
        s = q[:, sl] @ k[:, sl].T / math.sqrt(dh)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        out[:, sl] = p @ v[:, sl]
    return out @ _np(attn.out_proj.weight).T + _np(attn.out_proj.bias)


def _block(x, blk):
    x = x + _mha(_ln(x, blk.n1), blk.attn)
    return x + _mlp(_ln(x, blk.n2), blk.mlp)


def _ot_block(x, blk, partner_tokens):
    """OT-ViT's last layer for the class token: (22) per head over A = the image's patch templates (and the
    partner image's, when given), u uniform on the image's."""
    y = _ln(x, blk.n1)
    cls, patches = y[0], y[1:]
    A = patches if partner_tokens is None else np.concatenate([patches, _ln(partner_tokens, blk.n1)[1:]])
    att = blk.attn
    D, H, dh = att.dim, att.heads, att.dh
    q = cls @ _np(att.q.weight).T + _np(att.q.bias)
    k = A @ _np(att.k.weight).T + _np(att.k.bias)
    v = A @ _np(att.v.weight).T + _np(att.v.bias)
    n_atoms = patches.shape[0]
    t = A / math.sqrt(dh)                                   # templates t = x / sqrt(d')
    u = np.full(n_atoms, 1.0 / n_atoms)
    out = np.zeros(D)
    for h in range(H):
        sl = slice(h * dh, (h + 1) * dh)
        logit = k[:, sl] @ q[sl] / math.sqrt(dh)            # alpha <t, z> for every t in A (alpha = 1)
        p = np.zeros(len(A))
        for i in range(n_atoms):
            M = -(t @ t[i]) + C_COST                         # M(t, t_i) = -<t, t_i> + C
            e = (logit - M) / att.gamma
            e = np.exp(e - e.max())
            p += u[i] * e / e.sum()
        out[sl] = p @ v[:, sl]
    c = x[0] + out @ _np(att.o.weight).T + _np(att.o.bias)
    return c + _mlp(_ln(c[None], blk.n2)[0], blk.mlp)


def vit_reference(model, img, partner=None):
    """Logits of ViT / OT-ViT for images (B, C, S, S) from the description above; partner (B,) as the
    model's (an index of a same-class image in the batch, or -1)."""
    B, Cn, S, _ = img.shape
    P = model.embed.kernel_size[0]
    Wc, bc = _np(model.embed.weight), _np(model.embed.bias)            # (D, C, P, P)
    D = Wc.shape[0]
    out = np.zeros((B, model.head.out_features))
    tokens = []
    for b in range(B):
        patches = [img[b, :, r:r + P, c:c + P].reshape(-1) for r in range(0, S, P) for c in range(0, S, P)]
        x = np.stack([Wc.reshape(D, -1) @ pt + bc for pt in patches])
        x = np.concatenate([_np(model.cls)[0], x]) + _np(model.pos)[0]
        for blk in model.blocks:
            x = _block(x, blk)
        tokens.append(x)
    for b in range(B):
        x = tokens[b]
        if model.ot:
            pt = None if partner is None or partner[b] < 0 else tokens[int(partner[b])]
            c = _ot_block(x, model.last, pt)
        else:
            c = _block(x, model.last)[0]
        out[b] = _ln(c, model.norm) @ _np(model.head.weight).T + _np(model.head.bias)
    return out


def check_vit():
    import torch

    from attnlab.experiments.models.fenchel_vit import ViT

    rng = np.random.default_rng(41)
    per = {}
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        img = rng.normal(size=(3, 1, 4, 4))
        for ot, depth in ((False, 3), (True, 3), (False, 1), (True, 1)):      # depth 1: the last layer alone
            torch.manual_seed(5)
            model = ViT(4, 2, 1, 3, dim=8, depth=depth, heads=2, mlp_dim=16, dropout=0.0, ot=ot,
                        gamma=1.3 if ot else None)
            with torch.no_grad():
                model.cls.normal_()
                for name, prm in model.named_parameters():          # non-trivial LayerNorm affines and biases
                    if "n1" in name or "n2" in name or "norm" in name or name.endswith("bias"):
                        prm.add_(0.3 * torch.randn_like(prm))
            model.eval()
            for partner in ((None, np.array([2, -1, 0])) if ot else (None,)):
                with torch.no_grad():
                    got = model(torch.tensor(img), partner=None if partner is None else torch.tensor(partner)).numpy()
                ref = vit_reference(model, img, partner)
                label = (("OT-ViT" if ot else "ViT") + f" depth {depth}"
                         + ("" if partner is None else " with same-class partners"))
                per[label] = float(np.max(np.abs(got - ref)) / max(np.max(np.abs(ref)), 1e-300))
        # the defaults (width 64, depth 4, 4 heads, MLP 128, dropout 0.2) in eval mode; the positions' documented
        # N(0, 0.02^2) start (mean and sd in standard errors over 4 x 65 x 64 entries)
        torch.manual_seed(6)
        model = ViT(4, 2, 1, 3).eval()
        with torch.no_grad():
            got = model(torch.tensor(img)).numpy()
        per["ViT with its defaults"] = float(np.max(np.abs(got - vit_reference(model, img))) /
                                             max(np.max(np.abs(vit_reference(model, img))), 1e-300))
        pos = torch.cat([ViT(32, 4, 3, 10).pos.detach().flatten() for _ in range(4)])
        n = pos.numel()
        z_pos = max(abs(float(pos.mean())) / (0.02 / math.sqrt(n)), abs(float(pos.std()) - 0.02) / (0.02 / math.sqrt(2 * n)))
        drop_ok = model.drop.p == 0.2
        # ... and the other documented defaults: depth 4 (three plain blocks and the last), width 64, 4 heads, MLP 128
        drop_ok = drop_ok and len(model.blocks) == 3 and model.embed.out_channels == 64 and \
            model.last.attn.num_heads == 4 and model.last.mlp[0].out_features == 128
        # without ot=True it is the plain ViT (no OT block); a depth below 1 is refused in one line
        from attnlab.experiments.models.fenchel_vit import OTBlock
        from attnlab.theory._inputs import refused

        drop_ok = drop_ok and not any(isinstance(mod, OTBlock) for mod in model.modules()) and all(
            refused(lambda d=d: ViT(4, 2, 1, 3, depth=d), "depth must be an integer >= 1") for d in (0, -1))
        # depth counts every transformer layer: depth - 1 plain blocks and the last one (plain or OT), whatever the
        # depth (the transcription walks the model's own blocks, so it cannot count them)
        drop_ok = drop_ok and all(len(ViT(4, 2, 1, 3, dim=8, heads=2, mlp_dim=16, depth=d, ot=ot).blocks) == d - 1
                                  for d in (1, 2, 3, 6) for ot in (False, True))
        # one learned position per patch and one for the class token: (1, (image/patch)^2 + 1, width)
        drop_ok = drop_ok and tuple(ViT(4, 2, 1, 3).pos.shape) == (1, 5, 64) and \
            tuple(ViT(32, 4, 3, 10, dim=8).pos.shape) == (1, 65, 8)
        # OT-ViT's temperature is a number > 0 (0 was once read as "use the default"): refused at construction,
        # and by the OT weights themselves
        from attnlab.experiments.models.fenchel_vit import ot_attention_weights

        qk0, G0, am0, u0 = torch.zeros(1, 1, 2), torch.zeros(1, 1, 2), torch.ones(1, 2, dtype=torch.bool), torch.ones(1, 1)
        drop_ok = drop_ok and all(refused(lambda g_=g_: ViT(4, 2, 1, 3, ot=True, gamma=g_), "gamma must be")
                                  for g_ in (0.0, -0.5, math.nan)) \
            and all(refused(lambda g_=g_: ot_attention_weights(qk0, G0, am0, u0, g_), "gamma must be a finite number > 0")
                    for g_ in (0.0, -0.5, math.nan))
    finally:
        torch.set_default_dtype(old)
    partners = check_partners()
    worst = _worse(*per.values())
    ok = worst <= VIT_TOL and partners["ok"] and z_pos <= 6.0 and drop_ok
    return holds_if(ok, measured=dict(worst_relative_error=worst, partners=partners, positions_z=z_pos,
                                      defaults_dropout_positions_depth_gamma=drop_ok),
                    tolerance=dict(relative=VIT_TOL, partners="same label, never itself, -1 without one; each "
                                                             "frequency within 4.5 binomial standard deviations",
                                   positions="mean and sd within 6 standard errors of N(0, 0.02^2)"),
                    explanation="ViT and OT-ViT (4x4 images, 2x2 patches, width 8, 2 heads, 3 layers, gamma 1.3; "
                                "LayerNorm affines and biases perturbed so that they matter) in eval mode, float64, "
                                "against a numpy transcription of the description (patches cut by hand, MHA per "
                                "head, exact GELU, (22) as printed with C = 3.7), and a ViT with its documented "
                                "defaults (width 64, depth 4, dropout 0.2, no OT block; depth 0 refused; one position per "
                                "patch and the class token; gamma 0, -0.5 and NaN refused by OT-ViT and by its weights); "
                                "error relative to the largest logit; the "
                                "positions' documented N(0, 0.02^2) start; "
                                "the partner draw of OT-ViT training (same_class_partners) over 1,000 seeded draws on "
                                "a batch with singleton classes: a partner has the image's label and is never the "
                                "image, none without a same-class image or at prob 0, and the draw rate and the "
                                "choice among same-class images are uniform; and over 20 seeds it equals the documented draw "
                                "written out (rand(B, B), each row's argmax over its class, then rand(B) < prob)",
                    per_case=per)


def check_partners(n_draws: int = 1000) -> dict:
    """same_class_partners on labels (0, 1, 0, 2, 1, 0, 3): every drawn partner has the label and is another
    image; the singletons (classes 2, 3) never get one; at prob 0 nobody, at prob 1 everyone else; at prob 0.3
    the draw rate, and for the class-0 triple the choice between the two others, within 4.5 binomial standard
    deviations of 0.3 and 1/2; and over 20 seeds the partners equal the documented draw written out."""
    import torch

    from attnlab.experiments.models.fenchel_vit import same_class_partners

    labels = torch.tensor([0, 1, 0, 2, 1, 0, 3])
    g = torch.Generator().manual_seed(19)
    has = torch.tensor([True, True, True, False, True, True, False])
    ok_label = True
    for prob, want_all in ((0.0, False), (1.0, True)):
        p = same_class_partners(labels, prob, g)
        ok_label &= bool(((p >= 0) == (has if want_all else torch.zeros_like(has))).all())
    P = torch.stack([same_class_partners(labels, 0.3, g) for _ in range(n_draws)])    # (draws, B)
    got = P >= 0
    safe = P.clamp(min=0)
    ok_label &= bool((~got | ((labels[safe] == labels[None, :]) & (P != torch.arange(len(labels))[None, :])
                               & has[None, :])).all())
    drawn, n_eligible = int(got.sum()), n_draws * int(has.sum())
    z_rate = (drawn - 0.3 * n_eligible) / math.sqrt(n_eligible * 0.3 * 0.7)
    first = P[:, 0][got[:, 0]]                                   # image 0's partners: images 2 and 5
    picks = {int(j): int((first == j).sum()) for j in first.unique()}
    n0 = len(first)
    z_pick = (picks.get(2, 0) - n0 / 2) / math.sqrt(n0 / 4) if n0 else math.inf
    # the documented draw written out (U = rand(B, B); row i's argmax over its own class; then rand(B) < prob),
    # from the same seed: the same partners, so a run's records do not depend on how the library draws
    same_as_written = True
    for seed in range(20):
        got_p = same_class_partners(labels, 0.6, torch.Generator().manual_seed(seed))
        gt = torch.Generator().manual_seed(seed)
        U = torch.rand(len(labels), len(labels), generator=gt)
        keep = torch.rand(len(labels), generator=gt) < 0.6
        want = []
        for i in range(len(labels)):
            cands = [j for j in range(len(labels)) if j != i and labels[j] == labels[i]]
            best = max(cands, key=lambda j: float(U[i, j])) if cands else -1
            want.append(best if (cands and bool(keep[i])) else -1)
        same_as_written &= got_p.tolist() == want
    return dict(ok=bool(ok_label and abs(z_rate) <= 4.5 and abs(z_pick) <= 4.5 and set(picks) <= {2, 5}
                        and same_as_written),
                labels_and_singletons=bool(ok_label), rate_z=z_rate, choice_z=z_pick,
                draw_as_documented=bool(same_as_written))


@claim("fenchel.sec9.ot-vit-network",
       reference="Sec 9, Eq. (22)/(44), App. D; Sec 8 Eq. (19) (the reparameterisation); Tables 1-2's models",
       statement="The ViT and OT-ViT the experiments train are the networks described: a pre-LN ViT on patch "
                 "embeddings with a class token, and OT-ViT, whose last layer gives the class token the OT-based "
                 "attention (22) with M(a, b) = -a^T b + C over the image's patch templates (and a same-class "
                 "image's, when drawn), u uniform -- in float64 within 1e-10 of a transcription, with C cancelling.",
       method="float64",
       vouches_for=("experiments.models.fenchel_vit.ViT.forward", "experiments.models.fenchel_vit.Block.forward",
                    "experiments.models.fenchel_vit.OTBlock.forward", "experiments.models.fenchel_vit.OTAttention.forward",
                    "experiments.models.fenchel_vit.ot_attention_weights",
                    "experiments.models.fenchel_vit.same_class_partners"))
def _vit():
    return check_vit()
