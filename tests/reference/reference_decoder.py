"""The decoder of an encoder-decoder (model.head "translation"), for the
independent PyTorch reference reference_model.py; written from the
specification (issue 35), not from the C++.

The encoder is reference_model's encoder without a CLS token; its output after
final_ln is the memory [B, S, D]. The decoder reads the target (the decoder's
input ids [B, T']) through the same token and position embeddings (no scale),
runs decoder_layers pre-LN blocks of three sublayers,

    h = combine_att(h, SelfAttention(LN_att(h)))      causal, target mask on keys
    h = combine_cross(h, Cross(LN_cross(h), memory))  source mask on keys
    h = combine_ffn(h, FFN_or_MoE(LN_ffn(h)))

each combined as the encoder's sublayers are (residual, or multi-path), then
decoder.final_ln, and its logits are tied to the token embedding:
final_ln(h) @ embed.token.weight^T, [B, T', V], no bias.

Parameters live under "decoder." with the encoder's block names, plus
cross-attention (decoder.cross.<i>.*), its LayerNorm (decoder.ln_cross.<i>.*)
and its path combiner (decoder.path_cross.<i>.*). Sharing acts inside the
decoder only. The decoder's self- and cross-attention are full softmax whatever
model.attention says. Its mixture of experts routes the real target tokens as a
language model does (token-major slots), in min(routing_groups, decoder_layers)
groups.

Notation as in reference_model.py; T' target length, S source length.
"""

import math

import torch
import torch.nn.functional as F

import reference_model as rm


def validate_config(cfg):
    if rm.is_image(cfg):
        raise ValueError("translation reads tokens, not images")
    if cfg["embedding_dim"] != 0:
        raise ValueError("translation ties its output to the token embedding: embedding_dim must be 0")
    if decoder_layers(cfg) < 1:
        raise ValueError("decoder_layers must be >= 1")


def decoder_layers(cfg):
    return cfg.get("decoder_layers", cfg["layers"])


def decoder_config(cfg):
    """The configuration the decoder's blocks are built from: its own depth, full
    attention, at most one routing group per block; every other knob as given."""
    side = dict(cfg)
    Ld = decoder_layers(cfg)
    side.update(layers=Ld, attention="full", attention_mix=[],
                routing_groups=min(cfg["routing_groups"], Ld))
    return side


def parameter_shapes(cfg):
    """The decoder's parameters: its blocks (as the encoder's, under "decoder."),
    cross-attention, ln_cross, path_cross and final_ln."""
    dcfg = decoder_config(cfg)
    D, Ld = cfg["d_model"], dcfg["layers"]
    n, H, A = cfg["paths"], cfg["heads"], cfg["head_dim"]
    shapes = rm.block_parameter_shapes(dcfg, prefix="decoder.")

    for i in range(1 if cfg["share_attention"] else Ld):
        shapes[f"decoder.cross.{i}.q.weight"] = [n * H * A, D]
        shapes[f"decoder.cross.{i}.q.bias"] = [n * H * A]
        shapes[f"decoder.cross.{i}.kv.weight"] = [2 * n * H * A, D]
        shapes[f"decoder.cross.{i}.kv.bias"] = [2 * n * H * A]
        shapes[f"decoder.cross.{i}.out_weight"] = [n, D, H * A]
        shapes[f"decoder.cross.{i}.out_bias"] = [n, D]

    m = rm.num_path_features(cfg)
    for i in range(1 if cfg["share_layernorm"] else Ld):
        shapes[f"decoder.ln_cross.{i}.weight"] = [D]
        shapes[f"decoder.ln_cross.{i}.bias"] = [D]
        if not rm.is_plain_sublayer(cfg):
            if cfg["path_norm"]:
                shapes[f"decoder.path_cross.{i}.norm_weight"] = [m, D]
                shapes[f"decoder.path_cross.{i}.norm_bias"] = [m, D]
            shapes[f"decoder.path_cross.{i}.alpha"] = [m]
            shapes[f"decoder.path_cross.{i}.beta"] = [1]

    shapes["decoder.final_ln.weight"] = [D]
    shapes["decoder.final_ln.bias"] = [D]
    return shapes


def cross_attention_paths(cfg, x, memory, source_mask, prefix, params):
    """Queries from the decoder tokens x [B, T', D], keys and values from the
    memory [B, S, D] (padded source positions masked out); full softmax per head;
    returns the n path outputs [B, T', D].

    q row ((p*H + h)*A + a); kv row ((s*n + p)*H + h)*A + a, s in (k, v).
    """
    B, T, _ = x.shape
    S = memory.shape[1]
    n, H, A = cfg["paths"], cfg["heads"], cfg["head_dim"]
    q = x @ params[f"{prefix}.q.weight"].T + params[f"{prefix}.q.bias"]           # [B, T', n*H*A]
    kv = memory @ params[f"{prefix}.kv.weight"].T + params[f"{prefix}.kv.bias"]   # [B, S, 2*n*H*A]
    q = q.view(B, T, n * H, A).transpose(1, 2)                  # [B, n*H, T', A]
    kv = kv.view(B, S, 2, n * H, A)
    k = kv[:, :, 0].transpose(1, 2)                             # [B, n*H, S, A]
    v = kv[:, :, 1].transpose(1, 2)

    scores = q @ k.transpose(-2, -1) / math.sqrt(A)             # [B, n*H, T', S]
    scores = scores.masked_fill(~source_mask.view(B, 1, 1, S), float("-inf"))
    ctx = torch.softmax(scores, dim=-1) @ v                     # [B, n*H, T', A]

    out_weight, out_bias = params[f"{prefix}.out_weight"], params[f"{prefix}.out_bias"]
    outputs = []
    for p in range(n):
        ctx_p = ctx[:, p * H:(p + 1) * H].transpose(1, 2).reshape(B, T, H * A)  # column h*A + a
        outputs.append(ctx_p @ out_weight[p].T + out_bias[p])
    return outputs


def decode(model, memory, source_mask, target_ids, target_mask):
    """The decoder's logits [B, T', V] for the encoder's memory [B, S, D].
    `model` is the WideLabReference whose sublayer combination, MoE state
    (routes, balance and z-loss) and capacity factor the decoder shares."""
    cfg, p = model.cfg, model.p
    dcfg = decoder_config(cfg)
    B, T = target_ids.shape
    if T > cfg["max_len"]:
        raise ValueError(f"target length {T} > max_len {cfg['max_len']}")
    if target_mask.shape != target_ids.shape or memory.shape[0] != B:
        raise ValueError("target ids, target mask and source disagree in shape")

    h = F.embedding(target_ids, p["embed.token.weight"]) + p["embed.position.weight"][:T]

    side = {"prefix": "decoder.", "layers": dcfg["layers"],
            "routing_groups": dcfg["routing_groups"], "token_major": True}
    for i in range(dcfg["layers"]):
        a = 0 if cfg["share_attention"] else i
        l = 0 if cfg["share_layernorm"] else i

        def self_attention(x, a=a):
            return rm.attention_paths(dcfg, x, target_mask, f"decoder.attention.{a}", p, causal=True)

        def cross_attention(x, a=a):
            return cross_attention_paths(cfg, x, memory, source_mask, f"decoder.cross.{a}", p)

        h = model.sublayer(h, f"decoder.ln_att.{l}", f"decoder.path_att.{l}", self_attention)
        h = model.sublayer(h, f"decoder.ln_cross.{l}", f"decoder.path_cross.{l}", cross_attention)
        h = model.sublayer(h, f"decoder.ln_ffn.{l}", f"decoder.path_ffn.{l}",
                           model.ffn_features(side, i, target_mask))

    h = rm.layer_norm(h, p["decoder.final_ln.weight"], p["decoder.final_ln.bias"])
    return h @ p["embed.token.weight"].T
