"""Sparse Transformer attention (Child et al., 2019), one head attending to the
union of the two factorised patterns (the "merged" form), with l =
`sparse_block_size`:
  strided: |i - j| < l, or (i - j) divisible by l;
  fixed:   i and j in the same block of l (i // l == j // l), or j a summary
           position: j mod l >= l - c, c = `sparse_summary`.
Child et al. state the patterns for autoregressive models; with `causal` they
are cut to j <= i, without it they apply in both directions.
A query that sees no real key takes the value of position 0.
"""

import torch

from . import masked_mix

NAME = "sparse"


def parameter_shapes(cfg, heads, positions):
    return {}


def pattern(cfg, T):
    l = cfg["sparse_block_size"]
    i = torch.arange(T).view(T, 1)
    j = torch.arange(T).view(1, T)
    if cfg["sparse_pattern"] == "strided":
        return ((i - j).abs() < l) | ((i - j) % l == 0)
    c = cfg["sparse_summary"]
    return (i // l == j // l) | (j % l >= l - c)


def mix(cfg, q, k, v, key_valid, causal, params):
    return masked_mix(q, k, v, pattern(cfg, q.shape[2]).unsqueeze(0), key_valid, causal)
