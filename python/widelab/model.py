"""The WideLab model as a torch.nn.Module (docs/model.md, "Forward pass").

Parameter and buffer names are the export's (docs/model.md, "Parameter names"), so
`model.load_state_dict(torch.load("model.pt", weights_only=False))` fills it.
"""

import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import MASKED, Full, MixContext, make_mechanism
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

    A translation model's: logits [B, T', vocab_size], one row per target position; attention,
    experts, gates, routed, capacity and token_index are the encoder's (as `widelab-cli
    inspect` shows them); lens is the decoder's, three per block (self-attention at 3i,
    cross-attention at 3i+1, FFN at 3i+2); balance_loss and z_loss sum both sides'; and
    `decoder` is an Output of the decoder's: attention [B, n*H, T', T'] (n = decoder_paths),
    cross_attention [B, n*H, T', S], experts, gates, routed, capacity, token_index (over
    [B*T']), balance_loss, z_loss (logits and lens None).
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
        self.cross_attention = None
        self.decoder = None

    def __repr__(self):
        return "widelab.Output(logits %s, %s attention maps, %d routing blocks%s)" % (
            None if self.logits is None else tuple(self.logits.shape),
            "no" if self.attention is None else len(self.attention), len(self.experts),
            "" if self.decoder is None else ", decoder %r" % self.decoder)


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
        if c.segments > 0:  # text pairs: the separator is the last id, and ends its segment
            self.segment = nn.Embedding(c.segments, c.d_model)
            self.separator = c.vocab_size - 1

    def forward(self, x, start=0):
        """x: ids [B, T] or pixels; start: the position of the first token (a decoding step's)."""
        if hasattr(self, "patch"):
            h = self.patch(x).flatten(2).transpose(1, 2)  # [B, G*G, D], patch (r, c) at r*G + c
        else:
            h = self.token(x)
            if hasattr(self, "project"):
                h = self.project(h)
            if hasattr(self, "segment"):
                ends = (x == self.separator).long()
                h = h + self.segment((ends.cumsum(1) - ends).clamp(max=self.segment.num_embeddings - 1))
        if hasattr(self, "cls"):
            h = torch.cat([self.cls.expand(h.shape[0], 1, h.shape[2]), h], 1)
        return h + self.position.weight[start: start + h.shape[1]].unsqueeze(0)


def project_paths(context, out_weight, out_bias):
    """Every path's output projection: context [B, n*H, T, A] (head p*H + h) -> [n, B, T, D]."""
    B, _, T, A = context.shape
    n, D, width = out_weight.shape
    per_path = context.view(B, n, width // A, T, A).permute(1, 0, 3, 2, 4).reshape(n, B * T, width)
    return torch.baddbmm(out_bias.unsqueeze(1), per_path, out_weight.transpose(1, 2)).view(n, B, T, D)


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

    def forward(self, x, ctx, cache=None):
        """x [B, T, D] -> (per-path outputs [n, B, T, D], maps [B, n*H, T, T'] or None).

        cache: a decoding step's (a decoder's causal full attention): a dict holding the
        keys and values [B, n*H, t, A] of the t earlier positions ("k", "v"; empty at the
        first step). x's positions attend to those and to themselves, and are added to it."""
        B, T, D = x.shape
        n, H, A = self.paths, self.heads, self.head_dim
        q, k, v = self.qkv(x).view(B, T, 3, n * H, A).permute(2, 0, 3, 1, 4)  # each [B, n*H, T, A]
        if cache is not None:
            if self.groups != [list(range(n * H))] or not isinstance(self.mix[0], Full):
                raise WideLabError("cached decoding steps need a layer of full attention")
            if "k" in cache:
                k = torch.cat([cache["k"], k], 2)
                v = torch.cat([cache["v"], v], 2)
            cache["k"], cache["v"] = k, v
        contexts, maps = [], []
        for heads, mechanism in zip(self.groups, self.mix):
            index = torch.tensor(heads)
            context, attention_map = mechanism.mix(q.index_select(1, index), k.index_select(1, index),
                                                   v.index_select(1, index), ctx)
            contexts.append(context)
            maps.append(attention_map)
        context = torch.cat(contexts, 1).index_select(1, self._unmix)  # [B, n*H, T, A] in head order
        weights = torch.cat(maps, 1).index_select(1, self._unmix) if ctx.want_map else None
        return project_paths(context, self.out_weight, self.out_bias), weights


class CrossAttention(nn.Module):
    """A decoder's attention to the encoder's output (docs/model.md, "Encoder-decoder"):
    queries from the decoder's tokens, keys and values from the memory, every head of
    every path with the full mechanism's softmax, each path its own output projection.
    q rows (path, head, a); kv rows (k or v, path, head, a)."""

    def __init__(self, c):
        super().__init__()
        n, H, A, D = c.paths, c.heads, c.head_dim, c.d_model
        self.heads, self.head_dim = n * H, A
        self.q = nn.Linear(D, n * H * A)
        self.kv = nn.Linear(D, 2 * n * H * A)
        self.out_weight = nn.Parameter(torch.zeros(n, D, H * A))
        self.out_bias = nn.Parameter(torch.zeros(n, D))
        self.mix = make_mechanism("full", n * H, A, c.positions, {})

    def keys_values(self, memory):
        """The memory [B, S, D] projected once: [2, B, n*H, S, A], keys then values."""
        B, S, _ = memory.shape
        return self.kv(memory).view(B, S, 2, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)

    def forward(self, x, kv, ctx):
        """x [B, T, D]; kv: keys_values(memory); ctx: the source's mask (key_valid [B, S],
        bias [B, 1, 1, S]). Returns (per-path outputs [n, B, T, D], maps [B, n*H, T, S] or None)."""
        B, T, _ = x.shape
        q = self.q(x).view(B, T, self.heads, self.head_dim).transpose(1, 2)  # [B, n*H, T, A]
        context, weights = self.mix.mix(q, kv[0], kv[1], ctx)
        return project_paths(context, self.out_weight, self.out_bias), weights


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


# ---------------------------------------------------------------- one side's blocks


def add_blocks(owner, c, cross=False):
    """Registers one side's blocks on `owner` under the export's names (docs/model.md,
    "Parameter names"): attention, ffn, router, ln_att, ln_ffn, path_att, path_ffn, and for
    a decoder (`cross`) cross, ln_cross, path_cross. `c` gives the depth and every knob:
    the model's configuration for the encoder, config.decoder_side() for a decoder.
    Cross-attention is shared across blocks as self-attention is, with its own
    LayerNorms and path combiners."""
    modules = 1 if c.share_attention else c.layers
    owner.attention = nn.ModuleList(Attention(c) for _ in range(modules))
    units = c.experts if c.is_moe else c.paths
    owner.ffn = nn.ModuleList(FeedForward(units, c.d_model, c.ffn_dim, c.activation)
                              for _ in range(1 if c.share_ffn else c.layers))
    routers = (1 if c.share_router else c.layers) if c.is_moe else 0
    owner.router = nn.ModuleList(Router(c.d_model, c.experts) for _ in range(routers))
    sets = 1 if c.share_layernorm else c.layers
    owner.ln_att = nn.ModuleList(nn.LayerNorm(c.d_model, eps=LN_EPS) for _ in range(sets))
    owner.ln_ffn = nn.ModuleList(nn.LayerNorm(c.d_model, eps=LN_EPS) for _ in range(sets))
    paths = sets if c.is_multi_path else 0
    owner.path_att = nn.ModuleList(PathCombiner(c) for _ in range(paths))
    owner.path_ffn = nn.ModuleList(PathCombiner(c) for _ in range(paths))
    if cross:
        owner.cross = nn.ModuleList(CrossAttention(c) for _ in range(modules))
        owner.ln_cross = nn.ModuleList(nn.LayerNorm(c.d_model, eps=LN_EPS) for _ in range(sets))
        owner.path_cross = nn.ModuleList(PathCombiner(c) for _ in range(paths))


def attention_bias(valid, B, T, causal):
    """The additive mask of a sequence's keys: padding (valid [B, T] False) and, causal, the
    future; broadcastable to [B, 1, T, T]; None when nothing is masked."""
    bias = None
    if valid is not None:
        bias = torch.zeros(B, 1, 1, T).masked_fill(~valid.view(B, 1, 1, T), MASKED)
    if causal:
        future = torch.zeros(1, 1, T, T).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), MASKED)
        bias = future if bias is None else bias + future
    return bias


class StackPass:
    """What one pass through a side's blocks reads.

    valid: [B, T] bool or None (every token real); bias: self-attention's additive mask;
    token_index: MoE only, the flat [B*T] positions routed; dropout: the probability
    (0 in evaluation); want_map: record the attention maps; after: called with the
    residual stream after every sublayer (the logit lens), or None.
    A decoder's: memory, each cross-attention module's keys and values of the encoder's
    output (CrossAttention.keys_values); memory_ctx, the source's mask as a MixContext;
    caches, a decoding step's per-block self-attention caches (Attention.forward)."""

    def __init__(self, valid, bias, token_index, dropout, training, want_map, after=None, memory=None,
                 memory_ctx=None, caches=None):
        self.valid = valid
        self.bias = bias
        self.token_index = token_index
        self.dropout = dropout
        self.training = training
        self.want_map = want_map
        self.after = after
        self.memory = memory
        self.memory_ctx = memory_ctx
        self.caches = caches


def combine(c, h, raw, combiners, ln, dropout):
    """The residual after a sublayer: h + F for one plain path, the path combiner otherwise."""
    paths = F.dropout(raw, dropout, True) if dropout > 0 else raw
    if not c.is_multi_path:
        return h + paths[0]
    return combiners[ln](h, paths)


def run_blocks(owner, c, h, p, record):
    """h [B, T, D] through the blocks add_blocks(owner, c, ...) registered: pre-LN
    self-attention, then (a decoder) cross-attention to p.memory, then the FFN or experts,
    each combined with the residual. Appends to `record` (an Output): attention maps
    (record.attention unless None), cross-attention maps (record.cross_attention unless
    None), expert choices, gates, routing flags and capacities; adds the routing calls'
    losses to record.balance_loss and record.z_loss. Returns the residual stream."""
    B, T, D = h.shape
    ctx = MixContext(p.valid, p.bias, c.causal, p.dropout, p.want_map)
    if record.balance_loss is None:
        record.balance_loss = torch.zeros(())
        record.z_loss = torch.zeros(())
    routing = None
    for i in range(c.layers):
        ln = 0 if c.share_layernorm else i
        shared = 0 if c.share_attention else i
        cache = None if p.caches is None else p.caches[i]
        attended, weights = owner.attention[shared](owner.ln_att[ln](h), ctx, cache)
        if record.attention is not None:
            record.attention.append(weights)
        h = combine(c, h, attended, owner.path_att, ln, p.dropout)
        if p.after is not None:
            p.after(h)
        if p.memory is not None:
            read, weights = owner.cross[shared](owner.ln_cross[ln](h), p.memory[shared], p.memory_ctx)
            if record.cross_attention is not None:
                record.cross_attention.append(weights)
            h = combine(c, h, read, owner.path_cross, ln, p.dropout)
            if p.after is not None:
                p.after(h)
        xf = owner.ln_ffn[ln](h).reshape(B * T, D)
        ffn = owner.ffn[0 if c.share_ffn else i]
        if c.is_moe:
            tokens = xf.index_select(0, p.token_index)
            if c.routes_at(i):
                router = owner.router[0 if c.share_router else i]
                routing = route(tokens, router.weight, c.top_k,
                                c.capacity_factor if p.training else c.eval_capacity_factor,
                                c.routing_priority, c.renormalize_gates, c.causal,
                                c.router_noise_std if p.training else 0.0)
                record.balance_loss = record.balance_loss + routing["balance_loss"]
                record.z_loss = record.z_loss + routing["z_loss"]
            y = dispatch(tokens, routing, ffn)
            record.experts.append(torch.where(routing["kept"], routing["expert"],
                                              torch.full_like(routing["expert"], -1)))
            record.gates.append(routing["gates"])
            record.routed.append(c.routes_at(i))
            record.capacity.append(routing["capacity"])
            transformed = torch.zeros_like(xf).index_copy(0, p.token_index, y).view(1, B, T, D)
        else:
            transformed = ffn.shared(xf).view(c.paths, B, T, D)
        h = combine(c, h, transformed, owner.path_ffn, ln, p.dropout)
        if p.after is not None:
            p.after(h)
    return h


def _routed_tokens(c, valid, B, T):
    """MoE only: the flat [B*T] positions of the real tokens, which alone are routed."""
    if not c.is_moe:
        return None
    return valid.reshape(-1).nonzero().flatten() if valid is not None else torch.arange(B * T)


class Decoder(nn.Module):
    """A translation model's decoder (parameters under "decoder."): its blocks, with
    cross-attention, built from config.decoder_side(), and its final LayerNorm."""

    def __init__(self, side):
        super().__init__()
        self.config = side
        add_blocks(self, side, cross=True)
        self.final_ln = nn.LayerNorm(side.d_model, eps=LN_EPS)


class DecoderState:
    """A cached decoding loop's state (WideLabModel.begin_decoding): the encoder's output
    projected once for every cross-attention module, the source's mask, each decoder
    block's self-attention keys and values so far, and the positions decoded."""

    def __init__(self, memory, memory_ctx, blocks):
        self.memory = memory
        self.memory_ctx = memory_ctx
        self.caches = [{} for _ in range(blocks)]
        self.length = 0


# ---------------------------------------------------------------- the model


class WideLabModel(nn.Module):
    """A WideLab model: `model(ids)` or, for image input, `model(pixels)`; a translation
    model: `model(source_ids, target=decoder_input_ids)`, `model.translate(texts)`.

    Built from a ModelConfig (config.py); load the export's tensors with
    `load_state_dict` (widelab.load does both). In evaluation mode (`model.eval()`, as
    widelab.load returns it) it computes what `widelab-cli inspect` does.
    """

    def __init__(self, config):
        super().__init__()
        c = self.config = config
        self.embed = Embedding(c)
        add_blocks(self, c)
        self.final_ln = nn.LayerNorm(c.d_model, eps=LN_EPS)
        self.tokenizer = None  # widelab.load sets the run's; translate() uses it by default
        if c.translation:
            # The output is tied to the token embedding: no head of its own.
            self.decoder = Decoder(c.decoder_side())
        elif c.head == "classification":
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
        return self._check_tokens(x, mask, "model input")

    def _check_tokens(self, x, mask, what):
        """Token ids [B, T] or [T] (a batch of one) and their mask; `what` names them in messages."""
        c = self.config
        if not torch.is_tensor(x):
            x = torch.tensor(x, dtype=torch.long)
        if x.dim() == 1:
            x = x.unsqueeze(0)
            if mask is not None and torch.as_tensor(mask).dim() == 1:
                mask = torch.as_tensor(mask).unsqueeze(0)
        if x.dim() != 2 or x.shape[0] < 1 or x.shape[1] < 1:
            raise WideLabError("%s: expected token ids of shape [batch, length] or [length], got %s"
                               % (what, list(x.shape)))
        if x.is_floating_point() or x.dtype == torch.bool:
            raise WideLabError("%s: expected integer token ids, got %s" % (what, x.dtype))
        if x.shape[1] > c.max_len:
            raise WideLabError("%s: %d tokens exceed model.max_len (%d)" % (what, x.shape[1], c.max_len))
        low, high = int(x.min()), int(x.max())
        if low < 0 or high >= c.vocab_size:
            raise WideLabError("%s: token id %d is outside the vocabulary 0..%d (model.vocab_size)"
                               % (what, low if low < 0 else high, c.vocab_size - 1))
        if mask is not None:
            mask = torch.as_tensor(mask)
            if tuple(mask.shape) != tuple(x.shape):
                raise WideLabError("%s: the mask's shape %s differs from the ids' shape %s"
                                   % (what, list(mask.shape), list(x.shape)))
            mask = mask.bool()
        return x.long(), mask

    def forward(self, x, mask=None, attention=True, lens=False, target=None, target_mask=None):
        """x: token ids [B, T] or [T] (int), or pixels [B, C, S, S] or [C, S, S] (float, normalised);
        mask: [B, T] bool, True for real tokens (tokens only; None: all real);
        attention: record the attention maps; lens: record the logit lens;
        target, target_mask: a translation model's decoder input (the target shifted right
        behind <s>), [B, T'] or [T'] ids, and its mask (None: all real); x is then the source.
        Returns an Output."""
        c = self.config
        x, mask = self._check_input(x, mask)
        if c.translation and target is None:
            raise WideLabError("translation model input: the decoder's target ids are missing (target=)")
        if not c.translation and (target is not None or target_mask is not None):
            raise WideLabError("model input: only a translation model takes target ids (model.head is \"%s\")"
                               % c.head)
        out = Output()
        out.attention = [] if attention else None
        out.lens = [] if lens else None
        if not c.translation:
            h, valid = self._encode(x, mask, out, lens)
            out.logits = self._head(self.final_ln(h), valid)
            return out
        target, target_mask = self._check_tokens(target, target_mask, "translation target")
        if target.shape[0] != x.shape[0]:
            raise WideLabError("translation model input: %d targets for %d sources" % (target.shape[0], x.shape[0]))
        h, valid = self._encode(x, mask, out, False)
        out.logits = self._decode(self.final_ln(h), valid, target, target_mask, out, attention, lens)
        return out

    def _encode(self, x, mask, out, lens):
        """The encoder: (residual stream after its blocks [B, T', D], valid [B, T'] or None)."""
        c = self.config
        h = self.embed(x)
        B, T, _ = h.shape
        valid = None  # [B, T] with the CLS position, None when every token is real
        if mask is not None:
            valid = torch.cat([torch.ones(B, 1, dtype=torch.bool), mask], 1) if c.uses_cls_token else mask
        token_index = _routed_tokens(c, valid, B, T)
        out.token_index = token_index
        dropout = c.dropout if self.training else 0.0
        h = F.dropout(h, dropout, True) if dropout > 0 else h
        after = None
        if lens:
            def after(now):
                out.lens.append(self._head(self.final_ln(now), valid))
        p = StackPass(valid, attention_bias(valid, B, T, c.causal), token_index, dropout, self.training,
                      out.attention is not None, after)
        return run_blocks(self, c, h, p, out), valid

    def _decode(self, memory, source_valid, target, target_mask, out, attention, lens):
        """The decoder's logits [B, T', V] for the encoder's output `memory` [B, S, D]; its
        record in out.decoder, its logit lens in out.lens, its losses added to out's."""
        side = self.decoder.config
        h = self.embed(target)
        B, T, _ = h.shape
        dropout = side.dropout if self.training else 0.0
        record = out.decoder = Output()
        record.attention = [] if attention else None
        record.cross_attention = [] if attention else None
        record.token_index = _routed_tokens(side, target_mask, B, T)
        after = None
        if lens:
            def after(now):
                out.lens.append(self._tied(self.decoder.final_ln(now)))
        source_bias = attention_bias(source_valid, B, memory.shape[1], False)
        p = StackPass(target_mask, attention_bias(target_mask, B, T, True), record.token_index, dropout,
                      self.training, attention, after,
                      memory=[cross.keys_values(memory) for cross in self.decoder.cross],
                      memory_ctx=MixContext(source_valid, source_bias, False, dropout, attention))
        h = F.dropout(h, dropout, True) if dropout > 0 else h
        h = run_blocks(self.decoder, side, h, p, record)
        if out.balance_loss is None:
            out.balance_loss, out.z_loss = record.balance_loss, record.z_loss
        else:
            out.balance_loss = out.balance_loss + record.balance_loss
            out.z_loss = out.z_loss + record.z_loss
        return self._tied(self.decoder.final_ln(h))

    def _tied(self, h):
        """A translation model's output: its token embedding's transpose, no bias."""
        return torch.matmul(h, self.embed.token.weight.t())

    def _head(self, h, valid):
        c = self.config
        if c.translation:
            return self._tied(h)
        if c.head in ("language_model", "masked_lm"):  # a logit row per position
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

    # ---- decoding (translation models, evaluation mode)
    def _check_decoding(self):
        if not self.config.translation:
            raise WideLabError("decoding: the model is not a translation model (model.head is \"%s\", not "
                               "\"translation\")" % self.config.head)
        if self.training:
            raise WideLabError("decoding: the model is in training mode; call eval() first")

    def begin_decoding(self, source, mask=None):
        """A cached decoding loop over a source ([B, S] or [S] ids, mask [B, S] or None):
        the source encoded once; then decode_step gives each position's logits."""
        self._check_decoding()
        source, mask = self._check_tokens(source, mask, "model input")
        with torch.no_grad():
            record = Output()
            h, valid = self._encode(source, mask, record, False)
            memory = self.final_ln(h)
            ctx = MixContext(valid, attention_bias(valid, memory.shape[0], memory.shape[1], False), False, 0.0, False)
            kv = [cross.keys_values(memory) for cross in self.decoder.cross]
        return DecoderState(kv, ctx, self.decoder.config.layers)

    def decode_step(self, state, tokens):
        """The logits [B, V] that follow `tokens` ([B] ids, the first step's the start token)
        at the next position, the earlier positions' keys and values read from `state` and
        this one's added. Every target token is real; a mixture of experts routes this
        step's B tokens (as WideLab's cached decoding does)."""
        self._check_decoding()
        side = self.decoder.config
        ids, _ = self._check_tokens(torch.as_tensor(tokens).reshape(-1, 1), None, "decoding step")
        if state.length >= side.max_len:
            raise WideLabError("decoding: step %d is past model.max_len (%d)" % (state.length + 1, side.max_len))
        with torch.no_grad():
            h = self.embed(ids, state.length)
            B = ids.shape[0]
            record = Output()
            p = StackPass(None, None, _routed_tokens(side, None, B, 1), 0.0, False, False,
                          memory=state.memory, memory_ctx=state.memory_ctx, caches=state.caches)
            h = run_blocks(self.decoder, side, h, p, record)
            state.length += 1
            return self._tied(self.decoder.final_ln(h))[:, 0]

    def greedy_decode(self, source, mask=None, max_length=None, start_id=2, end_id=3, cache=True, vocabulary=None):
        """The greedy translation of each source (ids [B, S] or [S], mask [B, S] or None) as a
        list of id lists, without the start and end tokens, as WideLab's greedyDecode makes
        them: the decoder starts from `start_id` and takes the most likely token, until
        `end_id` (not part of the translation) or max_length tokens (None or 0, or more
        than model.max_len: model.max_len). cache: reuse each position's keys and values
        (False: run the decoder over the whole prefix at every step). vocabulary: no id at
        or above it is written (the tokenizer's vocab_size, which a bpe of fewer merges
        than model.vocab_size allows leaves short of the output's rows); None: every row."""
        self._check_decoding()
        c = self.config
        for name, value in (("start_id", start_id), ("end_id", end_id)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < c.vocab_size:
                raise WideLabError("decoding: %s %r is not a token id 0..%d (model.vocab_size)"
                                   % (name, value, c.vocab_size - 1))
        if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int)
                                       or max_length < 0):
            raise WideLabError("decoding: max_length must be an integer >= 0 (0: model.max_len), got %r"
                               % (max_length,))
        limit = max_length if max_length and max_length < c.max_len else c.max_len
        source, mask = self._check_tokens(source, mask, "model input")
        B = source.shape[0]
        with torch.no_grad():
            if cache:
                state = self.begin_decoding(source, mask)
            else:
                record = Output()
                h, valid = self._encode(source, mask, record, False)
                memory = self.final_ln(h)
            prefix = torch.full((B, 1), start_id, dtype=torch.long)
            out = [[] for _ in range(B)]
            finished = [False] * B
            for t in range(limit):
                if all(finished):
                    break
                if cache:
                    logits = self.decode_step(state, prefix[:, t])
                else:
                    logits = self._decode(memory, valid, prefix, None, Output(), False, False)[:, t]
                if vocabulary is not None and vocabulary < logits.shape[-1]:
                    logits = logits[..., :vocabulary]
                chosen = logits.argmax(-1)
                for b, token in enumerate(chosen.tolist()):
                    if finished[b]:
                        continue
                    if token == end_id:
                        finished[b] = True
                    else:
                        out[b].append(token)
                prefix = torch.cat([prefix, chosen.unsqueeze(1)], 1)
        return out

    def translate(self, texts, tokenizer=None, max_length=None, batch_size=32, cache=True):
        """Greedy translations of `texts` (a str, or a list of str) as `widelab-cli translate`
        makes them: each text encoded by the run's tokenizer (`tokenizer`, None: the one
        widelab.load found) and cut to model.max_len tokens (with a warning); the texts
        decoded `batch_size` at a time in order, padded to the batch's longest, each batch
        at most its longest source + 50 tokens (and max_length, when given); an empty
        text translates to "". Returns a str for a str, else a list."""
        self._check_decoding()
        c = self.config
        tokenizer = tokenizer if tokenizer is not None else self.tokenizer
        if tokenizer is None:
            raise WideLabError("translate: no tokenizer (widelab.load gives the run's; pass tokenizer=)")
        if tokenizer.start_id is None or tokenizer.end_id is None:
            raise WideLabError("translate: the run's %s tokenizer has no start and end tokens" % tokenizer.kind)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise WideLabError("translate: batch_size must be an integer >= 1, got %r" % (batch_size,))
        single = isinstance(texts, (str, bytes))
        texts = [texts] if single else list(texts)
        sources, lines = [], []
        for i, text in enumerate(texts):
            ids = tokenizer.encode_list(text, truncate=False)
            if not ids:
                continue
            if len(ids) > c.max_len:
                warnings.warn("text %d has %d tokens; the model reads %d (model.max_len), the rest is not translated"
                              % (i, len(ids), c.max_len))
                ids = ids[: c.max_len]
            sources.append(ids)
            lines.append(i)
        translations = [""] * len(texts)
        for start in range(0, len(sources), batch_size):
            batch = sources[start: start + batch_size]
            longest = max(len(ids) for ids in batch)
            ids = torch.zeros(len(batch), longest, dtype=torch.long)
            mask = torch.zeros(len(batch), longest, dtype=torch.bool)
            for b, source in enumerate(batch):
                ids[b, : len(source)] = torch.tensor(source, dtype=torch.long)
                mask[b, : len(source)] = True
            padded = any(len(source) < longest for source in batch)
            limit = min(max_length, longest + 50) if max_length else longest + 50
            decoded = self.greedy_decode(ids, mask if padded else None, limit, tokenizer.start_id,
                                         tokenizer.end_id, cache, tokenizer.vocab_size)
            for k, translation in enumerate(decoded):
                translations[lines[start + k]] = tokenizer.decode(translation)
        return translations[0] if single else translations
