"""attnlab.layers as drop-ins for torch's attention: nn.MultiheadAttention's calling convention and
parameters, inside nn.TransformerEncoderLayer / nn.TransformerDecoderLayer (trained a few steps; equal
to the MHA path where the layer reduces to softmax attention; torch's fused fast path never bypasses
them), masks, dtypes and edge cases."""
from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from attnlab import layers

E, H = 8, 2
KINDS = ("cts_softmax", "cts_sparsemax", "kernel_softmax", "kernel_sparsemax")
MODULES = {
    "fenchel-exact": lambda **kw: layers.FenchelMultiheadAttention(E, H, **kw),
    "fenchel-approx": lambda **kw: layers.FenchelMultiheadAttention(E, H, exact=False, **kw),
    "fenchel-head": lambda **kw: layers.FenchelMultiheadAttention(E, H, alpha=0.5, alpha_mode="head", **kw),
    "continuous-kernel": lambda **kw: layers.ContinuousMultiheadAttention(E, H, kind="kernel_sparsemax", n_basis=8,
                                                                         grid_size=64, **kw),
    "continuous-cts": lambda **kw: layers.ContinuousMultiheadAttention(E, H, kind="cts_softmax", n_basis=8, **kw),
    "efa-standard": lambda **kw: layers.EFAMultiheadAttention(E, H, **kw),
    "efa-paper": lambda **kw: layers.EFAMultiheadAttention(E, H, convention="paper", **kw),
}
# the layers that are nn.MultiheadAttention when given its weights (exact=False with alpha = 1; EFA standard)
SOFTMAX = ("fenchel-approx", "efa-standard")


def _x(seed, N=3, L=5, dtype=torch.float64):
    return torch.randn(N, L, E, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _masks(N=3, L=5):
    kpm = torch.zeros(N, L, dtype=torch.bool)
    kpm[1, 3:] = True                                  # padding at the end of sequence 1
    causal = nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
    return kpm, causal


# --------------------------------------------------------------------------- MHA's convention
@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_returns_output_and_weights_like_mha(name):
    m = MODULES[name](batch_first=True).double()
    x = _x(0)
    out, w = m(x, x, x)
    assert out.shape == x.shape and w.shape == (3, 5, 5)
    out, w = m(x, x, x, average_attn_weights=False)
    assert w.shape == (3, H, 5, 5)
    assert m(x, x, x, need_weights=False)[1] is None
    # seq-first (torch's default) and unbatched inputs
    m2 = MODULES[name]().double()
    m2.load_state_dict(m.state_dict())
    o2, w2 = m2(x.transpose(0, 1), x.transpose(0, 1), x.transpose(0, 1))
    assert torch.allclose(o2.transpose(0, 1), m(x, x, x)[0], atol=1e-10)
    o1, w1 = m(x[0], x[0], x[0])
    assert torch.allclose(o1, m(x, x, x)[0][0], atol=1e-10) and w1.shape == (5, 5)


@pytest.mark.parametrize("name", SOFTMAX)
def test_equals_mha_with_its_weights_and_masks(name):
    mha = nn.MultiheadAttention(E, H, batch_first=True).double()
    m = MODULES[name](batch_first=True).double()
    m.load_state_dict(mha.state_dict())              # same parameter names: the state dict moves over
    x, y = _x(1), _x(2, L=6)
    kpm, causal = _masks()
    for kw in ({}, {"key_padding_mask": kpm}, {"attn_mask": causal}, {"attn_mask": causal.isinf()},
               {"attn_mask": causal.isinf(), "key_padding_mask": kpm, "average_attn_weights": False}):
        ref, rw = mha(x, x, x, **kw)
        out, w = m(x, x, x, **kw)
        assert (out - ref).abs().max() < 1e-12 and (w - rw).abs().max() < 1e-12, kw
    ref, _ = mha(x, y, y)                            # cross-attention
    assert (m(x, y, y)[0] - ref).abs().max() < 1e-12


def test_kdim_vdim_parameters_and_state_dict_like_mha():
    mha = nn.MultiheadAttention(E, H, kdim=5, vdim=3, batch_first=True).double()
    m = layers.FenchelMultiheadAttention(E, H, kdim=5, vdim=3, batch_first=True, exact=False).double()
    assert set(m.state_dict()) == set(mha.state_dict())
    m.load_state_dict(mha.state_dict())
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, n, d, generator=g, dtype=torch.float64) for n, d in ((4, E), (6, 5), (6, 3)))
    assert (m(q, k, v)[0] - mha(q, k, v)[0]).abs().max() < 1e-12
    mha.load_state_dict(layers.EFAMultiheadAttention(E, H, kdim=5, vdim=3).double().state_dict())


def test_the_usual_call_does_not_fail_silently():
    x = torch.randn(2, 5, E)
    out, w = layers.FenchelMultiheadAttention(E, 4, batch_first=True)(x, x, x)   # third tensor is value
    assert out.shape == x.shape and w.shape == (2, 5, 5)
    out, _ = layers.ContinuousMultiheadAttention(E, 1, batch_first=True)(x, x, x)  # unpacks (output, weights)
    assert out.shape == x.shape
    q = torch.randn(2, 3, 5, 4)
    with pytest.raises(ValueError, match="attn_mask must be a bool or floating-point tensor.*keyword-only"):
        layers.fenchel_attention(q, q, q, 0.5)                     # alpha is keyword-only


# --------------------------------------------------------------------------- inside torch's blocks
def _swap_encoder(name, mha_layer=None):
    layer = nn.TransformerEncoderLayer(E, H, dim_feedforward=16, dropout=0.0, batch_first=True).double()
    if mha_layer is not None:
        layer.load_state_dict(mha_layer.state_dict())
    new = MODULES[name](batch_first=True).double()
    if name in SOFTMAX:
        new.load_state_dict(layer.self_attn.state_dict())
    layer.self_attn = new
    return layer


@pytest.mark.parametrize("name", sorted(MODULES))
def test_encoder_layer_trains_with_padding_and_causal_masks(name):
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(E, H, dim_feedforward=16, dropout=0.0, batch_first=True).double()
    layer = _swap_encoder(name, ref)
    x = _x(4)
    kpm, causal = _masks()
    causal = causal.isinf()                             # bool, as kpm (torch warns on mixed mask types)
    if name in SOFTMAX:                                 # the MHA path, same weights: equal outputs
        want = ref(x, src_mask=causal, src_key_padding_mask=kpm, is_causal=True)
        got = layer(x, src_mask=causal, src_key_padding_mask=kpm, is_causal=True)
        assert (want - got).abs().max() < 1e-12
    opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
    before = [p.detach().clone() for p in layer.self_attn.parameters()]
    target = torch.randn(3, 5, E, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    losses = []
    for _ in range(4):
        y = layer(x, src_mask=causal, src_key_padding_mask=kpm, is_causal=True)
        loss = (y - target)[~kpm].square().mean()
        opt.zero_grad()
        loss.backward()
        assert all(torch.isfinite(p.grad).all() for p in layer.parameters() if p.grad is not None)
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert any(not torch.equal(a, b) for a, b in zip(before, layer.self_attn.parameters()))
    # a causal layer: the output at position 1 does not depend on later positions
    x2 = x.clone()
    x2[:, 3:] += 1.0
    layer.eval()
    with torch.no_grad():
        a = layer(x, src_mask=causal, is_causal=True)
        b = layer(x2, src_mask=causal, is_causal=True)
    assert (a[:, :3] - b[:, :3]).abs().max() < 1e-10


@pytest.mark.parametrize("name", sorted(MODULES))
def test_fused_fast_path_never_bypasses_the_layer(name):
    """In eval mode without grad, torch's encoder layer computes softmax attention from in_proj_weight
    when self_attn looks like MHA.  These layers must be called instead: equal with the fast path on/off."""
    layer = _swap_encoder(name).float().eval()       # float32: the fast path's dtype
    x = _x(6, N=4, L=6, dtype=torch.float32)
    kpm = torch.zeros(4, 6, dtype=torch.bool)
    kpm[2, 4:] = True
    outs = []
    for enabled in (False, True):
        torch.backends.mha.set_fastpath_enabled(enabled)
        try:
            with torch.no_grad():
                outs.append((layer(x), layer(x, src_key_padding_mask=kpm)))
        finally:
            torch.backends.mha.set_fastpath_enabled(True)
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
    with warnings.catch_warnings():                   # the stack built around the layer: its forward too
        warnings.simplefilter("ignore", UserWarning)  # (enable_nested_tensor off: torch says why)
        enc = nn.TransformerEncoder(layer, 2).eval()
    with torch.no_grad():
        out = enc(x, src_key_padding_mask=kpm)
    assert torch.isfinite(out).all()
    if name not in SOFTMAX:
        mha = nn.TransformerEncoderLayer(E, H, dim_feedforward=16, dropout=0.0, batch_first=True).eval()
        mha.load_state_dict({k: v for k, v in layer.state_dict().items() if not k.startswith("self_attn")},
                            strict=False)
        with torch.no_grad():
            assert not torch.allclose(mha(x), layer(x))


@pytest.mark.parametrize("name", sorted(MODULES))
def test_decoder_layer_self_and_cross_attention(name):
    torch.manual_seed(1)
    ref = nn.TransformerDecoderLayer(E, H, dim_feedforward=16, dropout=0.0, batch_first=True).double()
    layer = nn.TransformerDecoderLayer(E, H, dim_feedforward=16, dropout=0.0, batch_first=True).double()
    layer.load_state_dict(ref.state_dict())
    for attr in ("self_attn", "multihead_attn"):
        new = MODULES[name](batch_first=True).double()
        if name in SOFTMAX:
            new.load_state_dict(getattr(ref, attr).state_dict())
        setattr(layer, attr, new)
    tgt, mem = _x(7, L=4), _x(8, L=6)
    tkpm = torch.zeros(3, 4, dtype=torch.bool)
    tkpm[0, 3] = True
    mkpm = torch.zeros(3, 6, dtype=torch.bool)
    mkpm[2, 4:] = True
    causal = nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64).isinf()
    kw = dict(tgt_mask=causal, tgt_is_causal=True, tgt_key_padding_mask=tkpm, memory_key_padding_mask=mkpm)
    out = layer(tgt, mem, **kw)
    if name in SOFTMAX:
        assert (out - ref(tgt, mem, **kw)).abs().max() < 1e-12
    out.square().mean().backward()
    assert all(torch.isfinite(p.grad).all() for p in layer.parameters() if p.grad is not None)


# --------------------------------------------------------------------------- masks
FUNCTIONALS = {
    "fenchel": lambda q, k, v, **kw: layers.fenchel_attention(q, k, v, **kw),
    "fenchel-approx": lambda q, k, v, **kw: layers.fenchel_attention(q, k, v, exact=False, **kw),
    "efa": lambda q, k, v, **kw: layers.efa_attention(q, k, v, **kw),
    **{k: (lambda q, k_, v, kind=k, **kw: layers.continuous_attention(q, k_, v, kind=kind, n_basis=8,
                                                                      grid_size=64, **kw)) for k in KINDS},
}


def _qkv(seed, shape=(2, 2), L=4, S=5, D=6, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*shape, n, D, generator=g, dtype=dtype) for n in (L, S, S))


@pytest.mark.parametrize("name", sorted(FUNCTIONALS))
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int64, torch.int32])
def test_integer_masks_are_refused(name, dtype):
    q, k, v = _qkv(0)
    with pytest.raises(ValueError, match="^attn_mask must be a bool or floating-point tensor"):
        FUNCTIONALS[name](q, k, v, attn_mask=torch.ones(4, 5, dtype=dtype))
    m = MODULES["fenchel-exact"](batch_first=True)
    x = torch.randn(2, 5, E)
    with pytest.raises(ValueError, match="^key_padding_mask must be a bool"):
        m(x, x, x, key_padding_mask=torch.zeros(2, 5, dtype=dtype))
    with pytest.raises(ValueError, match="^attn_mask must be a bool"):
        m(x, x, x, attn_mask=torch.zeros(5, 5, dtype=dtype))


@pytest.mark.parametrize("name", sorted(FUNCTIONALS))
@pytest.mark.parametrize("bad", ["nan", "inf"])
def test_float_masks_with_nan_or_plus_inf_are_refused(name, bad):
    """A float mask is added to the scores: -inf masks a key, +inf or nan has no meaning (SDPA returns nan)."""
    q, k, v = _qkv(0)
    mask = torch.zeros(4, 5, dtype=torch.float64)
    mask[1, 2] = float(bad)
    with pytest.raises(ValueError, match=f"^attn_mask must hold finite numbers or -inf .*got \\+?{bad}$"):
        FUNCTIONALS[name](q, k, v, attn_mask=mask)
    m = MODULES["fenchel-exact"](batch_first=True)
    x = torch.randn(2, 5, E)
    with pytest.raises(ValueError, match="^key_padding_mask must hold finite numbers or -inf"):
        m(x, x, x, key_padding_mask=torch.zeros(2, 5).index_fill_(1, torch.tensor([3]), float(bad)))


@pytest.mark.parametrize("name", sorted(FUNCTIONALS))
def test_bool_float_and_causal_masks_agree(name):
    q, k, v = _qkv(1, S=4)
    f = FUNCTIONALS[name]
    keep = torch.rand(4, 4, generator=torch.Generator().manual_seed(2)) > 0.4
    keep[:, 0] = True
    add = torch.zeros(4, 4, dtype=torch.float64).masked_fill(~keep, float("-inf"))
    assert (f(q, k, v, attn_mask=keep) - f(q, k, v, attn_mask=add)).abs().max() < 1e-12
    causal = torch.ones(4, 4, dtype=torch.bool).tril()
    assert (f(q, k, v, is_causal=True) - f(q, k, v, attn_mask=causal)).abs().max() < 1e-12
    with pytest.raises(ValueError, match="attn_mask must be None when is_causal=True"):
        f(q, k, v, attn_mask=causal, is_causal=True)


@pytest.mark.parametrize("name", sorted(FUNCTIONALS))
@pytest.mark.parametrize("shape", [(), (1,), (5,), (1, 1), (4, 1), (1, 5), (2, 1, 4, 1), (2, 4, 1)])
def test_masks_that_sdpa_broadcasts_are_taken(name, shape):
    """A 0-d, (S,), (L, 1) ... mask, which SDPA broadcasts to (..., L, S): the continuous and Fenchel layers
    crashed with torch's shape errors (IndexError, 'mat1 and mat2 shapes cannot be multiplied').  The result is
    that of the mask expanded to (L, S) by hand, except that for continuous attention a mask the same for every
    query is padding, as ~key_padding_mask[:, None, :] is (the keys it masks are not there); the softmax
    layers equal SDPA."""
    q, k, v = _qkv(3)
    m = torch.rand(shape, generator=torch.Generator().manual_seed(4)) > 0.3
    m.view(-1)[0] = True
    full = m.expand(*m.shape[:-2], 4, 5) if m.dim() >= 2 else m.expand(4, 5)
    got = FUNCTIONALS[name](q, k, v, attn_mask=m)
    if name in ("fenchel-approx", "efa"):
        ref = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=full)   # (SDPA refuses 0-d, (1,))
        assert (got - ref).abs().max() < 1e-12
    rows_alike = m.dim() < 2 or m.shape[-2] == 1
    if name in KINDS and rows_alike:
        pad = ~full[..., 0, :].expand(2, 2, 5)
        want = FUNCTIONALS[name](q, k, v, key_padding_mask=pad)
    else:
        want = FUNCTIONALS[name](q, k, v, attn_mask=full.contiguous())
    assert (got - want).abs().max() < 1e-12


@pytest.mark.parametrize("kind", KINDS)
def test_continuous_query_output_does_not_depend_on_the_other_queries(kind):
    """A per-query mask keeps the keys' positions: with a causal mask and fewer queries than keys the keys after
    the last query are masked for every query, and were read as padding and re-spaced, so that a query's output
    depended on how many queries were in the call (0.43 off between one call and two; SDPA: 2e-16)."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(6, n, generator=g, dtype=torch.float64) for n in (4, 4, 3))
    full = FUNCTIONALS[kind](q, k, v, is_causal=True)
    for n in (1, 2, 3):
        assert (FUNCTIONALS[kind](q[:n], k, v, is_causal=True) - full[:n]).abs().max() < 1e-12, n
        if n > 1:           # (one query's mask has one row, the same for every query: padding, as documented)
            assert (FUNCTIONALS[kind](q[:n], k, v, attn_mask=torch.ones(6, 6, dtype=torch.bool).tril()[:n])
                    - full[:n]).abs().max() < 1e-12, n


@pytest.mark.parametrize("kind", KINDS)
def test_continuous_padding_with_a_per_query_mask(kind):
    """key_padding_mask names padding alongside a causal mask (one merged mask cannot): the module and the
    function give the padded sequence's outputs those of the sequence without its padding."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 6, E, generator=g, dtype=torch.float64)
    kpm = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    causal = torch.ones(6, 6, dtype=torch.bool).triu(1)              # MHA's convention: True = not allowed
    m = layers.ContinuousMultiheadAttention(E, H, batch_first=True, kind=kind, n_basis=8, grid_size=64).double()
    out, _ = m(x, x, x, key_padding_mask=kpm, attn_mask=causal)
    short, _ = m(x[1:, :4], x[1:, :4], x[1:, :4], attn_mask=causal[:4, :4])
    assert (out[1, :4] - short[0]).abs().max() < 1e-12
    q, k, v = (torch.randn(2, 6, 4, generator=g, dtype=torch.float64) for _ in range(3))
    got = FUNCTIONALS[kind](q, k, v, is_causal=True, key_padding_mask=kpm)
    want = FUNCTIONALS[kind](q[1, :4], k[1, :4], v[1, :4], is_causal=True)
    assert (got[1, :4] - want).abs().max() < 1e-12
    with pytest.raises(ValueError, match=r"^key_padding_mask must broadcast to \(\.\.\., S\) = \(2, 6\)"):
        FUNCTIONALS[kind](q, k, v, key_padding_mask=torch.zeros(3, 6, dtype=torch.bool))


@pytest.mark.parametrize("name", sorted(FUNCTIONALS))
def test_fully_masked_rows_are_zero_like_sdpa(name):
    q, k, v = _qkv(3)
    q.requires_grad_()
    keep = torch.ones(4, 5, dtype=torch.bool)
    keep[2] = False
    out = FUNCTIONALS[name](q, k, v, attn_mask=keep)
    sdpa = nn.functional.scaled_dot_product_attention(q.detach(), k, v, attn_mask=keep)
    assert torch.equal(out[..., 2, :], torch.zeros_like(out[..., 2, :]))
    assert torch.equal(sdpa[..., 2, :], out[..., 2, :].detach())
    out.sum().backward()
    assert torch.isfinite(q.grad).all()
    # every key of every query padded: zeros, not an error
    none = torch.zeros(4, 5, dtype=torch.bool)
    assert torch.equal(FUNCTIONALS[name](q.detach(), k, v, attn_mask=none), torch.zeros(2, 2, 4, 6, dtype=q.dtype))


# --------------------------------------------------------------------------- dtypes, shapes, edges
@pytest.mark.parametrize("name", sorted(FUNCTIONALS))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_inputs_compute_in_float32(name, dtype):
    q, k, v = _qkv(4, dtype=torch.float32)
    ref = FUNCTIONALS[name](q, k, v)
    out = FUNCTIONALS[name](q.to(dtype), k.to(dtype), v.to(dtype))
    assert out.dtype == dtype
    tol = 2e-2 if dtype == torch.bfloat16 else 4e-3
    assert (out.float() - ref).abs().max() < tol * (1 + ref.abs().max())


@pytest.mark.parametrize("name", sorted(MODULES))
def test_half_precision_module(name):
    m = MODULES[name](batch_first=True).to(torch.bfloat16)
    x = torch.randn(2, 5, E, dtype=torch.bfloat16)
    out, w = m(x, x, x)
    assert out.dtype == torch.bfloat16 and torch.isfinite(out.float()).all()


@pytest.mark.parametrize("name", sorted(MODULES))
def test_empty_batch_and_length_one(name):
    m = MODULES[name](batch_first=True).double()
    x0 = torch.randn(0, 5, E, dtype=torch.float64)
    out, w = m(x0, x0, x0)
    assert out.shape == (0, 5, E) and w.shape == (0, 5, 5)
    x1 = _x(9, L=1)
    out, w = m(x1, x1, x1)
    assert out.shape == (3, 1, E) and torch.isfinite(out).all()
    if name.startswith(("fenchel-approx", "efa-standard")):
        assert torch.allclose(w, torch.ones_like(w))


def test_efa_standard_on_an_empty_batch():
    m = layers.EFAMultiheadAttention(E, H, batch_first=True, convention="standard")
    out, w = m(torch.randn(0, 4, E), torch.randn(0, 4, E), torch.randn(0, 4, E))
    assert out.shape == (0, 4, E)


@pytest.mark.parametrize("arg", ["ridge", "bandwidth"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 0.0, -1.0])
def test_ridge_and_bandwidth_refused_in_one_line(arg, bad):
    q, k, v = _qkv(5)
    with pytest.raises(ValueError, match=f"^{arg} must be a finite number > 0") as e:
        layers.continuous_attention(q, k, v, kind="kernel_softmax", **{arg: bad})
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match=f"^{arg} must be a finite number > 0"):
        layers.ContinuousMultiheadAttention(E, H, **{arg: bad})


def test_learned_alpha_is_floored_when_softplus_underflows():
    m = layers.FenchelMultiheadAttention(E, H, batch_first=True, alpha_mode="head")
    with torch.no_grad():
        m.alpha_raw.fill_(-1e4)                      # softplus(-1e4) = 0 in float32
    x = torch.randn(2, 5, E)
    assert float(m.alphas(x).detach().min()) > 0
    out, _ = m(x, x, x)
    assert torch.isfinite(out).all()


# --------------------------------------------------------------------------- exact mode: large masks and log u
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("big", [-1e9, "min"])
def test_exact_large_finite_mask_loses_no_precision(dtype, big):
    q, k, v = (x.to(dtype) for x in _qkv(6, shape=(2,), L=3, S=4))
    big = torch.finfo(dtype).min if big == "min" else big
    mask = torch.zeros(3, 4, dtype=dtype)
    mask[1] = big                                   # a whole row: softmax does not see a constant
    mask[2, 1:] = big                               # a partial row: only key 0 is left
    out = layers.fenchel_attention(q, k, v, attn_mask=mask)
    ref = layers.fenchel_attention(q, k, v)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert (out[:, :2] - ref[:, :2]).abs().max() < tol
    assert (out[:, 2] - v[:, 0]).abs().max() < tol


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exact_constant_shift_of_log_u_changes_nothing(dtype):
    q, k, v = (x.to(dtype) for x in _qkv(7, shape=(2,), L=3, S=4))
    lu = torch.randn(3, 4, generator=torch.Generator().manual_seed(8), dtype=dtype)
    ref = layers.fenchel_attention(q, k, v, log_u=lu)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    for c in (-1e3, 1e3, 30.0):
        assert (layers.fenchel_attention(q, k, v, log_u=lu + c) - ref).abs().max() < tol * (1 + abs(c))
    uniform = torch.full((3, 4), torch.finfo(dtype).min, dtype=dtype)
    assert (layers.fenchel_attention(q, k, v, log_u=uniform) - layers.fenchel_attention(q, k, v)).abs().max() < tol


# --------------------------------------------------------------------------- the former names
def test_deprecated_names_warn_and_work():
    x = torch.randn(2, 5, E)
    with pytest.warns(DeprecationWarning, match="FenchelMultiheadAttention"):
        m = layers.FenchelAttention(E, num_heads=2, alpha=0.5)
    assert m(x).shape == x.shape
    keep = torch.ones(5, 5, dtype=torch.bool).tril()          # the old convention: True = attend
    y, p = m(x, attn_mask=keep, return_weights=True)
    assert p.shape == (2, 2, 5, 5) and float(p.detach()[..., ~keep].abs().max()) == 0
    with pytest.warns(DeprecationWarning, match="ContinuousMultiheadAttention"):
        c = layers.SequenceContinuousAttention(E, kind="cts_softmax")
    assert c(x).shape == x.shape
    with pytest.warns(DeprecationWarning, match="EFAMultiheadAttention"):
        a = layers.EFAAttention(E, 2)
    assert a(x, torch.ones(2, 5, 5, dtype=torch.bool)).shape == x.shape
    q, k, v = _qkv(9)
    with pytest.warns(DeprecationWarning):
        old = layers.continuous_attention(q, k, v, "cts_softmax")
    assert torch.equal(old, layers.continuous_attention(q, k, v, kind="cts_softmax"))


# --------------------------------------------------------------------------- exact mode at extreme scales
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("s,alpha", [(100, 1.0), (1, 1e4), (100, 1e4), (10, 30.0)])
def test_exact_converges_at_extreme_scales(dtype, s, alpha):
    """Scores x 100 and alpha = 1e4: the solver converges (no RuntimeWarning) and float32 lands near the
    float64 answer (float32 solves such instances by continuation in float64)."""
    q, k, v = _qkv(10, L=4, S=5, D=6)
    q, k = q * s, k * s
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        out = layers.fenchel_attention(q.to(dtype), k.to(dtype), v.to(dtype), alpha=alpha)
        ref = layers.fenchel_attention(q, k, v, alpha=alpha)
    assert (out.double() - ref).abs().max() < (2e-2 if dtype == torch.float32 else 1e-8)


# --------------------------------------------------------------------------- what a new user tried (2026-12-07)
@pytest.mark.parametrize("name", sorted(MODULES))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_modules_under_autocast(name, dtype):
    """Under torch.autocast the projections give half-precision tensors; the attention computes in float32
    inside (the exact Fenchel solver's fused steps failed there) and the output is autocast's dtype, as MHA's."""
    m = MODULES[name](batch_first=True)
    x = torch.randn(2, 5, E)
    with torch.autocast("cpu", dtype=dtype):
        out, w = m(x, x, x)
        ref, _ = nn.MultiheadAttention(E, H, batch_first=True)(x, x, x)
    assert out.dtype == ref.dtype == dtype and torch.isfinite(out.float()).all() and torch.isfinite(w.float()).all()


@pytest.mark.parametrize("name", sorted(FUNCTIONALS))
def test_functionals_under_autocast_compute_in_float32(name):
    q, k, v = _qkv(4, dtype=torch.float32)
    ref = FUNCTIONALS[name](q, k, v)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = FUNCTIONALS[name](q, k, v)
    assert out.dtype == torch.float32
    assert (out - ref).abs().max() < 5e-2 * (1 + ref.abs().max())


@pytest.mark.parametrize("name", ["continuous-kernel", "continuous-cts", "fenchel-exact", "efa-standard"])
def test_state_dict_moves_to_and_from_mha_strictly(name):
    """The fixed Gaussian basis of the continuous layer is not in its state dict (it follows from n_basis):
    with strict=True a state dict moves either way; one of an earlier release, holding the basis, loads too,
    and one with another basis is refused naming n_basis."""
    mha = nn.MultiheadAttention(E, H, batch_first=True)
    m = MODULES[name](batch_first=True)
    m.load_state_dict(mha.state_dict())
    nn.MultiheadAttention(E, H, batch_first=True).load_state_dict(m.state_dict())
    assert set(m.state_dict()) == set(mha.state_dict())
    if name.startswith("continuous"):
        old = dict(m.state_dict(), **{"basis.mu": m.basis.mu.clone(), "basis.sigma": m.basis.sigma.clone()})
        m.load_state_dict(old)
        old["basis.mu"] = torch.zeros(4)
        with pytest.raises(RuntimeError, match="n_basis = 8"):
            m.load_state_dict(old)


def test_second_derivatives_are_right_or_refused():
    """kernel sparsemax's one-node moments recompute their map under create_graph=True, so second derivatives
    agree with finite differences (gradgradcheck) for every kind; the exact Fenchel form's implicit backward
    builds no graph and says so, instead of a second derivative that silently leaves its part out."""
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, n, 4, generator=g, dtype=torch.float64, requires_grad=True) for n in (3, 5, 5))
    for kind in KINDS:
        f = lambda q, k, v, kind=kind: layers.continuous_attention(q, k, v, kind=kind, n_basis=4, grid_size=32)  # noqa: E731
        assert torch.autograd.gradgradcheck(f, (q, k, v))
        # (gradgradcheck differentiates the graph-building backward against itself: that it gives the first
        # derivatives of the plain backward, which gradcheck holds to finite differences, is checked here)
        plain = torch.autograd.grad(f(q, k, v).square().sum(), (q, k, v))
        built = torch.autograd.grad(f(q, k, v).square().sum(), (q, k, v), create_graph=True)
        assert all(torch.allclose(a, b, rtol=1e-10, atol=1e-12) for a, b in zip(plain, built)), kind
    assert torch.autograd.gradgradcheck(lambda q, k, v: layers.fenchel_attention(q, k, v, exact=False), (q, k, v))
    with pytest.raises(RuntimeError, match="^fenchel_attention \\(exact=True\\) has first derivatives only"):
        torch.autograd.grad(layers.fenchel_attention(q, k, v).sum(), q, create_graph=True)
    torch.autograd.grad(layers.fenchel_attention(q, k, v).sum(), q)          # first order as before


def test_non_finite_inputs_one_policy_per_argument():
    """query/key/value with a NaN: NaN where it reaches, as in SDPA (the cts kinds named sigma2, which the user
    never gave); the exact Fenchel form refuses a non-finite query or key by name (its solver ran the whole
    Newton continuation on a NaN query); log_u holds finite numbers or -inf."""
    q, k, v = _qkv(6)
    q[0, 0, 1, 2] = float("nan")
    for name in sorted(FUNCTIONALS):
        if name == "fenchel":
            with pytest.raises(ValueError, match="^query must be finite for the exact form"):
                FUNCTIONALS[name](q, k, v)
            continue
        out = FUNCTIONALS[name](q, k, v)
        assert torch.isnan(out[0, 0, 1]).all(), name
        assert torch.isfinite(out[0, 1]).all() and torch.isfinite(out[0, 0, 0]).all(), name
    q, k, v = _qkv(6)
    for bad in ("nan", "inf"):
        lu = torch.zeros(5, dtype=torch.float64)
        lu[1] = float(bad)
        for exact in (True, False):
            with pytest.raises(ValueError, match=f"^log_u must hold finite numbers or -inf .*got \\+?{bad}$"):
                layers.fenchel_attention(q, k, v, log_u=lu, exact=exact)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_arguments_named_in_one_line(name):
    m = MODULES[name](batch_first=True)
    x = torch.randn(2, 5, E)
    for bad, msg in ((dict(query=x.tolist()), "^query must be a torch.Tensor; got list"),
                     (dict(value=x.numpy()), "^value must be a torch.Tensor; got ndarray"),
                     (dict(key_padding_mask=[False] * 5), "^key_padding_mask must be a bool or floating-point tensor"),
                     (dict(key_padding_mask=torch.zeros(2, 5, dtype=torch.bool, device="meta")),
                      "^key_padding_mask must be on the device of query \\(cpu\\); got meta"),
                     (dict(attn_mask=torch.zeros(5, 5, device="meta")), "^attn_mask must be on the device of query"),
                     (dict(is_causal=1), "^is_causal must be True or False; got 1"),
                     (dict(need_weights="no"), "^need_weights must be True or False")):
        args = dict(query=x, key=x, value=x)
        args.update(bad)
        with pytest.raises(ValueError, match=msg):
            m(**args)
    for d in ("x", None, "0.1", 1.5, -0.1, True):
        with pytest.raises(ValueError, match="^dropout must be a number in \\[0, 1\\]"):
            MODULES[name](dropout=d)
    assert m(x, x, x, is_causal=None)[0].shape == x.shape           # (torch's blocks may pass None)
    assert MODULES[name](dropout=1.0).dropout == 1.0                # as nn.Dropout and MHA


@pytest.mark.parametrize("name", sorted(FUNCTIONALS))
def test_functionals_refuse_mixed_dtypes_and_devices(name):
    """As scaled_dot_product_attention: one dtype for query, key and value (they were promoted, and the output
    came back in a dtype that was none of theirs); masks and tensors on query's device."""
    q, k, v = _qkv(7, dtype=torch.float32)
    with pytest.raises(ValueError, match="^query, key and value must have the same dtype"):
        FUNCTIONALS[name](q.half(), k.half(), v.bfloat16())
    with pytest.raises(ValueError, match="^query, key and value must have the same dtype"):
        FUNCTIONALS[name](q, k.double(), v.double())
    with pytest.raises(ValueError, match="^attn_mask must be on the device of query"):
        FUNCTIONALS[name](q, k, v, attn_mask=torch.ones(4, 5, dtype=torch.bool, device="meta"))
    with pytest.raises(ValueError, match="^key must be on the device of query"):
        FUNCTIONALS[name](q, k.to("meta"), v)


def test_half_precision_fenchel_module_keeps_alpha_in_float32():
    """A fixed alpha is held as given and used in the attention's float32 (in half it was rounded, and 1e5
    overflowed to inf and was refused)."""
    x = torch.randn(2, 5, E, dtype=torch.float16)
    m = layers.FenchelMultiheadAttention(E, H, alpha=0.1).half()
    assert m.alphas(x).dtype == torch.float32 and float(m.alphas(x)) == pytest.approx(0.1, rel=1e-7)
    out, _ = layers.FenchelMultiheadAttention(E, H, alpha=1e5, dtype=torch.float16)(x, x, x)
    assert out.dtype == torch.float16 and torch.isfinite(out.float()).all()


@pytest.mark.parametrize("convention", ["standard", "paper"])
def test_layer_put_into_a_built_encoder_says_what_to_do(convention):
    """Swapped into an nn.TransformerEncoder built with nested tensors, eval mode with a padding mask: torch reads
    self_attn.out_proj.weight before calling the layer (the paper convention's out_proj was None: an
    AttributeError), then hands it nested tensors; the layer says how to build the encoder."""
    import warnings

    from attnlab.layers import EFAMultiheadAttention

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1)
    enc.layers[0].self_attn = EFAMultiheadAttention(8, 2, batch_first=True, convention=convention)
    enc.eval()
    kpm = torch.zeros(2, 5, dtype=torch.bool)
    kpm[1, 3:] = True
    with torch.no_grad(), warnings.catch_warnings(), pytest.raises(ValueError, match="enable_nested_tensor=False"):
        warnings.simplefilter("ignore", UserWarning)
        enc(torch.randn(2, 5, 8), src_key_padding_mask=kpm)


def test_efa_paper_convention_takes_any_number_of_heads():
    """Eq. (1)'s heads are full width (W^Q_h, W^K_h, W^V_h each E x E), so E need not be a multiple of H (the
    constructor asked E % H == 0, as MHA's split heads do); the output is Eq. (1) transcribed, heads summed."""
    E_, H_ = 4, 3
    torch.manual_seed(0)
    attn = layers.EFAMultiheadAttention(E_, H_, batch_first=True, convention="paper").double()
    z = torch.randn(2, 5, E_, dtype=torch.float64)
    out, _ = attn(z, z, z)
    ref = torch.zeros_like(z)
    for h in range(H_):
        sl = slice(h * E_, (h + 1) * E_)
        q = z @ attn.k_proj_weight[sl].T            # output i scores context j by <W^K z_i, W^Q z_j>
        k = z @ attn.q_proj_weight[sl].T
        v = z @ attn.v_proj_weight[sl].T
        ref = ref + torch.softmax(q @ k.transpose(-1, -2) / E_, -1) @ v
    assert float((out - ref).abs().max()) < 1e-12
    with pytest.raises(ValueError, match="embed_dim must be divisible by num_heads"):
        layers.EFAMultiheadAttention(E_, H_)


def test_torch_tooling_edges():
    """A first call under torch.inference_mode() cached inference tensors in the continuous layers' tables, and
    every later call with gradients at that length failed; a Fenchel module could not be built under `with
    torch.device("meta")` (it read a meta tensor's value) and the Fenchel and continuous functions failed on meta
    inputs (shape inference gives the shapes now); efa_attention compiles as one graph (a `max(..., default=)`
    broke every compiled frame)."""
    torch.manual_seed(0)
    for kind in ("cts_softmax", "kernel_sparsemax"):
        attn = layers.ContinuousMultiheadAttention(16, 2, batch_first=True, kind=kind)
        x = torch.randn(3, 11, 16)
        with torch.inference_mode():
            attn.eval()
            attn(x, x, x)
        attn.train()
        attn(x, x, x)[0].sum().backward()
        assert attn.in_proj_weight.grad is not None
    q, k = torch.randn(2, 3, 5, device="meta"), torch.randn(2, 4, 5, device="meta")
    assert layers.fenchel_attention(q, k, k).shape == (2, 3, 5)
    assert layers.fenchel_attention(q, k, k, exact=False, return_weights=True)[1].shape == (2, 3, 4)
    assert layers.continuous_attention(q, k, k).shape == (2, 3, 5)
    for M in (layers.FenchelMultiheadAttention, layers.ContinuousMultiheadAttention, layers.EFAMultiheadAttention):
        with torch.device("meta"):
            m = M(8, 2, batch_first=True)
            x = torch.randn(2, 3, 8)
            assert m(x, x, x)[0].shape == (2, 3, 8)
        m = m.to_empty(device="cpu")
    qc = torch.randn(2, 3, 5)
    f = torch.compile(layers.efa_attention, fullgraph=True, backend="eager")
    assert torch.equal(f(qc, qc, qc), layers.efa_attention(qc, qc, qc))


@pytest.mark.parametrize("shape", [(), (1,), (4, 1), (2, 1, 4, 1)])
def test_fenchel_log_u_constant_over_the_keys_changes_nothing(shape):
    """A log_u of size 1 on the key axis (it broadcasts to (..., L, S) as the docs ask) crashed the exact form with
    torch's shape errors; constant over the keys, it changes nothing."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, n, 6, generator=g, dtype=torch.float64) for n in (4, 5, 5))
    lu = torch.randn(shape, generator=g, dtype=torch.float64)
    for exact in (True, False):
        assert (layers.fenchel_attention(q, k, v, alpha=2.0, log_u=lu, exact=exact)
                - layers.fenchel_attention(q, k, v, alpha=2.0, exact=exact)).abs().max() < 1e-12


def test_fenchel_and_efa_edges_found_by_review():
    """exact=False refused a NaN key (documented to let NaN through as softmax attention does); scale = 1e200 in
    float64 met an OverflowError in the continuation; return_weights="no" returned a tuple."""
    q, k, v = _qkv(5, dtype=torch.float64)
    kn = k.clone()
    kn[0, 0, 2, 0] = float("nan")
    assert torch.isnan(layers.fenchel_attention(q, kn, v, exact=False)[0, 0]).all()
    with pytest.raises(ValueError, match=r"^scale \* key must have squared norms within float64's range"):
        layers.fenchel_attention(q, k, v, scale=1e200)
    for f in (layers.fenchel_attention, layers.efa_attention):
        with pytest.raises(ValueError, match="^return_weights must be True or False"):
            f(q, k, v, return_weights="no")


def test_efa_attention_computes_in_float32_under_autocast():
    """Under torch.autocast efa_attention's products ran in bfloat16 (1.1e-2 off float64 for float32 inputs), where
    the docs promise float32 inside and fenchel_attention's softmax form computes in float32."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 16, 32, generator=g, dtype=torch.float64) for _ in range(3))
    ref = layers.efa_attention(q, k, v)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = layers.efa_attention(q.float(), k.float(), v.float())
        approx = layers.fenchel_attention(q.float(), k.float(), v.float(), exact=False)
    assert out.dtype == torch.float32 and float((out.double() - ref).abs().max()) < 1e-5
    assert float((out - approx).abs().max()) < 1e-5


@pytest.mark.parametrize("bad", [2.0, "kernel_sparsemax", 3])
def test_a_paper_parameter_given_as_the_mask_says_they_are_keyword_only(bad):
    """fenchel_attention(q, k, v, 2.0) meant alpha = 2: the refusal names attn_mask and says that the paper's
    parameters are keyword-only (a type test made an AND kept the first words and lost that hint)."""
    q, k, v = _qkv(0)
    for f in (layers.fenchel_attention, layers.efa_attention):
        with pytest.raises(ValueError, match=r"^attn_mask must be a bool or floating-point tensor; .*keyword-only"):
            f(q, k, v, bad)


def test_a_large_finite_negative_float_mask_excludes_keys_in_every_family():
    """-1e9 and finfo.min masks remove keys in SDPA/MHA; the continuous kinds and EFA's linear attention took
    only -inf and added the rest, so padding contents leaked into the output and a causal mask leaked future
    tokens (outside review: up to 17.7 off)."""
    import torch
    from torch import nn

    from attnlab.layers import ContinuousMultiheadAttention, EFAMultiheadAttention

    torch.manual_seed(0)
    L = 6
    x = torch.randn(2, L, 8)
    x2 = x.clone()
    x2[:, -1] += 5                                   # only the last token changes
    mods = [nn.MultiheadAttention(8, 2, batch_first=True),
            ContinuousMultiheadAttention(8, 2, batch_first=True, kind="cts_softmax"),
            ContinuousMultiheadAttention(8, 2, batch_first=True),
            EFAMultiheadAttention(8, 2, batch_first=True, attention="linear")]
    kb = torch.zeros(2, L, dtype=torch.bool)
    kb[0, 4:] = True
    with torch.no_grad():
        for val in (-1e9, torch.finfo(torch.float32).min):
            causal = torch.full((L, L), val).triu(1)
            for m in mods:
                m.eval()
                moved = (m(x, x, x, attn_mask=causal)[0] - m(x2, x2, x2, attn_mask=causal)[0])[:, :-1].abs().max()
                assert float(moved) == 0.0, (type(m).__name__, val)
                kf = torch.zeros(2, L).masked_fill(kb, val)
                gap = (m(x, x, x, key_padding_mask=kb)[0] - m(x, x, x, key_padding_mask=kf)[0]).abs().max()
                assert float(gap) <= 1e-6, (type(m).__name__, val, float(gap))     # (MHA's float path rounds)


@pytest.mark.parametrize("mode", ["head", "query"])
def test_learned_alphas_are_reset_after_a_meta_device_build(mode):
    """to_empty + _reset_parameters (torch's recipe for a module built on the meta device) left the learned
    alphas holding uninitialised memory (outside review)."""
    import torch

    from attnlab.layers import FenchelMultiheadAttention

    with torch.device("meta"):
        m = FenchelMultiheadAttention(8, 2, alpha_mode=mode, alpha=1.5)
    m.to_empty(device="cpu")
    m._reset_parameters()
    fresh = FenchelMultiheadAttention(8, 2, alpha_mode=mode, alpha=1.5)
    for k, v in m.state_dict().items():
        if "alpha" in k:
            assert torch.equal(v, fresh.state_dict()[k]), k


def test_nested_tensor_refusal_says_how_to_switch_it_off():
    import torch
    from torch import nn

    from attnlab.layers import FenchelMultiheadAttention

    t = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True)
    t.encoder.layers[0].self_attn = FenchelMultiheadAttention(8, 2, batch_first=True)
    src, tgt = torch.randn(3, 6, 8), torch.randn(3, 5, 8)
    kpm = torch.zeros(3, 6, dtype=torch.bool)
    kpm[0, 4:] = True
    t.eval()
    with torch.no_grad():
        with pytest.raises(ValueError, match="encoder.use_nested_tensor = False"):
            t(src, tgt, src_key_padding_mask=kpm)
        t.encoder.use_nested_tensor = False             # the remedy it names works
        t(src, tgt, src_key_padding_mask=kpm)
