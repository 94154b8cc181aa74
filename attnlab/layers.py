"""The attention layers of the four papers, for your own torch models (batch first; query, key,
value, mask as in torch.nn.functional.scaled_dot_product_attention / nn.MultiheadAttention).

Functions and modules (this module only re-exports; the code lives in attnlab.numerics):

- ``fenchel_attention(query, key, value, alpha=1.0, log_u=None, attn_mask=None, scale=None,
  exact=True)`` and ``FenchelAttention(embed_dim, num_heads, alpha, alpha_mode)``: the exact
  Fenchel-dual attention of "Deciphering Attention Mechanisms" (weights p(lambda*) from the dual (7),
  implicit-function gradients); ``exact=False`` is its approximation (16), i.e. softmax attention.
- ``continuous_attention(query, key, value, kind, key_padding_mask=None, ...)`` and
  ``SequenceContinuousAttention(embed_dim, kind)``: continuous softmax / sparsemax and kernel softmax /
  kernel sparsemax attention of "Kernel Multimodal Continuous Attention" (Eq. 1, 2, 6, 8, Algorithm 1),
  returning the context vectors.
- ``ContinuousAttention``, ``GaussianBasis``, ``ridge_value_coefficients``, ``moments_from_discrete``:
  the building blocks (densities given by their parameters, incl. the Gaussian mixture of App. A).
- ``EFAAttention``: the attention block of Exponential Family Attention, Eq. (1) (paper or standard
  convention, multi-head), on column features with an ``allowed`` mask.
"""
from attnlab.numerics.continuous_layers import (ContinuousAttention, GaussianBasis, SequenceContinuousAttention,
                                                continuous_attention, moments_from_discrete,
                                                ridge_value_coefficients)
from attnlab.numerics.efa_attention import AttentionLayer as EFAAttention
from attnlab.numerics.fenchel_attention import FenchelAttention, fenchel_attention

__all__ = ["fenchel_attention", "FenchelAttention", "continuous_attention", "SequenceContinuousAttention",
           "ContinuousAttention", "GaussianBasis", "ridge_value_coefficients", "moments_from_discrete",
           "EFAAttention"]
