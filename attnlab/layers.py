"""The attention layers of the four papers, as drop-ins for torch's own attention.

Functional forms, called like ``torch.nn.functional.scaled_dot_product_attention(query, key, value,
attn_mask=None, dropout_p=0.0, is_causal=False, scale=None)`` on (..., L, E) tensors with any leading
dimensions (heads included), the paper's own inputs keyword-only:

- :func:`fenchel_attention` (``alpha``, ``log_u``, ``exact``): exact Fenchel-dual attention,
  "Deciphering Attention Mechanisms", Eq. (7), (9); ``exact=False`` is its approximation (16), softmax
  attention;
- :func:`continuous_attention` (``kind``, basis, grid, kernel, ``ridge``): continuous softmax / sparsemax
  and kernel softmax / sparsemax attention, "Kernel Multimodal Continuous Attention", Eq. (1), (2), (6),
  (8), Algorithm 1;
- :func:`efa_attention` (``attention``): the attention of "Exponential Family Attention", Eq. (1).

Modules, called like ``torch.nn.MultiheadAttention`` (constructor, parameter names, masks with True =
not allowed, ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
average_attn_weights=True, is_causal=False)`` returning ``(output, weights)``), usable as the
``self_attn`` / ``multihead_attn`` of ``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer``:
:class:`FenchelMultiheadAttention`, :class:`ContinuousMultiheadAttention`, :class:`EFAMultiheadAttention`.

Building blocks of the kernel paper's models: :class:`ContinuousAttention` (densities given by their
parameters, incl. the Gaussian mixture of App. A), :class:`GaussianBasis`, :func:`ridge_value_coefficients`,
:func:`moments_from_discrete`.

Deprecated (one release, DeprecationWarning): ``FenchelAttention``, ``SequenceContinuousAttention`` and
``EFAAttention``, the layers' former calling conventions.
"""
from attnlab.numerics.continuous_layers import (ContinuousAttention, ContinuousMultiheadAttention, GaussianBasis,
                                                SequenceContinuousAttention, continuous_attention,
                                                moments_from_discrete, ridge_value_coefficients)
from attnlab.numerics.efa_attention import AttentionLayer as _EFALayer
from attnlab.numerics.efa_attention import EFAMultiheadAttention, efa_attention
from attnlab.numerics.fenchel_attention import FenchelAttention, FenchelMultiheadAttention, fenchel_attention
from attnlab.numerics.multihead import deprecated as _deprecated


class EFAAttention(_EFALayer):
    """Deprecated: the EFA block on column features, ``EFAAttention(width, heads, ...)(Z, allowed)``
    (``allowed`` True = may attend).  Use :class:`EFAMultiheadAttention` (torch's convention).  Will be
    removed in the next release."""

    def __init__(self, *args, **kwargs):
        _deprecated("EFAAttention", "EFAMultiheadAttention(embed_dim, num_heads, batch_first=True, "
                    "convention=...)")
        super().__init__(*args, **kwargs)


__all__ = ["fenchel_attention", "continuous_attention", "efa_attention",
           "FenchelMultiheadAttention", "ContinuousMultiheadAttention", "EFAMultiheadAttention",
           "ContinuousAttention", "GaussianBasis", "ridge_value_coefficients", "moments_from_discrete",
           "FenchelAttention", "SequenceContinuousAttention", "EFAAttention"]
