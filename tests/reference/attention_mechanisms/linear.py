"""Linear attention (Katharopoulos et al., 2020, "Transformers are RNNs").

The softmax similarity exp(q.k) is replaced by phi(q).phi(k) with the feature
map phi(x) = elu(x) + 1 (positive), so that

    out_i = sum_j phi(q_i).phi(k_j) v_j / (sum_j phi(q_i).phi(k_j) + eps)

over the keys j that query i may see (real keys; j <= i when causal). eps =
1e-6 as in the paper's code and the Long Range Arena's. No parameters.

Written clearly with the explicit [T, T] similarity matrix; the C++ never forms it.
"""

import torch
import torch.nn.functional as F

NAME = "linear"
EPS = 1e-6


def parameter_shapes(cfg, heads, positions):
    return {}


def feature_map(x):
    return F.elu(x) + 1.0


def mix(cfg, q, k, v, key_valid, causal, params):
    B, G, T, A = q.shape
    similarity = feature_map(q) @ feature_map(k).transpose(-2, -1)     # [B, G, T(query), T(key)]
    allowed = key_valid.view(B, 1, 1, T).expand(B, G, T, T)
    if causal:
        allowed = allowed & torch.ones(T, T, dtype=torch.bool).tril()
    similarity = similarity * allowed.to(similarity.dtype)
    normaliser = similarity.sum(-1, keepdim=True) + EPS                # [B, G, T, 1]
    return (similarity @ v) / normaliser
