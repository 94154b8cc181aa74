"""Claim that the BERT-like and T5-like substitutes of the Fenchel deviation study (Sec 8, Figs 4-8;
experiments.models.fenchel_transformers) are the architectures the paper's reparameterisation (Eq. 19)
reads: BERT's post-LayerNorm encoder with biased projections and logits scaled by 1/sqrt(d'); T5's
pre-RMSNorm encoder-decoder without biases or scaling, with the bucketed relative-position bias of Raffel
et al. (32 buckets, distance 128; bidirectional in the encoder, causal in the decoder, none in
cross-attention).

The oracle is a float64 numpy transcription from that description (attention per head as
softmax(<K x_i, Q y_k> scale + add) V, exact GELU, T5's buckets by the reference code's formula with the
logarithm taken in float32 as that code takes it).  The check also rebuilds every head's logits from what
the attention modules capture for the study (query and key inputs, the additive term) and head_weights().
"""
from __future__ import annotations

import math

import numpy as np

from attnlab.catalog import claim, holds_if
from attnlab.theory._errors import finite_or_inf as _finite_or_inf

SUB_TOL = 1e-10


def _np(p):
    return p.detach().numpy().astype(np.float64)


def _gelu(x):
    from scipy.special import erf

    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def _ln(x, mod):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + mod.eps) * _np(mod.weight) + _np(mod.bias)


def _rms(x, mod):
    return _np(mod.weight) * x / np.sqrt((x * x).mean(-1, keepdims=True) + mod.eps)


def _lin(x, mod):
    y = x @ _np(mod.weight).T
    return y + _np(mod.bias) if mod.bias is not None else y


def _attention(y, x, add, mod, scaled: bool):
    """Multi-head attention: per head softmax(<K x_i (+b), Q y_k (+b)> scale + add[h, k, i]) V x, then O;
    scale 1/sqrt(d') for BERT, 1 for T5 (the architecture's, not read from the module)."""
    H, dh = mod.n_heads, mod.d_head
    q, k, v = _lin(y, mod.q), _lin(x, mod.k), _lin(x, mod.v)
    scale = 1 / math.sqrt(dh) if scaled else 1.0
    out = np.zeros_like(q)
    for h in range(H):
        sl = slice(h * dh, (h + 1) * dh)
        s = q[:, sl] @ k[:, sl].T * scale + add[h if add.shape[0] > 1 else 0]
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        out[:, sl] = p @ v[:, sl]
    return _lin(out, mod.o)


def t5_bucket(rel: int, bidirectional: bool, num_buckets: int = 32, max_distance: int = 128) -> int:
    """Raffel et al.'s relative-position bucket of rel = key position - query position, as the reference
    T5 code computes it (its logarithm in float32)."""
    ret = 0
    if bidirectional:
        num_buckets //= 2
        ret += num_buckets if rel > 0 else 0
        n = abs(rel)
    else:
        n = -min(rel, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return ret + n
    f32 = np.float32
    large = max_exact + int(np.log(f32(n) / f32(max_exact)) / f32(math.log(max_distance / max_exact))
                            * f32(num_buckets - max_exact))
    return ret + min(large, num_buckets - 1)


def _bias(mod, Lq, Lk):
    emb = _np(mod.emb.weight)                                            # (buckets, H)
    b = np.array([[emb[t5_bucket(j - i, mod.bidirectional, mod.num_buckets, mod.max_distance)]
                   for j in range(Lk)] for i in range(Lq)])              # (Lq, Lk, H)
    return b.transpose(2, 0, 1)


def bert_reference(model, ids, pad):
    L = ids.shape[1]
    out = []
    for b in range(ids.shape[0]):
        x = _ln(_np(model.tok.weight)[ids[b]] + _np(model.pos.weight)[:L], model.ln)
        add = np.where(pad[b], 0.0, -np.inf)[None, None, :].repeat(L, 1)
        for layer in model.layers:
            x = _ln(x + _attention(x, x, add, layer.attn, True), layer.ln1)
            x = _ln(x + _lin(_gelu(_lin(x, layer.ff[0])), layer.ff[2]), layer.ln2)
        h = model.head
        out.append(_lin(_ln(_gelu(_lin(x, h[0])), h[2]), h[3]))
    return np.stack(out)


def t5_reference(model, src, smask, tgt, tmask):
    Ls, Lt = src.shape[1], tgt.shape[1]
    E = _np(model.emb.weight)
    enc_bias, dec_bias = _bias(model.enc_bias, Ls, Ls), _bias(model.dec_bias, Lt, Lt)
    causal = np.triu(np.full((Lt, Lt), -np.inf), 1)
    out = []
    for b in range(src.shape[0]):
        pad_s = np.where(smask[b], 0.0, -np.inf)[None, None, :]
        pad_t = np.where(tmask[b], 0.0, -np.inf)[None, None, :]
        x = E[src[b]]
        for layer in model.enc:
            y = _rms(x, layer.n1)
            x = x + _attention(y, y, enc_bias + pad_s, layer.attn, False)
            x = x + _lin(np.maximum(_lin(_rms(x, layer.n2), layer.ff.wi), 0.0), layer.ff.wo)
        enc = _rms(x, model.enc_norm)
        y = E[tgt[b]]
        for layer in model.dec:
            z = _rms(y, layer.n1)
            y = y + _attention(z, z, dec_bias + causal[None] + pad_t, layer.self_attn, False)
            y = y + _attention(_rms(y, layer.n2), enc, pad_s.repeat(Lt, 1), layer.cross_attn, False)
            y = y + _lin(np.maximum(_lin(_rms(y, layer.n3), layer.ff.wi), 0.0), layer.ff.wo)
        out.append(_lin(_rms(y, model.dec_norm), model.lm_head))
    return np.stack(out)


def _rel(a, b):
    return _finite_or_inf(float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)))


def check_substitutes():
    import torch

    from attnlab.experiments.models.fenchel_transformers import BertLike, T5Like, relative_position_bucket

    rng = np.random.default_rng(53)
    per = {}
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        torch.manual_seed(7)
        bert = BertLike(vocab=11, d_model=8, n_heads=2, n_layers=2, d_ff=12, max_len=10, dropout=0.0).eval()
        ids = rng.integers(0, 11, size=(2, 7))
        pad = np.ones((2, 7), bool)
        pad[1, 5:] = False
        with torch.no_grad():
            for m in bert.attentions().values():
                m.capture = []
            got = bert(torch.tensor(ids), torch.tensor(pad)).numpy()
        per["BertLike logits"] = _rel(got, bert_reference(bert, ids, pad))
        # one capture per forward call of every layer, under the names the deviation study records
        per["BertLike attention names and captures (mismatches)"] = float(
            sum(bert.attentions().get(f"layer{i + 1}") is not L.attn for i, L in enumerate(bert.layers))
            + len(set(bert.attentions()) - {f"layer{i + 1}" for i in range(len(bert.layers))})
            + sum(len(m_.capture or ()) != 1 for m_ in bert.attentions().values()))
        per["BertLike captured logits"] = _captured(bert, True)
        torch.manual_seed(8)
        t5 = T5Like(vocab=13, d_model=8, n_heads=2, n_layers=2, d_ff=12, dropout=0.0).eval()
        with torch.no_grad():
            for p in t5.parameters():                       # RMSNorm scales away from 1, bias tables varied
                p.add_(0.2 * torch.randn_like(p))
        src, tgt = rng.integers(0, 13, size=(2, 9)), rng.integers(0, 13, size=(2, 6))
        smask, tmask = np.ones((2, 9), bool), np.ones((2, 6), bool)
        smask[0, 7:] = tmask[1, 5:] = False
        with torch.no_grad():
            for m in t5.attentions().values():
                m.capture = []
            got = t5(torch.tensor(src), torch.tensor(smask), torch.tensor(tgt), torch.tensor(tmask)).numpy()
        per["T5Like logits"] = _rel(got, t5_reference(t5, src, smask, tgt, tmask))
        # the settings the deviation study records: every layer's attention under its own name
        names = {**{f"enc-self/layer{i + 1}": L.attn for i, L in enumerate(t5.enc)},
                 **{f"dec-self/layer{i + 1}": L.self_attn for i, L in enumerate(t5.dec)},
                 **{f"cross/layer{i + 1}": L.cross_attn for i, L in enumerate(t5.dec)}}
        got_names = t5.attentions()
        per["T5Like attention names (mismatches)"] = float(
            sum(got_names.get(k) is not v for k, v in names.items()) + len(set(got_names) - set(names)))
        per["T5Like captures (one per call)"] = float(sum(len(m_.capture or ()) != 1 for m_ in t5.attentions().values()))
        per["T5Like captured logits"] = _captured(t5, False)
        rel = torch.arange(-300, 301)
        # T5's 32 buckets and max distance 128, and other counts (24, 10: not powers of two, where adding the
        # direction's offset and or-ing it in differ) and distances
        wrong = sum(int(relative_position_bucket(rel, bi, nb, md)[k]) != t5_bucket(int(rel[k]), bi, nb, md)
                    for bi in (True, False) for nb, md in ((32, 128), (24, 50), (10, 20)) for k in range(len(rel)))
        per["relative_position_bucket mismatches (-300..300; 32, 24, 10 buckets)"] = float(wrong)
        # built with their defaults, both drop with BERT's and T5's rate 0.1 (every nn.Dropout they hold)
        rates = [m.p for net in (BertLike(vocab=11), T5Like(vocab=13)) for m in net.modules()
                 if isinstance(m, torch.nn.Dropout)]
        per["default dropout rates other than 0.1"] = float(sum(r != 0.1 for r in rates) + (len(rates) < 10))
        # built with their defaults, they are the networks the deviation experiment trains at its full config:
        # the same parameters (names, shapes and, from the same seed, values)
        from attnlab.experiments.fenchel.deviation import CONFIG, build_models

        built = []
        for make in (lambda: build_models(CONFIG, 50), lambda: {"bert": BertLike(50), "t5": T5Like(50)}):
            torch.manual_seed(8)
            built.append({k: net.state_dict() for k, net in make().items()})
        same = all(list(built[0][k]) == list(built[1][k]) and all(torch.equal(built[0][k][n], built[1][k][n])
                                                                  for n in built[0][k]) for k in ("bert", "t5"))
        per["BertLike() and T5Like() defaults = the deviation experiment's full config"] = 0.0 if same else math.inf
    finally:
        torch.set_default_dtype(old)
    ok = all(v <= SUB_TOL for v in per.values())
    return holds_if(ok, measured=dict(per_case=per), tolerance=dict(relative=SUB_TOL, bucket_mismatches=0),
                    explanation="BertLike (2 layers, width 8, 2 heads, padding) and T5Like (2+2 layers, parameters "
                                "perturbed off their initial values, padding in both streams) in eval mode, float64, "
                                "against numpy transcriptions; every head's logits rebuilt from the captured inputs "
                                "and head_weights(); T5 buckets for relative positions -300..300 both ways (32, 24 and "
                                "10 buckets); built "
                                "with their defaults, every dropout at BERT's and T5's 0.1, and the defaults build the "
                                "deviation experiment's networks at its full config",
                    per_case=per)


def _captured(model, scaled: bool):
    """max relative error of every head's softmax weights rebuilt from what each attention module captured
    (query and key inputs, additive term) and head_weights(), against the module's own weights."""
    import torch

    worst = 0.0
    for mod in model.attentions().values():
        for cap in mod.capture:
            y, x, add = (_np(cap[k]) for k in ("xq", "xk", "add"))
            for h in range(mod.n_heads):
                WQ, bQ, WK = (_np(w) for w in mod.head_weights(h))
                scale = 1 / math.sqrt(mod.d_head) if scaled else 1.0
                bK = _np(mod.k.bias)[h * mod.d_head:(h + 1) * mod.d_head] if mod.k.bias is not None else 0.0
                for b in range(y.shape[0]):
                    s = (x[b] @ WK.T + bK) @ (y[b] @ WQ.T + bQ).T * scale        # (Lk, Lq)
                    a = add[min(b, add.shape[0] - 1), min(h, add.shape[1] - 1)]
                    s = s.T + a
                    p = np.exp(s - s.max(-1, keepdims=True))
                    p /= p.sum(-1, keepdims=True)
                    with torch.no_grad():
                        q = mod.split(mod.q(torch.tensor(y[b:b + 1])))[0, h]
                        k = mod.split(mod.k(torch.tensor(x[b:b + 1])))[0, h]
                        ref = torch.softmax(q @ k.T * mod.scale + torch.tensor(a), -1).numpy()
                    worst = max(worst, _rel(p, ref))
        mod.capture = None
    return worst


@claim("fenchel.sec8.substitute-architectures",
       reference="Sec 8, Eqs. (17)-(19) (attention in BERT and T5 read as (16)); Figs 4-8's models",
       statement="The BERT-like and T5-like substitutes the deviation study trains are the architectures the "
                 "reparameterisation reads: BERT's post-LayerNorm encoder with biased projections and logits "
                 "scaled by 1/sqrt(d'); T5's pre-RMSNorm encoder-decoder with no biases or scaling and Raffel et "
                 "al.'s bucketed relative-position bias (bidirectional in the encoder, causal in the decoder, none "
                 "across) -- in float64 within 1e-10 of transcriptions, and every head's weights are rebuilt "
                 "exactly from what the study captures.",
       method="float64",
       vouches_for=("experiments.models.fenchel_transformers.BertLike.forward",
                    "experiments.models.fenchel_transformers.T5Like.forward",
                    "experiments.models.fenchel_transformers.Attention.forward",
                    "experiments.models.fenchel_transformers.Attention.head_weights",
                    "experiments.models.fenchel_transformers.RMSNorm.forward",
                    "experiments.models.fenchel_transformers.relative_position_bucket",
                    "experiments.models.fenchel_transformers.RelativePositionBias.forward"))
def _substitutes():
    return check_substitutes()
