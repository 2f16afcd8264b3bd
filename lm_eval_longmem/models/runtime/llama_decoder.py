"""The Llama-family decoder seen as parts: embed, per-layer projections, RoPE, MLP, head.

Methods that own the forward loop (the bounded caches, Infini-attention) run the model's own
weights layer by layer, because they change what attention sees (which entries, at which
positions, with which counts, plus a compressive memory) and need keys *before* RoPE, which
transformers' caches never hold. Everything here is the model's modules, called in the order
its decoder layer calls them; only attention is the method's.

Supported: architectures whose decoder layer is `x + attn(norm(x))`, `x + mlp(norm(x))` with
q/k/v/o projections and rotary embeddings (Llama, Mistral, Qwen2, Qwen3 with its q/k norms,
SmolLM2, ...). Anything else is refused with the list, rather than silently run wrong.
"""

from __future__ import annotations

import torch

from lm_eval_longmem.errors import LongMemError

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3")


class UnsupportedArchitectureError(LongMemError, ValueError):
    """The model's decoder is not one the layer-by-layer loop knows how to run."""


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE on x [..., n, d] with cos/sin [n, d] (the half-rotation convention of Llama)."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class Decoder:
    def __init__(self, model, methods: str = "Bounded-cache methods (statedclm, streamingllm, longcache)"):
        """`methods` names who needs the decoder, for the error on an unsupported model."""
        config = model.config
        model_type = getattr(config, "model_type", None)
        if model_type not in SUPPORTED_MODEL_TYPES:
            raise UnsupportedArchitectureError(
                f"{methods} run Llama-family decoders "
                f"({', '.join(SUPPORTED_MODEL_TYPES)}); this model is {model_type!r}. Use method=vanilla "
                "or a model of a supported family."
            )
        self.model = model
        self.body = model.base_model
        self.layers = list(self.body.layers[: config.num_hidden_layers])
        first = self.layers[0].self_attn
        self.head_dim = first.head_dim
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.scaling = first.scaling
        self.hidden_size = config.hidden_size
        self.num_layers = len(self.layers)

    @property
    def device(self) -> torch.device:
        return self.body.embed_tokens.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.body.embed_tokens.weight.dtype

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.body.embed_tokens(ids)

    def rope(self, num_positions: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin [n, d] for positions 0..n-1, from the model's own rotary module (any rope type)."""
        positions = torch.arange(num_positions, device=like.device)[None]
        cos, sin = self.body.rotary_emb(like, positions)
        return cos[0], sin[0]

    def project(self, layer_index: int, x: torch.Tensor):
        """Pre-RoPE q [H, c, d], k and v [Hkv, c, d] of one layer for hidden states x [c, hidden]."""
        attn = self.layers[layer_index].self_attn
        c = x.shape[0]
        q = attn.q_proj(x).view(c, -1, self.head_dim)
        k = attn.k_proj(x).view(c, -1, self.head_dim)
        v = attn.v_proj(x).view(c, -1, self.head_dim)
        if hasattr(attn, "q_norm"):  # Qwen3 normalizes q and k per head before RoPE
            q, k = attn.q_norm(q), attn.k_norm(k)
        return q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)

    def attention_input(self, layer_index: int, x: torch.Tensor) -> torch.Tensor:
        return self.layers[layer_index].input_layernorm(x)

    def attention_output(self, layer_index: int, heads: torch.Tensor) -> torch.Tensor:
        """o_proj of the attention result heads [H, c, d] -> [c, hidden]."""
        c = heads.shape[1]
        return self.layers[layer_index].self_attn.o_proj(heads.transpose(0, 1).reshape(c, -1))

    def mlp_block(self, layer_index: int, x: torch.Tensor) -> torch.Tensor:
        layer = self.layers[layer_index]
        return x + layer.mlp(layer.post_attention_layernorm(x))

    def final_norm(self, x: torch.Tensor) -> torch.Tensor:
        return self.body.norm(x)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.model.get_output_embeddings()(hidden)
