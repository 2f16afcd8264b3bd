"""The Llama-family decoder seen as parts: embed, per-layer projections, RoPE, MLP, head.

Methods that own the forward loop (the bounded caches, Infini-attention) run the model's own
weights layer by layer, because they change what attention sees (which entries, at which
positions, with which counts, plus a compressive memory) and need keys *before* RoPE, which
transformers' caches never hold. Everything here is the model's modules, called in the order
its decoder layer calls them; only attention is the method's.

What differs between families (fused projections, partial rotary, q/k norms, sandwich norms,
query pre-scaling, soft-capping, RoPE per layer type) is read from the family's
`attention_layout.AttentionLayout`; a family without one is refused in one line, rather than run
wrong.
"""

from __future__ import annotations

import torch

from lm_eval_longmem.models.runtime.attention_layout import (  # noqa: F401 - the error is re-exported
    FAMILIES,
    AttentionLayout,
    UnsupportedArchitectureError,
    attention_layout,
)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE on x [..., n, d] with cos/sin [n, r] (the half-rotation convention of Llama); with partial
    rotary (r < d, Phi-3) the first r dims rotate and the rest pass, as the family's own code does."""
    r = cos.shape[-1]
    if r < x.shape[-1]:
        return torch.cat((rotate(x[..., :r], cos, sin), x[..., r:]), dim=-1)
    half = r // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def soft_cap(logits: torch.Tensor, cap: float | None) -> torch.Tensor:
    """Gemma's logit soft-capping cap * tanh(x / cap) (identity without a cap)."""
    return logits if not cap else torch.tanh(logits / cap) * cap


class Decoder:
    def __init__(self, model, methods: str = "Bounded-cache methods (statedclm, streamingllm, longcache)"):
        """`methods` names who needs the decoder, for the error on an unsupported model."""
        config = model.config
        self.layout: AttentionLayout = attention_layout(config, methods)
        self.model = model
        self.body = model.base_model
        self.layers = list(self.body.layers[: config.num_hidden_layers])
        first = self.layers[0].self_attn
        self.head_dim = first.head_dim
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.scaling = first.scaling  # head_dim**-0.5, or Gemma's query_pre_attn_scalar**-0.5
        self.attn_softcap = self.layout.attn_softcap
        self.hidden_size = config.hidden_size
        self.num_layers = len(self.layers)

    @property
    def device(self) -> torch.device:
        return self.body.embed_tokens.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.body.embed_tokens.weight.dtype

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.body.embed_tokens(ids)
        if self.layout.traits.scaled_embedding and not hasattr(self.body.embed_tokens, "embed_scale"):
            # Gemma before transformers 5.3 scales in the model's forward, by sqrt(hidden) cast to the dtype
            x = x * torch.tensor(self.hidden_size**0.5, dtype=x.dtype)
        return x

    def rope(self, num_positions: int, like: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per layer, cos and sin [n, r] for positions 0..n-1 from the model's own rotary module (any rope
        type; r < head_dim with partial rotary). Layers of one type share one table (Gemma 3: two)."""
        positions = torch.arange(num_positions, device=like.device)[None]
        if not self.layout.traits.rope_per_layer_type:
            cos, sin = self.body.rotary_emb(like, positions)
            return [(cos[0], sin[0])] * self.num_layers
        tables = {}
        for kind in set(self.layout.layer_types):
            cos, sin = self.body.rotary_emb(like, positions, kind)
            tables[kind] = (cos[0], sin[0])
        return [tables[kind] for kind in self.layout.layer_types]

    def project(self, layer_index: int, x: torch.Tensor):
        """Pre-RoPE q [H, c, d], k and v [Hkv, c, d] of one layer for hidden states x [c, hidden]."""
        attn = self.layers[layer_index].self_attn
        c = x.shape[0]
        if self.layout.traits.fused_qkv:  # Phi-3: q, then k, then v in one projection
            q_size, kv_size = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
            q, k, v = attn.qkv_proj(x).split([q_size, kv_size, kv_size], dim=-1)
        else:
            q, k, v = attn.q_proj(x), attn.k_proj(x), attn.v_proj(x)
        q, k, v = (t.view(c, -1, self.head_dim) for t in (q, k, v))
        if self.layout.traits.qk_norm:  # Qwen3, Gemma 3 normalize q and k per head before RoPE
            q, k = attn.q_norm(q), attn.k_norm(k)
        return q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)

    def attention_input(self, layer_index: int, x: torch.Tensor) -> torch.Tensor:
        return self.layers[layer_index].input_layernorm(x)

    def attention_output(self, layer_index: int, heads: torch.Tensor) -> torch.Tensor:
        """o_proj of the attention result heads [H, c, d] -> [c, hidden] (Gemma: then its post-attention norm)."""
        c = heads.shape[1]
        layer = self.layers[layer_index]
        out = layer.self_attn.o_proj(heads.transpose(0, 1).reshape(c, -1))
        if self.layout.traits.sandwich_norms:
            out = layer.post_attention_layernorm(out)
        return out

    def mlp_block(self, layer_index: int, x: torch.Tensor) -> torch.Tensor:
        layer = self.layers[layer_index]
        if self.layout.traits.sandwich_norms:
            return x + layer.post_feedforward_layernorm(layer.mlp(layer.pre_feedforward_layernorm(x)))
        return x + layer.mlp(layer.post_attention_layernorm(x))

    def final_norm(self, x: torch.Tensor) -> torch.Tensor:
        return self.body.norm(x)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return soft_cap(self.model.get_output_embeddings()(hidden), self.layout.final_softcap)
