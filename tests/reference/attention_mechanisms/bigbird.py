"""BigBird attention (Zaheer et al., 2020), the blocked ITC form the Long Range
Arena uses: the sequence is cut into blocks of `bigbird_block_size` (the last may
be short); with nb blocks,
  - the first and the last block are global: their queries see every key and
    every query sees their keys;
  - every query block sees its own block and its two neighbours (the window);
  - every other query block sees `bigbird_random_blocks` random key blocks, its
    own per head, drawn once (buffer "random_blocks" [G, ceil(positions / b), r],
    -1 for none). At a sequence shorter than `positions`, an id >= nb is ignored.
A query that sees no real key takes the value of position 0.
"""

import math

import torch

from . import masked_mix

NAME = "bigbird"


def parameter_shapes(cfg, heads, positions):
    b = cfg["bigbird_block_size"]
    return {"random_blocks": [heads, math.ceil(positions / b), cfg["bigbird_random_blocks"]]}


def pattern(cfg, T, random_blocks):
    """[G, T, T] bool: which keys each query may see, per head."""
    G = random_blocks.shape[0]
    b = cfg["bigbird_block_size"]
    nb = math.ceil(T / b)
    block = torch.arange(T) // b
    qb = block.view(T, 1)
    kb = block.view(1, T)
    base = ((qb - kb).abs() <= 1) | (qb == 0) | (qb == nb - 1) | (kb == 0) | (kb == nb - 1)
    allowed = base.unsqueeze(0).repeat(G, 1, 1)
    for h in range(G):
        for n in range(nb):
            for r in random_blocks[h, n].tolist():
                if 0 <= r < nb:
                    allowed[h][(block == n).view(T, 1) & (block == r).view(1, T)] = True
    return allowed


def mix(cfg, q, k, v, key_valid, causal, params):
    allowed = pattern(cfg, q.shape[2], params["random_blocks"])
    return masked_mix(q, k, v, allowed, key_valid, causal)
