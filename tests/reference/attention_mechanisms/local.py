"""Local attention (Liu et al., 2018): softmax attention within non-overlapping
blocks of `local_block_size` consecutive positions (the last block may be short).

A query that sees no real key (a padded query in a block of padding) takes the
value of position 0 (weight 1 on key 0), so that every row is a distribution.
"""

import torch

from . import masked_mix

NAME = "local"


def parameter_shapes(cfg, heads, positions):
    return {}


def mix(cfg, q, k, v, key_valid, causal, params):
    T = q.shape[2]
    b = cfg["local_block_size"]
    block = torch.arange(T) // b
    allowed = (block.view(T, 1) == block.view(1, T)).unsqueeze(0)     # [1, T, T]
    return masked_mix(q, k, v, allowed, key_valid, causal)
