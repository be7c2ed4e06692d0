"""The WideLab model as a torch.nn.Module (docs/model.md, "Forward pass").

Parameter and buffer names are the export's (docs/model.md, "Parameter names"), so
`model.load_state_dict(torch.load("model.pt", weights_only=False))` fills it.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import MASKED, MixContext, make_mechanism
from .config import _MECHANISM_KEYS
from .errors import WideLabError

LN_EPS = 1e-5


class Output:
    """What one forward pass gives.

    logits: [B, num_classes] (classification) or [B, T, vocab_size] (language model).
    attention: one [B, paths*heads, T', T'] tensor per block (T' counts the CLS token; head
        index p*heads + h), or None when not asked for.
    experts: MoE only, one [S, top_k] int64 tensor per block: the expert of each routed token's
        choice, -1 where the choice was dropped (over capacity). The S routed tokens are the
        real positions of the batch in row-major [B, T'] order (`token_index`).
    gates: MoE only, one [S, top_k] tensor per block: the combine weights (renormalised when
        model.renormalize_gates), whether kept or not.
    routed: MoE only, per block: True when the block made its own routing call, False when it
        reused its routing group's.
    capacity: MoE only, per block: the slots per expert.
    token_index: MoE only, [S] int64 flat positions in [B*T'] of the routed tokens.
    balance_loss, z_loss: scalars summed over the routing calls (0 for a dense model).
    lens: with lens=True, the head's logits after every sublayer (block i's attention at 2i,
        its FFN at 2i+1); the last equals `logits`.
    """

    def __init__(self):
        self.logits = None
        self.attention = None
        self.experts = []
        self.gates = []
        self.routed = []
        self.capacity = []
        self.token_index = None
        self.balance_loss = None
        self.z_loss = None
        self.lens = None

    def __repr__(self):
        return "widelab.Output(logits %s, %s attention maps, %d routing blocks)" % (
            tuple(self.logits.shape), "no" if self.attention is None else len(self.attention), len(self.experts))


def activate(x, name):
    if name == "relu":
        return F.relu(x)
    if name == "silu":
        return F.silu(x)
    return F.gelu(x)


class Embedding(nn.Module):
    def __init__(self, c):
        super().__init__()
        if c.image_input:
            self.patch = nn.Conv2d(c.channels, c.d_model, c.patch_size, stride=c.patch_size)
        else:
            self.token = nn.Embedding(c.vocab_size, c.embedding_dim if c.embedding_dim > 0 else c.d_model)
            if c.embedding_dim > 0:
                self.project = nn.Linear(c.embedding_dim, c.d_model)
        self.position = nn.Embedding(c.positions, c.d_model)
        if c.uses_cls_token:
            self.cls = nn.Parameter(torch.zeros(c.d_model))

    def forward(self, x):
        if hasattr(self, "patch"):
            h = self.patch(x).flatten(2).transpose(1, 2)  # [B, G*G, D], patch (r, c) at r*G + c
        else:
            h = self.token(x)
            if hasattr(self, "project"):
                h = self.project(h)
        if hasattr(self, "cls"):
            h = torch.cat([self.cls.expand(h.shape[0], 1, h.shape[2]), h], 1)
        return h + self.position.weight[: h.shape[1]].unsqueeze(0)


class Attention(nn.Module):
    """Projections shared by every mechanism around each head group's mixing step."""

    def __init__(self, c):
        super().__init__()
        n, H, A, D = c.paths, c.heads, c.head_dim, c.d_model
        self.paths, self.heads, self.head_dim = n, H, A
        self.qkv = nn.Linear(D, 3 * n * H * A)
        self.out_weight = nn.Parameter(torch.zeros(n, D, H * A))
        self.out_bias = nn.Parameter(torch.zeros(n, D))
        options = {key: getattr(c, key) for key in _MECHANISM_KEYS}
        self.groups = [heads for _, heads in c.mechanism_groups()]
        self.mix = nn.ModuleList(make_mechanism(name, len(heads), A, c.positions, options)
                                 for name, heads in c.mechanism_groups())
        order = [h for heads in self.groups for h in heads]
        self.register_buffer("_unmix", torch.argsort(torch.tensor(order)), persistent=False)

    def forward(self, x, ctx):
        B, T, D = x.shape
        n, H, A = self.paths, self.heads, self.head_dim
        qkv = self.qkv(x).view(B, T, 3, n * H, A).permute(2, 0, 3, 1, 4)  # [3, B, n*H, T, A]
        contexts, maps = [], []
        for heads, mechanism in zip(self.groups, self.mix):
            index = torch.tensor(heads)
            q, k, v = (qkv[s].index_select(1, index) for s in range(3))
            context, attention_map = mechanism.mix(q, k, v, ctx)
            contexts.append(context)
            maps.append(attention_map)
        context = torch.cat(contexts, 1).index_select(1, self._unmix)  # [B, n*H, T, A] in head order
        weights = torch.cat(maps, 1).index_select(1, self._unmix) if ctx.want_map else None
        per_path = context.view(B, n, H, T, A).permute(1, 0, 3, 2, 4).reshape(n, B * T, H * A)
        out = torch.baddbmm(self.out_bias.unsqueeze(1), per_path, self.out_weight.transpose(1, 2))
        return out.view(n, B, T, D), weights


class FeedForward(nn.Module):
    """U stacked FFNs (the paths of a dense FFN, or the experts): [U, M, D] in, [U, D, M] out."""

    def __init__(self, units, d_model, hidden, activation):
        super().__init__()
        self.activation = activation
        self.w_in = nn.Parameter(torch.zeros(units, hidden, d_model))
        self.b_in = nn.Parameter(torch.zeros(units, hidden))
        self.w_out = nn.Parameter(torch.zeros(units, d_model, hidden))
        self.b_out = nn.Parameter(torch.zeros(units, d_model))

    def each(self, x):
        """x [U, N, D] (unit u's own rows) -> [U, N, D]."""
        h = activate(torch.baddbmm(self.b_in.unsqueeze(1), x, self.w_in.transpose(1, 2)), self.activation)
        return torch.baddbmm(self.b_out.unsqueeze(1), h, self.w_out.transpose(1, 2))

    def unit(self, u, x):
        """x [N, D] through unit u alone -> [N, D]."""
        h = activate(F.linear(x, self.w_in[u], self.b_in[u]), self.activation)
        return F.linear(h, self.w_out[u], self.b_out[u])

    def shared(self, x):
        """x [N, D] through every unit -> [U, N, D]."""
        return self.each(x.unsqueeze(0).expand(self.w_in.shape[0], -1, -1))


class Router(nn.Module):
    def __init__(self, d_model, experts):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(experts, d_model))


class PathCombiner(nn.Module):
    """Y = beta * X + sum_j alpha_j * PathNorm_j(F_j) (docs/model.md, multi-path sublayer)."""

    def __init__(self, c):
        super().__init__()
        n, m = c.paths, c.path_features
        self.paths, self.extra = n, c.path_extra_features
        if c.path_norm:
            self.norm_weight = nn.Parameter(torch.ones(m, c.d_model))
            self.norm_bias = nn.Parameter(torch.zeros(m, c.d_model))
        alpha = torch.full((m,), c.path_weight_value)
        beta = torch.ones(1)
        if c.learnable_path_weights:
            self.alpha = nn.Parameter(alpha)
            self.beta = nn.Parameter(beta)
        else:
            self.register_buffer("alpha", alpha)
            self.register_buffer("beta", beta)

    def forward(self, x, raw):
        features = raw  # [n, B, T, D]
        if self.extra:
            features = torch.cat([raw, (raw.sum(0, keepdim=True) - raw) / (self.paths - 1)], 0)
        if hasattr(self, "norm_weight"):
            m, D = features.shape[0], features.shape[-1]
            features = F.layer_norm(features, (D,), eps=LN_EPS)
            features = features * self.norm_weight.view(m, 1, 1, D) + self.norm_bias.view(m, 1, 1, D)
        return self.beta * x + torch.tensordot(self.alpha, features, dims=([0], [0]))


def expert_capacity(tokens, experts, top_k, capacity_factor):
    """Slots per expert, as WideLab computes them (docs/model.md, "Capacity")."""
    if capacity_factor <= 0:
        return tokens
    ideal = float(top_k) * capacity_factor * float(tokens) / float(experts)
    return min(max(int(math.ceil(ideal - 1e-9)), 1), max(tokens, 1))


def route(x, router_weight, top_k, capacity_factor, priority, renormalize, causal, noise_std=0.0):
    """Routing of S tokens x [S, D] (docs/model.md, "Mixture of experts").

    Returns a dict: logits, probs [S, E]; expert, gates, slot, kept [S, K]; capacity;
    balance_loss, z_loss (scalars).
    """
    S, E, K = x.shape[0], router_weight.shape[0], top_k
    capacity = expert_capacity(S, E, K, capacity_factor)
    logits = x.float() @ router_weight.float().t()
    if noise_std > 0:
        logits = logits + torch.randn_like(logits) * noise_std
    probs = torch.softmax(logits, -1)
    z_loss = torch.logsumexp(logits, -1).square().mean() if S > 0 else logits.sum() * 0.0
    gates, expert = torch.topk(probs, K, -1)
    top1 = gates[:, 0].detach()  # the order of batch priority: before renormalisation
    if renormalize:
        gates = gates / gates.sum(-1, keepdim=True)
    if S > 0:
        share = torch.bincount(expert[:, 0], minlength=E).float() / S
        balance = E * (share * probs.mean(0)).sum()
    else:
        balance = probs.sum() * 0.0
    if priority == "batch":
        order = torch.sort(top1, stable=True, descending=True)[1]
    else:
        order = torch.arange(S)
    # Serve (token, choice) pairs: choice-major (all choices 0, then all 1, ...) or, causal,
    # token-major; each expert numbers its pairs 0, 1, ... in that order.
    ordered = expert.index_select(0, order)  # [S, K]
    queue = (ordered if causal else ordered.t()).reshape(-1)
    sorted_expert, position = torch.sort(queue, stable=True)
    per_expert = torch.bincount(queue, minlength=E)
    first = per_expert.cumsum(0) - per_expert
    rank = torch.arange(queue.numel()) - first.index_select(0, sorted_expert)
    queue_slot = torch.empty_like(queue).scatter_(0, position, rank)
    ordered_slot = queue_slot.view(S, K) if causal else queue_slot.view(K, S).t()
    slot = torch.empty_like(expert).index_copy_(0, order, ordered_slot)
    return {"logits": logits, "probs": probs, "expert": expert, "gates": gates, "slot": slot,
            "kept": slot < capacity, "capacity": capacity, "balance_loss": balance, "z_loss": z_loss}


def dispatch(x, routing, experts):
    """sum over kept choices c of gates[s, c] * expert_e(x[s]), e = expert[s, c]."""
    out = torch.zeros_like(x)
    for e in range(experts.w_in.shape[0]):
        chosen = (routing["expert"] == e) & routing["kept"]  # [S, K], at most one choice per token
        rows = chosen.any(1).nonzero().flatten()
        if rows.numel() == 0:
            continue
        y = experts.unit(e, x.index_select(0, rows))
        weight = (routing["gates"] * chosen.to(routing["gates"].dtype)).sum(1).index_select(0, rows)
        out = out.index_add(0, rows, y * weight.unsqueeze(1).to(y.dtype))
    return out


class WideLabModel(nn.Module):
    """A WideLab model: `model(ids)` or, for image input, `model(pixels)`.

    Built from a ModelConfig (config.py); load the export's tensors with
    `load_state_dict` (widelab.load does both). In evaluation mode (`model.eval()`, as
    widelab.load returns it) it computes what `widelab-cli inspect` does.
    """

    def __init__(self, config):
        super().__init__()
        c = self.config = config
        self.embed = Embedding(c)
        self.attention = nn.ModuleList(Attention(c) for _ in range(1 if c.share_attention else c.layers))
        units = c.experts if c.is_moe else c.paths
        self.ffn = nn.ModuleList(FeedForward(units, c.d_model, c.ffn_dim, c.activation)
                                 for _ in range(1 if c.share_ffn else c.layers))
        routers = (1 if c.share_router else c.layers) if c.is_moe else 0
        self.router = nn.ModuleList(Router(c.d_model, c.experts) for _ in range(routers))
        sets = 1 if c.share_layernorm else c.layers
        self.ln_att = nn.ModuleList(nn.LayerNorm(c.d_model, eps=LN_EPS) for _ in range(sets))
        self.ln_ffn = nn.ModuleList(nn.LayerNorm(c.d_model, eps=LN_EPS) for _ in range(sets))
        paths = sets if c.is_multi_path else 0
        self.path_att = nn.ModuleList(PathCombiner(c) for _ in range(paths))
        self.path_ffn = nn.ModuleList(PathCombiner(c) for _ in range(paths))
        self.final_ln = nn.LayerNorm(c.d_model, eps=LN_EPS)
        if c.head == "classification":
            if c.pooler:
                self.pooler = nn.Linear(c.d_model, c.d_model)
            self.classifier = nn.Linear(c.d_model, c.num_classes)
        else:
            self.lm_head = nn.Linear(c.d_model, c.vocab_size)

    # ---- input checks: the message names what was expected
    def _check_input(self, x, mask):
        c = self.config
        if not torch.is_tensor(x):
            x = torch.tensor(x, dtype=torch.float32 if c.image_input else torch.long)
        if c.image_input:
            if x.dim() == 3:
                x = x.unsqueeze(0)
            expected = "[batch, %d, %d, %d] (model.channels, model.image_size)" % (c.channels, c.image_size, c.image_size)
            if x.dim() != 4 or tuple(x.shape[1:]) != (c.channels, c.image_size, c.image_size) or x.shape[0] < 1:
                raise WideLabError("model input: expected pixels of shape %s, got %s" % (expected, list(x.shape)))
            if not x.is_floating_point():
                raise WideLabError("model input: expected floating-point (normalised) pixels, got %s" % x.dtype)
            if mask is not None:
                raise WideLabError("model input: image input takes no mask (every patch is real)")
            return x.float(), None
        if x.dim() == 1:
            x = x.unsqueeze(0)
            if mask is not None and torch.as_tensor(mask).dim() == 1:
                mask = torch.as_tensor(mask).unsqueeze(0)
        if x.dim() != 2 or x.shape[0] < 1 or x.shape[1] < 1:
            raise WideLabError("model input: expected token ids of shape [batch, length] or [length], got %s"
                               % list(x.shape))
        if x.is_floating_point() or x.dtype == torch.bool:
            raise WideLabError("model input: expected integer token ids, got %s" % x.dtype)
        if x.shape[1] > c.max_len:
            raise WideLabError("model input: %d tokens exceed model.max_len (%d)" % (x.shape[1], c.max_len))
        low, high = int(x.min()), int(x.max())
        if low < 0 or high >= c.vocab_size:
            raise WideLabError("model input: token id %d is outside the vocabulary 0..%d (model.vocab_size)"
                               % (low if low < 0 else high, c.vocab_size - 1))
        if mask is not None:
            mask = torch.as_tensor(mask)
            if tuple(mask.shape) != tuple(x.shape):
                raise WideLabError("model input: the mask's shape %s differs from the ids' shape %s"
                                   % (list(mask.shape), list(x.shape)))
            mask = mask.bool()
        return x.long(), mask

    def forward(self, x, mask=None, attention=True, lens=False):
        """x: token ids [B, T] or [T] (int), or pixels [B, C, S, S] or [C, S, S] (float, normalised);
        mask: [B, T] bool, True for real tokens (tokens only; None: all real);
        attention: record the attention maps; lens: record the logit lens.
        Returns an Output."""
        c = self.config
        x, mask = self._check_input(x, mask)
        out = Output()
        h = self.embed(x)
        B, T, D = h.shape
        valid = None  # [B, T] with the CLS position, None when every token is real
        if mask is not None:
            valid = torch.cat([torch.ones(B, 1, dtype=torch.bool), mask], 1) if c.uses_cls_token else mask
        bias = None
        if valid is not None:
            bias = torch.zeros(B, 1, 1, T).masked_fill(~valid.view(B, 1, 1, T), MASKED)
        if c.causal:
            causal = torch.zeros(1, 1, T, T).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), MASKED)
            bias = causal if bias is None else bias + causal
        token_index = None
        if c.is_moe:
            token_index = valid.reshape(-1).nonzero().flatten() if valid is not None else torch.arange(B * T)
            out.token_index = token_index
        dropout = c.dropout if self.training else 0.0
        h = F.dropout(h, dropout, True) if dropout > 0 else h
        ctx = MixContext(valid, bias, c.causal, dropout, attention)
        out.attention = [] if attention else None
        out.lens = [] if lens else None
        balance = torch.zeros(())
        z_loss = torch.zeros(())
        routing = None
        for i in range(c.layers):
            ln = 0 if c.share_layernorm else i
            attended, weights = self.attention[0 if c.share_attention else i](self.ln_att[ln](h), ctx)
            if attention:
                out.attention.append(weights)
            h = self._sublayer(h, attended, ln, self.path_att, dropout)
            if lens:
                out.lens.append(self._head(self.final_ln(h), valid))
            xf = self.ln_ffn[ln](h).reshape(B * T, D)
            ffn = self.ffn[0 if c.share_ffn else i]
            if c.is_moe:
                tokens = xf.index_select(0, token_index)
                if c.routes_at(i):
                    router = self.router[0 if c.share_router else i]
                    routing = route(tokens, router.weight, c.top_k,
                                    c.capacity_factor if self.training else c.eval_capacity_factor,
                                    c.routing_priority, c.renormalize_gates, c.causal,
                                    c.router_noise_std if self.training else 0.0)
                    balance = balance + routing["balance_loss"]
                    z_loss = z_loss + routing["z_loss"]
                y = dispatch(tokens, routing, ffn)
                out.experts.append(torch.where(routing["kept"], routing["expert"], torch.full_like(routing["expert"], -1)))
                out.gates.append(routing["gates"])
                out.routed.append(c.routes_at(i))
                out.capacity.append(routing["capacity"])
                transformed = torch.zeros_like(xf).index_copy(0, token_index, y).view(1, B, T, D)
            else:
                transformed = ffn.shared(xf).view(c.paths, B, T, D)
            h = self._sublayer(h, transformed, ln, self.path_ffn, dropout)
            if lens:
                out.lens.append(self._head(self.final_ln(h), valid))
        out.logits = self._head(self.final_ln(h), valid)
        out.balance_loss = balance
        out.z_loss = z_loss
        return out

    def _sublayer(self, h, raw, ln, combiners, dropout):
        paths = F.dropout(raw, dropout, True) if dropout > 0 else raw
        if not self.config.is_multi_path:
            return h + paths[0]
        return combiners[ln](h, paths)

    def _head(self, h, valid):
        c = self.config
        if c.head == "language_model":
            return self.lm_head(h)
        if c.pooling == "cls":
            pooled = h[:, 0]
        elif valid is not None:
            weight = valid.to(h.dtype).unsqueeze(-1)
            pooled = (h * weight).sum(1) / weight.sum(1).clamp_min(1.0)
        else:
            pooled = h.mean(1)
        if c.pooler:
            pooled = torch.tanh(self.pooler(pooled))
        return self.classifier(pooled)
