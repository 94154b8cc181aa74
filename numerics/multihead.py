"""What the attention layers of attnlab share with torch's own: the calling conventions of
``torch.nn.functional.scaled_dot_product_attention`` (the functional forms) and of
``torch.nn.MultiheadAttention`` (the modules), their masks, and MHA's parameter layout.

Two mask conventions, as in torch itself:

- the functional forms take ``attn_mask`` as ``scaled_dot_product_attention`` does: a bool mask is
  True where a query MAY attend to a key; a floating mask is added to the scores (``-inf``, or an entry at or below MASK_EXCLUDES = -1e4 after the
  row's shift, excludes: softmax gives it no weight, and the layers that do not softmax read it so);
- the modules take ``key_padding_mask`` and ``attn_mask`` as ``nn.MultiheadAttention`` does: a bool
  mask is True where attention is NOT allowed; a floating mask is added.

Any other dtype (uint8, int64, ...) is refused with a ValueError naming the argument: torch's older
releases read uint8 masks as bool, and adding an integer mask to the scores is almost never meant.

The module base :class:`MultiheadAttentionBase` holds MHA's parameters under MHA's names
(``in_proj_weight``/``in_proj_bias``, or ``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` when
``kdim``/``vdim`` differ from ``embed_dim``, and ``out_proj``), so that a state dict moves between an
``nn.MultiheadAttention`` and an attnlab layer in either direction.  Subclasses supply the attention
itself (``_attend``) on per-head tensors (N, H, L, Dh).
"""
from __future__ import annotations

import math
import numbers
import warnings

import torch
from torch import nn
from torch.nn.modules.linear import NonDynamicallyQuantizableLinear

HALF = (torch.float16, torch.bfloat16)


# --------------------------------------------------------------------------- argument checks
def check_mask(mask, name: str, device=None):
    """mask unchanged if None, bool or floating (and on `device` when given); else a one-line ValueError
    naming `name`."""
    if mask is None:
        return None
    if isinstance(mask, str) or isinstance(mask, numbers.Number):
        raise ValueError(f"{name} must be a bool or floating-point tensor; got {type(mask).__name__} {mask!r} "
                         f"(the paper's parameters, e.g. alpha, log_u, kind, are keyword-only)")
    if not torch.is_tensor(mask):
        raise ValueError(f"{name} must be a bool or floating-point tensor; got {type(mask).__name__}")
    if mask.dtype != torch.bool and not mask.dtype.is_floating_point:
        raise ValueError(f"{name} must be a bool or floating-point tensor; got dtype {mask.dtype} "
                         f"(convert it with .bool() or .float(): integer masks are refused, not added)")
    if device is not None:
        check_device(mask, name, device)
    if mask.dtype.is_floating_point and bool((torch.isnan(mask) | torch.isposinf(mask)).any()):
        raise ValueError(f"{name} must hold finite numbers or -inf (a float mask is added to the scores); "
                         f"got {'nan' if bool(torch.isnan(mask).any()) else '+inf'}")
    return mask


def check_positive(value, name: str, what: str = "") -> float:
    """float(value) if finite and > 0; else a one-line ValueError naming `name` (a string or a bool too: float("2")
    read a string, True read as 1)."""
    try:
        v = None if isinstance(value, (str, bytes, bool)) else float(value)
    except (TypeError, ValueError, OverflowError):        # (OverflowError: an int beyond float64)
        v = None
    if v is None or not (math.isfinite(v) and v > 0):
        text = repr(value)
        raise ValueError(f"{name} must be a finite number > 0{what}; got "
                         f"{text if len(text) <= 40 else text[:20] + '...(' + str(len(text)) + ' characters)'}")
    return v


def check_scale(scale) -> float:
    """float(scale) if a finite number (as scaled_dot_product_attention's scale); else a ValueError."""
    if isinstance(scale, (str, bytes, bool)):  # float("0.5") read a string; True read as 1 (SDPA refuses both)
        raise ValueError(f"scale must be a finite number; got {scale!r}")
    if torch.is_tensor(scale) and scale.requires_grad:
        # float() cut it from the graph: a learned scale got no gradient, with only torch's generic warning
        raise ValueError("scale must be a number, not a tensor that requires grad (it would get no gradient: "
                         "scale the query instead)")
    try:
        v = float(scale)
    except (TypeError, ValueError):
        raise ValueError(f"scale must be a finite number; got {scale!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"scale must be a finite number; got {scale!r}")
    return v


def check_dropout(p, name: str = "dropout_p") -> float:
    if (torch.is_tensor(p) or isinstance(p, bool) or not isinstance(p, numbers.Real)
            or not (0.0 <= float(p) <= 1.0)):       # (a string "0.1" was read as 0.1, "x" named no argument)
        raise ValueError(f"{name} must be a number in [0, 1]; got {p!r}")
    return float(p)


def check_flag(value, name: str) -> bool:
    """value if True or False; else a one-line ValueError naming `name` (is_causal="no" was truthy)."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False; got {value!r}")
    return value


def check_device(x, name: str, device) -> None:
    """ValueError naming `name` unless the tensor x is on `device` (torch's error named neither)."""
    if x is not None and x.device != device:
        raise ValueError(f"{name} must be on the device of query ({device}); got {x.device}")


def broadcast_shapes(*shapes) -> torch.Size:
    """torch.broadcast_shapes on shapes (tuples of ints) in plain Python (torch's builds tensors; this
    runs on every call of a layer).  RuntimeError where they do not broadcast, as torch's."""
    n = max([len(s) for s in shapes] + [0])     # (max(..., default=) is a graph break in torch.compile)
    out = [1] * n
    for s in shapes:
        for i, d in enumerate(s, n - len(s)):
            if d != 1:
                if out[i] != 1 and out[i] != d:
                    raise RuntimeError(f"shapes {shapes} do not broadcast")
                out[i] = d
    return torch.Size(out)


def check_qkv(query, key, value):
    for name, x in (("query", query), ("key", key), ("value", value)):
        if not torch.is_tensor(x) or not x.dtype.is_floating_point:
            raise ValueError(f"{name} must be a floating-point tensor; got "
                             f"{x.dtype if torch.is_tensor(x) else type(x).__name__}")
        if x.dim() < 2:
            raise ValueError(f"{name} must have shape (..., length, features); got {tuple(x.shape)}")
    if not query.dtype == key.dtype == value.dtype:      # (as scaled_dot_product_attention; promoting returned
        raise ValueError(f"query, key and value must have the same dtype; got {query.dtype}, {key.dtype} and "
                         f"{value.dtype}")                # a dtype that was none of theirs)
    check_device(key, "key", query.device)
    check_device(value, "value", query.device)
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"query and key must share the last dimension E; got {query.shape[-1]} and {key.shape[-1]}")
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(f"key and value must have the same length S; got {key.shape[-2]} and {value.shape[-2]}")
    if query.shape[-1] == 0:
        raise ValueError("query and key must have at least one feature (E >= 1); got E = 0")
    try:
        batch = broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except RuntimeError:
        raise ValueError(f"query, key and value must have broadcastable leading (batch, head) dimensions; got "
                         f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}") from None
    return batch


def empty_attention(query, key, value, dtype, batch, extra=()):
    """The answer of a functional form where there is nothing to attend or nothing asks: L = 0 (no query),
    S = 0 (no key: output 0, as scaled_dot_product_attention gives) or a batch dimension 0 -- zeros of
    shape (*batch, L, Ev), and for each `extra` last dimension a zero tensor (*batch, L, that).  The
    output stays attached to the inputs' graph (zero gradients)."""
    L, Ev = query.shape[-2], value.shape[-1]
    out = torch.zeros(*batch, L, Ev, dtype=dtype, device=query.device)
    if any(x.requires_grad for x in (query, key, value)):
        out = out + (query.sum() + key.sum() + value.sum()).mul(0).nan_to_num(0.0).to(dtype)
    return (out,) + tuple(torch.zeros(*batch, L, n, dtype=dtype, device=query.device) for n in extra)


def compute_dtype(*xs):
    """(the dtype to compute in, the dtype to return): float16/bfloat16 compute in float32."""
    dt = xs[0].dtype
    for x in xs[1:]:
        dt = torch.promote_types(dt, x.dtype)
    return (torch.float32 if dt in HALF else dt), dt


def sdpa_mask(attn_mask, is_causal: bool, L: int, S: int, device, name: str = "attn_mask", batch=None):
    """The functional forms' mask: attn_mask (SDPA convention) or the causal mask of is_causal (bool,
    True = may attend, top-left aligned as in scaled_dot_product_attention); None for neither."""
    attn_mask = check_mask(attn_mask, name, device)
    check_flag(is_causal, "is_causal")          # is_causal="no" was truthy: a causal mask nobody asked for
    if attn_mask is not None:
        try:
            shape = broadcast_shapes(tuple(attn_mask.shape), (L, S))
            if batch is not None and broadcast_shapes(shape[:-2], tuple(batch)) != tuple(batch):
                raise RuntimeError
        except RuntimeError:
            raise ValueError(f"{name} must broadcast to (..., L, S) = ({', '.join(map(str, tuple(batch or ())))}"
                             f"{', ' if batch else ''}{L}, {S}); got shape {tuple(attn_mask.shape)}") from None
        attn_mask = with_key_dim(attn_mask, S)
    if is_causal:
        if attn_mask is not None:
            raise ValueError(f"{name} must be None when is_causal=True (as in scaled_dot_product_attention)")
        return torch.ones(L, S, dtype=torch.bool, device=device).tril()
    return attn_mask


def with_key_dim(x, S: int):
    """A 0-d, (S,), (L, 1) ... tensor that broadcasts to (..., L, S) as (..., L or 1, S): the key dimension there
    (the layers index it; a (5, 1) mask crashed them with torch's shape error), and one the same for every
    query keeps its query dimension 1 (continuous attention reads such a mask as padding).  A view."""
    if x.dim() >= 2 and x.shape[-1] == S:
        return x
    x = x.reshape((1,) * max(0, 2 - x.dim()) + tuple(x.shape))
    return x.expand(*x.shape[:-1], S)


def additive_mask(mask, dtype, shift: bool = True):
    """An SDPA-convention mask as a float mask to add to the scores (bool False -> -inf), or None.  A
    floating mask is shifted by its largest finite entry per row (softmax does not see the shift; a
    mask of -1e9 everywhere would otherwise swallow the scores it is added to); shift=False keeps its
    entries as given (the kernel families see a constant added to a row)."""
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask, float("-inf"))
    return shift_rows(mask.to(dtype)) if shift else mask.to(dtype)


#: a float mask entry at or below this (after additive_mask's shift by the row's largest finite entry) gives a key
#: zero weight in softmax attention in every float dtype (exp(-1e4) underflows to 0), so the common -1e9 and
#: finfo.min masks exclude keys in SDPA; the layers that do not softmax over the keys (continuous attention's
#: value fit, EFA's linear attention) read such an entry as excluding the key too (they took only -inf, and a
#: -1e9 causal mask leaked future tokens)
MASK_EXCLUDES = -1e4


def excluded(add):
    """Where the additive mask `add` (additive_mask's) excludes a key: -inf, or at or below MASK_EXCLUDES."""
    return torch.isneginf(add) | (add <= MASK_EXCLUDES)


def shift_rows(x):
    """x - (the largest finite entry of each last-dim row, 0 where none): exact for that entry."""
    fin = torch.isfinite(x)
    top = torch.where(fin, x, torch.full_like(x, float("-inf"))).amax(-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top)).detach()
    if not bool((top != 0).any()):
        return x
    return x - top


def _autocast(x) -> bool:
    """Whether autocast is on for x's device (then the projections cast the inputs themselves)."""
    if x.device.type == "meta":                 # (no autocast there: torch's check raised "unknown device type")
        return False
    try:
        return bool(torch.is_autocast_enabled(x.device.type))
    except TypeError:                           # torch < 2.4
        return bool(torch.is_autocast_enabled() or torch.is_autocast_cpu_enabled())


def causal_bool(L: int, S: int, device):
    """nn.MultiheadAttention's convention: True above the diagonal (not allowed)."""
    return torch.ones(L, S, dtype=torch.bool, device=device).triu(1)


# --------------------------------------------------------------------------- the module base
class MultiheadAttentionBase(nn.Module):
    """nn.MultiheadAttention's constructor, parameters and forward convention, with the attention
    itself left to the subclass (``_attend``).  Not used directly: see the attnlab layers."""

    # The fused "fast path" of nn.TransformerEncoderLayer / nn.TransformerEncoder (eval mode, no grad)
    # skips self_attn.forward when self_attn looks like MHA and recomputes *softmax* attention from
    # in_proj_weight.  It checks `_qkv_same_embed_dim` among its conditions: these layers always say
    # False, so torch always calls their forward (their attention is not softmax attention).
    _qkv_same_embed_dim = False
    # whether the heads split embed_dim (head_dim = E / H, as in MHA); a subclass whose heads are full width
    # (EFA's paper convention) says False before calling __init__, which then does not ask E % H == 0
    _heads_split_embed = True

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None, dtype=None):
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        for nm, v in (("embed_dim", embed_dim), ("num_heads", num_heads), ("kdim", kdim), ("vdim", vdim)):
            if nm in ("kdim", "vdim") and v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:     # vdim=3.5 was read as 3
                raise ValueError(f"{nm} must be an integer >= 1; got {v!r}")
        if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise ValueError(f"dtype must be a floating-point torch dtype; got {dtype!r}")
        if self._heads_split_embed and embed_dim % num_heads:
            raise ValueError(f"embed_dim must be divisible by num_heads; got {embed_dim} and {num_heads}")
        if add_bias_kv or add_zero_attn:
            raise ValueError("add_bias_kv and add_zero_attn are not supported by the attnlab layers (they add "
                             "keys that have no position, which the continuous layers need)")
        check_dropout(dropout, "dropout")       # (as nn.Dropout: p = 1 zeroes every weight)
        self.embed_dim = int(embed_dim)
        self.kdim = int(kdim) if kdim is not None else self.embed_dim
        self.vdim = int(vdim) if vdim is not None else self.embed_dim
        self.num_heads = int(num_heads)
        self.head_dim = self.embed_dim // self.num_heads
        self.dropout = float(dropout)
        self.batch_first = bool(batch_first)
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False
        E = self.embed_dim
        self._packed = self.kdim == E and self.vdim == E
        if self._packed:
            self.in_proj_weight = nn.Parameter(torch.empty((3 * E, E), **fk))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = nn.Parameter(torch.empty((E, E), **fk))
            self.k_proj_weight = nn.Parameter(torch.empty((E, self.kdim), **fk))
            self.v_proj_weight = nn.Parameter(torch.empty((E, self.vdim), **fk))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = nn.Parameter(torch.empty(3 * E, **fk))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(E, E, bias=bias, **fk)
        self._reset_parameters()

    def _reset_parameters(self):
        # as nn.MultiheadAttention._reset_parameters
        if self._packed:
            nn.init.xavier_uniform_(self.in_proj_weight)
        else:
            nn.init.xavier_uniform_(self.q_proj_weight)
            nn.init.xavier_uniform_(self.k_proj_weight)
            nn.init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            nn.init.constant_(self.in_proj_bias, 0.0)
            nn.init.constant_(self.out_proj.bias, 0.0)

    def _project(self, x, i: int):
        E = self.embed_dim
        if self._packed:
            w = self.in_proj_weight[i * E:(i + 1) * E]
        else:
            w = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)[i]
        b = None if self.in_proj_bias is None else self.in_proj_bias[i * E:(i + 1) * E]
        return nn.functional.linear(x, w, b)

    def _heads(self, x):
        N, L, _ = x.shape
        return x.view(N, L, self.num_heads, self.head_dim).transpose(1, 2)

    def _merged_mask(self, key_padding_mask, attn_mask, is_causal, N, L, S, device, dtype):
        """MHA's key_padding_mask (N, S) and attn_mask (L, S) / (N*H, L, S) (True = not allowed, floats
        added) as ONE mask in the functional (SDPA) convention, broadcastable to (N, H, L, S)."""
        key_padding_mask = check_mask(key_padding_mask, "key_padding_mask")
        attn_mask = check_mask(attn_mask, "attn_mask")
        if attn_mask is None and is_causal:
            attn_mask = causal_bool(L, S, device)       # is_causal without a mask: build it
        if key_padding_mask is not None and tuple(key_padding_mask.shape) != (N, S):
            raise ValueError(f"key_padding_mask must have shape (N, S) = ({N}, {S}); got "
                             f"{tuple(key_padding_mask.shape)}")
        masks = []
        if key_padding_mask is not None:
            masks.append(key_padding_mask.view(N, 1, 1, S))
        if attn_mask is not None:
            if attn_mask.dim() == 2 and tuple(attn_mask.shape) == (L, S):
                masks.append(attn_mask)
            elif attn_mask.dim() == 3 and tuple(attn_mask.shape) == (N * self.num_heads, L, S):
                masks.append(attn_mask.view(N, self.num_heads, L, S))
            else:
                raise ValueError(f"attn_mask must have shape (L, S) = ({L}, {S}) or (N * num_heads, L, S) = "
                                 f"({N * self.num_heads}, {L}, {S}); got {tuple(attn_mask.shape)}")
        if not masks:
            return None
        if all(m.dtype == torch.bool for m in masks):
            keep = ~masks[0]
            for m in masks[1:]:
                keep = keep & ~m
            return keep
        out = None
        for m in masks:                                 # (MHA's bool True = not allowed: SDPA's False)
            add = additive_mask(~m if m.dtype == torch.bool else m, dtype, shift=self._shift_float_masks)
            out = add if out is None else out + add
        return out

    #: whether _attend takes the key_padding_mask (N, S) as ``padding=`` besides the merged mask
    _takes_padding = False

    #: whether the attention ignores a constant added to a row of scores (softmax does), so that a float mask
    #: may be shifted by its largest finite entry per row before the masks are added (digits kept)
    _shift_float_masks = True

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False, **kwargs):
        r"""Attention of `query` to `key`/`value`, as ``nn.MultiheadAttention.forward``.

        Args:
            query: (L, E) unbatched, (N, L, E) with ``batch_first=True``, else (L, N, E).
            key: (S, kdim), (N, S, kdim) or (S, N, kdim), as query.
            value: (S, vdim), (N, S, vdim) or (S, N, vdim), as query.
            key_padding_mask: (N, S) or (S,) unbatched; bool True marks a key to ignore (padding),
                a float mask is added to the scores.
            need_weights: return the attention weights as the second output (else None).
            attn_mask: (L, S) or (N * num_heads, L, S); bool True = not allowed, float added.
            average_attn_weights: average the returned weights over the heads (else per head).
            is_causal: a hint that attn_mask is the causal mask (as in torch); with no attn_mask
                the causal mask is built (torch would raise).
            **kwargs: the layer's keyword-only, paper-specific inputs (see the layer).

        Returns:
            ``(output, weights)``: output (L, E), (N, L, E) or (L, N, E) like query; weights (N, L, S)
            averaged over heads, (N, num_heads, L, S) with ``average_attn_weights=False`` (without the
            N for unbatched input), or None when ``need_weights=False``.
        """
        for nm, x in (("query", query), ("key", key), ("value", value)):
            if not torch.is_tensor(x):          # (a list or an array met an AttributeError below)
                raise ValueError(f"{nm} must be a torch.Tensor; got {type(x).__name__}")
        key_padding_mask = check_mask(key_padding_mask, "key_padding_mask", query.device)
        attn_mask = check_mask(attn_mask, "attn_mask", query.device)
        check_device(key, "key", query.device)
        check_device(value, "value", query.device)
        is_causal = False if is_causal is None else is_causal     # (torch's own blocks may pass None)
        for nm, flag in (("need_weights", need_weights), ("average_attn_weights", average_attn_weights),
                         ("is_causal", is_causal)):
            check_flag(flag, nm)
        if query.is_nested or key.is_nested or value.is_nested:
            raise ValueError("query, key, value must not be nested tensors; set encoder.use_nested_tensor = False "
                             "on the nn.TransformerEncoder that holds this layer (nn.Transformer: "
                             "model.encoder.use_nested_tensor = False), or build it with enable_nested_tensor=False "
                             "or after putting the attnlab layer in")
        unbatched = query.dim() == 2
        if query.dim() not in (2, 3) or key.dim() != query.dim() or value.dim() != query.dim():
            raise ValueError(f"query, key, value must all be 3-D (batched) or 2-D (unbatched); got shapes "
                             f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}")
        if unbatched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None and key_padding_mask.dim() == 1:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        pdt = self.out_proj.weight.dtype if getattr(self.out_proj, "weight", None) is not None else \
            self.v_proj_weight.dtype
        for nm, x, d in (("query", query, self.embed_dim), ("key", key, self.kdim), ("value", value, self.vdim)):
            if x.shape[-1] != d:
                raise ValueError(f"{nm} must have {d} features (the last dimension); got {tuple(x.shape)}")
            if x.dtype != pdt and not _autocast(x):   # torch's matmul error named neither the tensor nor the remedy
                raise ValueError(f"{nm} must have the layer's dtype {pdt}; got {x.dtype} (convert the input, or "
                                 f"the layer with .to({x.dtype}) where that is a floating-point dtype)")
        N, L, _ = query.shape
        S = key.shape[1]
        if key.shape[:2] != value.shape[:2] or key.shape[0] != N:
            raise ValueError(f"key and value must have the same batch size and length as each other and the "
                             f"same batch size as query; got {tuple(query.shape)}, {tuple(key.shape)}, "
                             f"{tuple(value.shape)}")
        q = self._heads(self._project(query, 0))
        k = self._heads(self._project(key, 1))
        v = self._heads(self._project(value, 2))
        mask = self._merged_mask(key_padding_mask, attn_mask, is_causal, N, L, S, q.device,
                                 compute_dtype(q)[0])
        if self._takes_padding:
            kwargs["padding"] = key_padding_mask
        out, w = self._attend(q, k, v, mask, query, need_weights, **kwargs)      # (N, H, L, Dh), (N, H, L, S)
        out = self._combine_heads(out)
        if need_weights and w is not None:
            w = w.mean(1) if average_attn_weights else w
            if unbatched:
                w = w.squeeze(0)
        else:
            w = None
        if unbatched:
            out = out.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        return out, w

    def _combine_heads(self, out):
        """(N, H, L, Dh) head outputs -> (N, L, E): concatenated, then out_proj."""
        N, _, L, _ = out.shape
        return self.out_proj(out.transpose(1, 2).reshape(N, L, self.embed_dim))

    def _attend(self, q, k, v, mask, query, need_weights, **kwargs):   # pragma: no cover - abstract
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}, "
                f"batch_first={self.batch_first}")


def deprecated(old: str, new: str):
    warnings.warn(f"{old} is deprecated and will be removed in the next release; use {new} "
                  f"(torch's calling convention)", DeprecationWarning, stacklevel=3)
