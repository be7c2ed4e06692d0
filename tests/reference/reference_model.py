#!/usr/bin/env python3
"""Independent PyTorch reference for the WideLab model (docs/model.md).

Usage:
    python3 reference_model.py CASE.json CASE.pt OUT.pt

CASE.json: {"model": {every key of docs/model.md, resolved}, "mode": "train" | "eval"}
CASE.pt:   dict str -> Tensor with "param.<name>" for every parameter and buffer,
           "input.ids" [B, T] int64, "input.mask" [B, T] bool (optional),
           or, when model.input is "image", "input.pixels" [B, C, H, W] float
           (normalised; no mask),
           "input.targets" [B] (classification) or [B, T] (language_model) int64;
           translation (an encoder-decoder, reference_decoder.py): "input.ids" and
           "input.mask" are the source, "input.target_ids" [B, T'] int64 the
           decoder's input, "input.target_mask" [B, T'] bool (optional) and
           "input.targets" [B, T'] int64.
OUT.pt:    dict str -> Tensor: "logits", "balance_loss", "router_z_loss", "loss"
           (the task loss, plus balance_loss_weight x balance loss, plus
           router_z_loss_weight x z-loss), "grad.<name>" for every trainable
           parameter, "route.<t>.expert|kept|gates" per routing call (an
           encoder-decoder's encoder calls first), and "initial.<name>" for every
           path weight (alpha, beta): the value model.path_weight gives it at
           initialisation.

reference_selftest.py checks this reference against torch's own modules and
hand-worked values. Written from the specification only, for clarity rather than speed. Dropout and
router noise are not implemented: reference cases must set both to 0 when the
mode is "train" (they are inactive in "eval" anyway).

Notation (as in docs/model.md): B batch, T sequence, D d_model, H heads,
A head_dim, M ffn_dim, E experts, K top_k, n paths, L layers, V vocab_size,
S number of routed (real) tokens.
"""

import json
import math
import sys
from dataclasses import dataclass

import torch
import torch.nn.functional as F

import attention_mechanisms
import reference_decoder

LN_EPS = 1e-5


# ----------------------------------------------------------------------------
# Configuration and parameter layout
# ----------------------------------------------------------------------------

def positions(cfg):
    """The longest sequence the blocks see: max_len, plus the CLS token."""
    return cfg["max_len"] + (1 if has_cls_token(cfg) else 0)


def has_cls_token(cfg):
    return cfg["head"] == "classification" and cfg["pooling"] == "cls"


def is_image(cfg):
    return cfg.get("input", "tokens") == "image"


def num_patches(cfg):
    """ViT: an image of side S cut into (S / P)^2 patches of P x P pixels."""
    return (cfg["image_size"] // cfg["patch_size"]) ** 2


def patch_embedding(pixels, weight, bias, P):
    """ViT's patch embedding, written out: cut [B, C, S, S] into P x P patches,
    row-major over the grid, flatten each patch (channel, row, column), and map
    it linearly to D. Equivalent to a convolution with kernel = stride = P
    whose weight is [D, C, P, P]."""
    B, C, S, _ = pixels.shape
    G = S // P
    patches = pixels.reshape(B, C, G, P, G, P)            # b c gy py gx px
    patches = patches.permute(0, 2, 4, 1, 3, 5)            # b gy gx c py px
    patches = patches.reshape(B, G * G, C * P * P)         # [B, N, C*P*P], row-major grid
    return patches @ weight.reshape(weight.shape[0], -1).T + bias   # [B, N, D]


def is_plain_sublayer(cfg):
    return (cfg["paths"] == 1 and not cfg["path_norm"]
            and not cfg["learnable_path_weights"] and not cfg["path_extra_features"])


def num_path_features(cfg):
    """m: the n raw path outputs, plus n extra features when enabled."""
    n = cfg["paths"]
    return 2 * n if cfg["path_extra_features"] else n


def is_translation(cfg):
    return cfg["head"] == "translation"


def path_weight_value(cfg):
    """The initial alpha of every path feature (model.path_weight), n = paths."""
    n = cfg["paths"]
    rule = cfg.get("path_weight", "inverse_sqrt_2n")
    if rule == "inverse_sqrt_2n":
        return 1.0 / math.sqrt(2 * n)
    if rule == "inverse_n":
        return 1.0 / n
    if rule == "inverse_sqrt_n":
        return 1.0 / math.sqrt(n)
    raise ValueError(f"unknown path_weight {rule!r}")


def validate_config(cfg):
    if cfg["head"] not in ("classification", "language_model", "translation", "masked_lm"):
        raise ValueError(f"unknown head {cfg['head']!r}")
    path_weight_value(cfg)
    if is_translation(cfg):
        reference_decoder.validate_config(cfg)
    if cfg["head"] == "classification" and cfg["pooling"] not in ("cls", "mean"):
        raise ValueError(f"unknown pooling {cfg['pooling']!r}")
    if cfg["activation"] not in ("gelu", "relu", "silu"):
        raise ValueError(f"unknown activation {cfg['activation']!r}")
    if cfg["routing_priority"] not in ("position", "batch"):
        raise ValueError(f"unknown routing_priority {cfg['routing_priority']!r}")
    if cfg.get("balance_count", "top1") not in ("top1", "topk"):
        raise ValueError(f"unknown balance_count {cfg['balance_count']!r}")
    if cfg["paths"] > 1 and cfg["experts"] > 1:
        raise ValueError("paths > 1 together with experts > 1 is not defined")
    if cfg["path_extra_features"] and cfg["paths"] < 3:
        raise ValueError("path_extra_features needs paths >= 3")
    if cfg["experts"] > 1 and not (1 <= cfg["top_k"] <= cfg["experts"]):
        raise ValueError("top_k must be in [1, experts]")
    if cfg["experts"] > 1 and cfg["routing_groups"] < 1:
        raise ValueError("routing_groups must be >= 1")


def expected_parameter_shapes(cfg):
    """Every parameter and buffer name of docs/model.md with its shape."""
    V, D, L = cfg["vocab_size"], cfg["d_model"], cfg["layers"]
    H, A, M = cfg["heads"], cfg["head_dim"], cfg["ffn_dim"]
    n, E, edim = cfg["paths"], cfg["experts"], cfg["embedding_dim"]
    cls = has_cls_token(cfg)
    shapes = {}

    if is_image(cfg):
        P = cfg["patch_size"]
        shapes["embed.patch.weight"] = [D, cfg["channels"], P, P]
        shapes["embed.patch.bias"] = [D]
        n_positions = num_patches(cfg)
    else:
        shapes["embed.token.weight"] = [V, edim if edim > 0 else D]
        if edim > 0:
            shapes["embed.project.weight"] = [D, edim]
            shapes["embed.project.bias"] = [D]
        n_positions = cfg["max_len"]
    shapes["embed.position.weight"] = [n_positions + (1 if cls else 0), D]
    if cls:
        shapes["embed.cls"] = [D]
    if cfg.get("segments", 0) > 0:
        shapes["embed.segment.weight"] = [cfg["segments"], D]
    shapes.update(block_parameter_shapes(cfg))

    shapes["final_ln.weight"] = [D]
    shapes["final_ln.bias"] = [D]
    if cfg["head"] == "classification":
        if cfg["pooler"]:
            shapes["pooler.weight"] = [D, D]
            shapes["pooler.bias"] = [D]
        shapes["classifier.weight"] = [cfg["num_classes"], D]
        shapes["classifier.bias"] = [cfg["num_classes"]]
    elif cfg["head"] in ("language_model", "masked_lm"):  # a vocabulary row per position
        shapes["lm_head.weight"] = [V, D]
        shapes["lm_head.bias"] = [V]
    else:  # translation: the decoder; its output is tied to embed.token.weight
        shapes.update(reference_decoder.parameter_shapes(cfg))
    return shapes


def block_parameter_shapes(cfg, prefix=""):
    """The parameters of cfg["layers"] blocks (attention, FFN or experts, router,
    LayerNorms, path combiners), each name under `prefix`."""
    D, L = cfg["d_model"], cfg["layers"]
    H, A, M = cfg["heads"], cfg["head_dim"], cfg["ffn_dim"]
    n, E = cfg["paths"], cfg["experts"]
    shapes = {}

    n_att = 1 if cfg["share_attention"] else L
    n_ffn = 1 if cfg["share_ffn"] else L
    n_ln = 1 if cfg["share_layernorm"] else L
    n_router = 1 if cfg["share_router"] else L

    for i in range(n_att):
        shapes[f"attention.{i}.qkv.weight"] = [3 * n * H * A, D]
        shapes[f"attention.{i}.qkv.bias"] = [3 * n * H * A]
        shapes[f"attention.{i}.out_weight"] = [n, D, H * A]
        shapes[f"attention.{i}.out_bias"] = [n, D]
        for g, (name, heads) in enumerate(attention_mechanisms.groups(cfg)):
            mechanism = attention_mechanisms.MECHANISMS[name]
            for suffix, shape in mechanism.parameter_shapes(cfg, len(heads), positions(cfg)).items():
                shapes[f"attention.{i}.mix.{g}.{suffix}"] = list(shape)

    U = E if E > 1 else n
    for i in range(n_ffn):
        shapes[f"ffn.{i}.w_in"] = [U, M, D]
        shapes[f"ffn.{i}.b_in"] = [U, M]
        shapes[f"ffn.{i}.w_out"] = [U, D, M]
        shapes[f"ffn.{i}.b_out"] = [U, D]

    if E > 1:
        for i in range(n_router):
            shapes[f"router.{i}.weight"] = [E, D]

    m = num_path_features(cfg)
    for i in range(n_ln):
        for which in ("ln_att", "ln_ffn"):
            shapes[f"{which}.{i}.weight"] = [D]
            shapes[f"{which}.{i}.bias"] = [D]
        if not is_plain_sublayer(cfg):
            for which in ("path_att", "path_ffn"):
                if cfg["path_norm"]:
                    shapes[f"{which}.{i}.norm_weight"] = [m, D]
                    shapes[f"{which}.{i}.norm_bias"] = [m, D]
                shapes[f"{which}.{i}.alpha"] = [m]
                shapes[f"{which}.{i}.beta"] = [1]
    return {prefix + name: shape for name, shape in shapes.items()}


def is_path_weight(name):
    """alpha and beta of a path combiner (path_att, path_ffn, decoder.path_cross, ...)."""
    if name.startswith("decoder."):
        name = name[len("decoder."):]
    return name.startswith("path_") and name.rsplit(".", 1)[1] in ("alpha", "beta")


def is_trainable(cfg, name):
    """Path alpha/beta are buffers unless learnable_path_weights is on."""
    return cfg["learnable_path_weights"] or not is_path_weight(name)


def initial_value(cfg, name, shape):
    """A path weight's value at initialisation: alpha = path_weight_value, beta = 1."""
    if name.rsplit(".", 1)[1] == "beta":
        return torch.ones(shape)
    return torch.full(shape, path_weight_value(cfg))


# ----------------------------------------------------------------------------
# Building blocks
# ----------------------------------------------------------------------------

def activation(name, x):
    if name == "gelu":
        return F.gelu(x)  # exact (erf) GELU
    if name == "relu":
        return F.relu(x)
    if name == "silu":
        return F.silu(x)
    raise ValueError(name)


def layer_norm(x, weight, bias):
    return F.layer_norm(x, (x.shape[-1],), weight, bias, LN_EPS)


def attention_paths(cfg, x, mask, prefix, params, causal):
    """All heads of all paths; each mechanism mixes its heads; returns the n path
    outputs [B, T, D].

    qkv row r = ((s*n + p)*H + h)*A + a, s in (q, k, v), head index p*H + h.
    """
    B, T, _ = x.shape
    n, H, A = cfg["paths"], cfg["heads"], cfg["head_dim"]
    qkv = x @ params[f"{prefix}.qkv.weight"].T + params[f"{prefix}.qkv.bias"]  # [B, T, 3*n*H*A]
    qkv = qkv.view(B, T, 3, n * H, A)                  # [B, T, s, p*H + h, a]
    q = qkv[:, :, 0].transpose(1, 2)                   # [B, n*H, T, A]
    k = qkv[:, :, 1].transpose(1, 2)
    v = qkv[:, :, 2].transpose(1, 2)

    ctx = torch.zeros_like(q)                          # [B, n*H, T, A]
    for g, (name, heads) in enumerate(attention_mechanisms.groups(cfg)):
        mechanism = attention_mechanisms.MECHANISMS[name]
        own = {suffix: params[f"{prefix}.mix.{g}.{suffix}"]
               for suffix in mechanism.parameter_shapes(cfg, len(heads), positions(cfg))}
        index = torch.tensor(heads)
        ctx[:, index] = mechanism.mix(cfg, q[:, index], k[:, index], v[:, index], mask, causal, own)

    out_weight, out_bias = params[f"{prefix}.out_weight"], params[f"{prefix}.out_bias"]
    outputs = []
    for p in range(n):
        ctx_p = ctx[:, p * H:(p + 1) * H]              # [B, H, T, A]
        ctx_p = ctx_p.transpose(1, 2).reshape(B, T, H * A)  # column h*A + a
        outputs.append(ctx_p @ out_weight[p].T + out_bias[p])
    return outputs


def dense_ffn_paths(x, w_in, b_in, w_out, b_out, act_name):
    """Per path p: act(x @ w_in[p]^T + b_in[p]) @ w_out[p]^T + b_out[p]."""
    outputs = []
    for p in range(w_in.shape[0]):
        hid = activation(act_name, x @ w_in[p].T + b_in[p])
        outputs.append(hid @ w_out[p].T + b_out[p])
    return outputs


# ----------------------------------------------------------------------------
# Mixture of experts
# ----------------------------------------------------------------------------

@dataclass
class Routing:
    expert: torch.Tensor   # [S, K] int64, choice 0 = top-1
    kept: torch.Tensor     # [S, K] bool
    gates: torch.Tensor    # [S, K] combine weights (renormalised if asked), in the graph


def expert_capacity(top_k, capacity_factor, num_tokens, num_experts):
    """cap = ceil(K * C * S / E); C <= 0: cap = S. The product is rounded to 9
    decimals before the ceiling: a decimal C such as 0.56 is not exact in binary,
    and 2 * 0.56 * 25 / 4 evaluates to 7.000000000000001, whose ceiling is 8."""
    if capacity_factor <= 0:
        return num_tokens
    return int(math.ceil(round(top_k * capacity_factor * num_tokens / num_experts, 9)))


def priority_order(top1_prob, routing_priority):
    """Token indices in the order they receive slots within each choice round."""
    S = len(top1_prob)
    if routing_priority == "position":
        return list(range(S))
    # batch priority: highest top-1 probability first; Python's sort is stable,
    # so ties keep position order.
    values = [float(p) for p in top1_prob]
    return sorted(range(S), key=lambda s: -values[s])


def assign_slots(expert, order, num_experts, capacity, token_major=False):
    """Slot assignment with per-expert counters.

    Choice-major (every token's choice 0, then every choice 1, ...), or
    token-major (all choices of a token before the next token), which a
    language model uses so that no later token can take an earlier token's slot.

    expert: [S, K] int64; order: token indices in priority order.
    Returns kept [S, K] bool: True where the assignment's slot is < capacity.
    """
    S, K = expert.shape
    choices = expert.tolist()
    kept = [[False] * K for _ in range(S)]
    used = [0] * num_experts  # slots handed out so far, per expert
    if token_major:
        served = [(s, c) for s in order for c in range(K)]
    else:
        served = [(s, c) for c in range(K) for s in order]
    for s, c in served:
        e = choices[s][c]
        slot = used[e]
        used[e] += 1
        kept[s][c] = slot < capacity
    return torch.tensor(kept, dtype=torch.bool).view(S, K)


def route_tokens(tokens, router_weight, top_k, capacity_factor,
                 routing_priority, renormalize_gates, token_major=False, balance_count="top1"):
    """One routing call on the S real tokens [S, D].

    Returns (Routing, balance loss of this call). The caller must have ruled out
    router noise (training with router_noise_std > 0 is not reproducible here).
    """
    S = tokens.shape[0]
    E = router_weight.shape[0]
    logits = tokens @ router_weight.T                  # [S, E], no bias
    probs = torch.softmax(logits, dim=-1)
    top_probs, expert = torch.topk(probs, top_k, dim=-1)  # [S, K], sorted descending
    gates = top_probs
    if renormalize_gates:
        gates = gates / gates.sum(dim=-1, keepdim=True)

    cap = expert_capacity(top_k, capacity_factor, S, E)
    order = priority_order(top_probs[:, 0].detach(), routing_priority)
    kept = assign_slots(expert, order, E, cap, token_major)

    # WideNet Eq. 3-5: m_e from choice 0, or from every choice (h K-hot) with
    # balance_count "topk" (no gradient); P_e mean probability (gradient).
    counted = expert.reshape(-1) if balance_count == "topk" else expert[:, 0]
    m = torch.bincount(counted, minlength=E).to(probs.dtype) / S
    P = probs.mean(dim=0)
    balance = E * (m.detach() * P).sum()
    return Routing(expert=expert, kept=kept, gates=gates), balance


def router_z_loss(tokens, router_weight):
    """ST-MoE's router z-loss of one routing call: the mean over the S routed
    tokens of the squared log-sum-exp of their router logits."""
    logits = tokens @ router_weight.T                  # [S, E]
    return (torch.logsumexp(logits, dim=-1) ** 2).mean()


def moe_forward(tokens, routing, w_in, b_in, w_out, b_out, act_name):
    """out[s] = sum over kept choices c of gates[s, c] * expert_{expert[s, c]}(x[s]).

    For clarity every expert is evaluated on every token and the unused or
    dropped ones get weight 0.
    """
    S = tokens.shape[0]
    E = w_in.shape[0]
    all_experts = torch.stack([
        activation(act_name, tokens @ w_in[e].T + b_in[e]) @ w_out[e].T + b_out[e]
        for e in range(E)
    ])                                                 # [E, S, D]
    token_index = torch.arange(S)
    out = torch.zeros_like(tokens)
    for c in range(routing.expert.shape[1]):
        y = all_experts[routing.expert[:, c], token_index]          # [S, D]
        weight = torch.where(routing.kept[:, c], routing.gates[:, c],
                             torch.zeros_like(routing.gates[:, c]))
        out = out + weight.unsqueeze(-1) * y
    return out


# ----------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------

class WideLabReference:
    def __init__(self, cfg, params, mode):
        validate_config(cfg)
        if mode not in ("train", "eval"):
            raise ValueError(f"mode must be 'train' or 'eval', not {mode!r}")
        self.cfg = cfg
        self.p = params  # name -> tensor
        self.mode = mode
        self.capacity_factor = (cfg["capacity_factor"] if mode == "train"
                                else cfg["eval_capacity_factor"])
        if mode == "train" and (cfg["dropout"] != 0 or cfg["router_noise_std"] != 0):
            raise ValueError("train mode needs dropout 0 and router_noise_std 0 "
                             "for a deterministic reference")

    def sublayer(self, h, ln_name, path_name, features):
        """Plain: h + F(LN(h)). Multi-path: beta*h + sum_j alpha_j PathNorm_j(F_j)."""
        cfg, p = self.cfg, self.p
        x = layer_norm(h, p[f"{ln_name}.weight"], p[f"{ln_name}.bias"])
        raw = features(x)                              # list of n tensors [B, T, D]
        if is_plain_sublayer(cfg):
            return h + raw[0]

        n = cfg["paths"]
        feats = list(raw)
        if cfg["path_extra_features"]:
            total = sum(raw)
            feats += [(total - raw[j]) / (n - 1) for j in range(n)]

        alpha = p[f"{path_name}.alpha"]
        beta = p[f"{path_name}.beta"]
        y = beta * h
        for j, f in enumerate(feats):
            if cfg["path_norm"]:
                f = layer_norm(f, p[f"{path_name}.norm_weight"][j],
                               p[f"{path_name}.norm_bias"][j])
            y = y + alpha[j] * f
        return y

    def ffn_features(self, side, i, mask):
        """The FFN sublayer's features of block i of `side` (this model's cfg or the
        decoder's, whose layers and routing_groups are its own) whose parameter
        names start with side["prefix"]. MoE: only the real tokens (mask) are
        routed, only a group's first block routes, the others reuse its routing;
        masked positions get MoE output 0."""
        cfg, p = self.cfg, self.p
        prefix = side["prefix"]
        f = 0 if cfg["share_ffn"] else i
        w = [p[f"{prefix}ffn.{f}.{k}"] for k in ("w_in", "b_in", "w_out", "b_out")]
        if cfg["experts"] == 1:
            return lambda x: dense_ffn_paths(x, *w, cfg["activation"])

        L, G = side["layers"], side["routing_groups"]
        r = 0 if cfg["share_router"] else i
        group = (i * G) // L
        first_of_group = i == 0 or ((i - 1) * G) // L != group

        def features(x):
            tokens = x[mask]                             # [S, D], row-major over [B, T]
            if first_of_group:
                router = p[f"{prefix}router.{r}.weight"]
                routing, balance = route_tokens(
                    tokens, router, cfg["top_k"], self.capacity_factor,
                    cfg["routing_priority"], cfg["renormalize_gates"],
                    token_major=side["token_major"], balance_count=cfg.get("balance_count", "top1"))
                self.balance_loss = self.balance_loss + balance
                self.router_z_loss = self.router_z_loss + router_z_loss(tokens, router)
                self.routes.append(routing)
                self.group_routing = routing
            out_tokens = moe_forward(tokens, self.group_routing, *w, cfg["activation"])
            out = torch.zeros_like(x)                    # masked positions: MoE output 0
            out[mask] = out_tokens
            return [out]
        return features

    def forward(self, ids, mask, target=None):
        """Returns (logits, balance_loss, routes, mask_used_by_blocks); the router
        z-loss is left in self.router_z_loss.
        ids: token ids [B, T], or for image models pixels [B, C, S, S].
        target: translation only, (target_ids [B, T'], target_mask [B, T'])."""
        cfg, p = self.cfg, self.p
        causal = cfg["head"] == "language_model"

        # Embedding
        if is_image(cfg):
            B = ids.shape[0]
            h = patch_embedding(ids, p["embed.patch.weight"], p["embed.patch.bias"],
                                cfg["patch_size"])      # [B, N, D]
        else:
            B, T = ids.shape
            if T > cfg["max_len"]:
                raise ValueError(f"sequence length {T} > max_len {cfg['max_len']}")
            h = F.embedding(ids, p["embed.token.weight"])   # [B, T, edim or D]
            if cfg["embedding_dim"] > 0:
                h = h @ p["embed.project.weight"].T + p["embed.project.bias"]
            if cfg.get("segments", 0) > 0:
                # A text pair: the second segment starts after the first separator,
                # the vocabulary's last id; the separator closes its own segment.
                separator = cfg["vocab_size"] - 1
                segment = torch.zeros_like(ids)
                for b in range(B):
                    seen = 0
                    for t in range(T):
                        segment[b, t] = min(seen, cfg["segments"] - 1)
                        if ids[b, t].item() == separator:
                            seen += 1
                h = h + p["embed.segment.weight"][segment]
        if has_cls_token(cfg):
            cls = p["embed.cls"].view(1, 1, -1).expand(B, 1, -1)
            h = torch.cat([cls, h], dim=1)               # [B, T+1, D]
            mask = torch.cat([torch.ones(B, 1, dtype=torch.bool), mask], dim=1)
        T_blocks = h.shape[1]
        h = h + p["embed.position.weight"][:T_blocks]

        self.balance_loss = h.new_zeros(())
        self.router_z_loss = h.new_zeros(())
        self.routes = []           # one Routing per routing call, in block order
        self.group_routing = None  # routing of the current group's first block
        encoder = {"prefix": "", "layers": cfg["layers"], "routing_groups": cfg["routing_groups"],
                   "token_major": cfg["head"] == "language_model"}
        for i in range(cfg["layers"]):
            a = 0 if cfg["share_attention"] else i
            l = 0 if cfg["share_layernorm"] else i

            def attention_features(x, a=a):
                return attention_paths(cfg, x, mask, f"attention.{a}", p, causal)

            h = self.sublayer(h, f"ln_att.{l}", f"path_att.{l}", attention_features)
            h = self.sublayer(h, f"ln_ffn.{l}", f"path_ffn.{l}", self.ffn_features(encoder, i, mask))

        h = layer_norm(h, p["final_ln.weight"], p["final_ln.bias"])

        if cfg["head"] == "classification":
            if cfg["pooling"] == "cls":
                pooled = h[:, 0]
            else:
                weights = mask.to(h.dtype).unsqueeze(-1)          # [B, T, 1]
                pooled = (h * weights).sum(dim=1) / weights.sum(dim=1)
            if cfg["pooler"]:
                pooled = torch.tanh(pooled @ p["pooler.weight"].T + p["pooler.bias"])
            logits = pooled @ p["classifier.weight"].T + p["classifier.bias"]
        elif cfg["head"] in ("language_model", "masked_lm"):  # masked_lm: both sides seen, not causal
            logits = h @ p["lm_head.weight"].T + p["lm_head.bias"]
        else:
            if target is None:
                raise ValueError("a translation model needs the target input")
            logits = reference_decoder.decode(self, h, mask, *target)
        return logits, self.balance_loss, self.routes, mask


def task_loss(cfg, logits, targets, mask):
    if cfg["head"] == "classification":
        return F.cross_entropy(logits, targets)
    return F.cross_entropy(logits[mask], targets[mask])


def warn_ill_defined(cfg, mask, target_mask=None):
    """Fully masked attention rows or empty mean pools give NaN; say so."""
    B, T = mask.shape
    if has_cls_token(cfg):
        return
    if target_mask is not None and (~target_mask[:, 0]).any():
        print("warning: a target row starts with a masked token: its causal "
              "attention row has no valid key (NaN)", file=sys.stderr)
    if cfg["head"] == "language_model":
        if (~mask[:, 0]).any():
            print("warning: a language-model row starts with a masked token: its causal "
                  "attention row has no valid key (NaN)", file=sys.stderr)
    elif (~mask).all(dim=1).any():
        print("warning: a row has no real token: attention and mean pooling give NaN",
              file=sys.stderr)


# ----------------------------------------------------------------------------
# Case runner
# ----------------------------------------------------------------------------

def load_parameters(cfg, case, dtype=torch.float32):
    """Check names and shapes against docs/model.md; return (params, trainable names)."""
    expected = expected_parameter_shapes(cfg)
    given = {k[len("param."):]: v for k, v in case.items() if k.startswith("param.")}
    missing = sorted(set(expected) - set(given))
    extra = sorted(set(given) - set(expected))
    if missing or extra:
        raise ValueError(f"parameter names differ from docs/model.md: missing {missing}, "
                         f"unexpected {extra}")
    params, trainable = {}, []
    for name, shape in expected.items():
        t = given[name]
        if list(t.shape) != shape:
            raise ValueError(f"{name}: shape {list(t.shape)}, expected {shape}")
        t = t.detach().to(dtype).clone().contiguous()
        if is_trainable(cfg, name):
            t.requires_grad_(True)
            trainable.append(name)
        params[name] = t
    return params, trainable


def run_case(cfg, mode, case, dtype=torch.float32):
    """Returns the OUT dict for one case."""
    params, trainable = load_parameters(cfg, case, dtype)
    if is_image(cfg):
        ids = case["input.pixels"].to(dtype)      # [B, C, S, S]
        S, C = cfg["image_size"], cfg["channels"]
        if list(ids.shape[1:]) != [C, S, S]:
            raise ValueError(f"input.pixels: shape {list(ids.shape)}, expected [B, {C}, {S}, {S}]")
        mask = torch.ones(ids.shape[0], num_patches(cfg), dtype=torch.bool)
    else:
        ids = case["input.ids"].long()
        mask = case.get("input.mask")
        mask = torch.ones_like(ids, dtype=torch.bool) if mask is None else mask.bool()
    targets = case["input.targets"].long()
    target, loss_mask = None, mask
    if is_translation(cfg):
        target_ids = case["input.target_ids"].long()
        target_mask = case.get("input.target_mask")
        target_mask = (torch.ones_like(target_ids, dtype=torch.bool) if target_mask is None
                       else target_mask.bool())
        target, loss_mask = (target_ids, target_mask), target_mask
        warn_ill_defined(cfg, mask, target_mask)
    else:
        warn_ill_defined(cfg, mask)

    model = WideLabReference(cfg, params, mode)
    logits, balance_loss, routes, _ = model.forward(ids, mask, target)
    z_loss = model.router_z_loss
    loss = (task_loss(cfg, logits, targets, loss_mask) + cfg["balance_loss_weight"] * balance_loss
            + cfg.get("router_z_loss_weight", 0.0) * z_loss)
    grads = torch.autograd.grad(loss, [params[n] for n in trainable], allow_unused=True)

    out = {
        "logits": logits,
        "balance_loss": balance_loss,
        "router_z_loss": z_loss,
        "loss": loss,
    }
    for name, shape in expected_parameter_shapes(cfg).items():
        if is_path_weight(name):
            out[f"initial.{name}"] = initial_value(cfg, name, shape).to(dtype)
    for name, g in zip(trainable, grads):
        out[f"grad.{name}"] = torch.zeros_like(params[name]) if g is None else g
    for t, routing in enumerate(routes):
        out[f"route.{t}.expert"] = routing.expert
        out[f"route.{t}.kept"] = routing.kept
        out[f"route.{t}.gates"] = routing.gates
    return {k: v.detach().cpu().contiguous() for k, v in out.items()}


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as fh:
        spec = json.load(fh)
    case = torch.load(argv[2], weights_only=False)  # written by torch::save (TorchScript pickle)
    # float64: the same case (parameters and pixels cast up), for the exact value
    # that an fp32 result's rounding error is measured against.
    dtype = torch.float64 if spec.get("dtype") == "float64" else torch.float32
    if dtype == torch.float64:
        case = {k: v.double() if v.is_floating_point() else v for k, v in case.items()}
    try:
        out = run_case(spec["model"], spec["mode"], case, dtype)
    except (ValueError, KeyError) as err:
        print(f"reference_model.py: error: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    torch.save(out, argv[3])
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv))
