"""Forgetting Transformer models for transformers 5 (same module tree as the official code).

Module/parameter tree (official, so the released weights load without conversion):
`model.embeddings`, `model.layers.N.{attn_norm, attn, mlp_norm, mlp}`, `model.norm`, `lm_head`;
the block is pre-norm: `h = x + attn(attn_norm(x))`, `out = h + mlp(mlp_norm(h))`; the MLP is a
GLU whose `gate_proj` outputs [gate, value] halves, `down_proj(act(gate) * value)`.

Differences from the official class, all at the interface: it generates on transformers 5 (a
`GenerationMixin` with a `Cache` of FoX layers), takes `logits_to_keep`, and its `labels` follow
the transformers convention (shifted inside, mean over tokens not equal to -100) where the
official returns the unreduced loss of already-shifted labels.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from transformers import GenerationMixin, PreTrainedModel
from transformers import initialization as init
from transformers.cache_utils import Cache
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast

from ..runtime.cache_argument import CACHE_FIELD  # forward takes both names; outputs use the installed version's
from .attention import ForgettingAttentionLayer
from .cache_fox import ForgettingTransformerCache, as_fox_cache
from .configuration_fox import ForgettingTransformerConfig, TransformerBaselineConfig
from .forget_gate import initial_fgate_bias
from .norms import HeadwiseRMSNorm, RMSNorm


class ForgettingTransformerMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        width = config.mlp_width
        self.gate_proj = nn.Linear(config.hidden_size, 2 * width, bias=False)
        self.down_proj = nn.Linear(width, config.hidden_size, bias=False)
        self.activation = torch.sigmoid if config.hidden_act == "sigmoid" else F.silu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, value = self.gate_proj(x).chunk(2, dim=-1)
        return self.down_proj(self.activation(gate) * value)


class ForgettingTransformerBlock(GradientCheckpointingLayer):
    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.attn_norm = RMSNorm(config.hidden_size, eps=config.norm_eps)
        self.attn = ForgettingAttentionLayer(config, layer_idx)
        self.mlp_norm = RMSNorm(config.hidden_size, eps=config.norm_eps)
        self.mlp = ForgettingTransformerMLP(config)

    def forward(
        self,
        hidden_states: torch.Tensor,
        past_key_values: Cache | None = None,
        seq_start: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        cache_layer = None if past_key_values is None else past_key_values.layers[self.layer_idx]
        attended = self.attn(self.attn_norm(hidden_states), cache_layer, seq_start, positions)
        normed, hidden_states = self.mlp_norm.add_and_normalize(attended, hidden_states)
        return hidden_states + self.mlp(normed)


def left_padding_starts(attention_mask: torch.Tensor | None, total_length: int) -> torch.Tensor | None:
    """Per row, the index of the first real token of a left-padded `attention_mask [B, past+T]`;
    None when nothing is padded. Masks with holes elsewhere are rejected (the kernel masks a
    prefix of keys only)."""
    if attention_mask is None:
        return None
    if attention_mask.dim() != 2 or attention_mask.shape[1] != total_length:
        raise ValueError(
            f"FoX takes a 2D attention_mask over cached + new tokens ({total_length}), got shape "
            f"{tuple(attention_mask.shape)}"
        )
    real = attention_mask.bool()
    seq_start = (~real).sum(dim=-1)
    left_padded = torch.arange(total_length, device=real.device)[None, :] >= seq_start[:, None]
    if not torch.equal(real, left_padded):
        raise ValueError("FoX supports left padding only: each attention_mask row must be zeros followed by ones")
    return seq_start if bool(seq_start.any()) else None


def keep_last_positions(hidden_states: torch.Tensor, logits_to_keep: int | torch.Tensor) -> torch.Tensor:
    """transformers' `logits_to_keep`: an int keeps the last n positions (0: all), a tensor
    selects positions."""
    if isinstance(logits_to_keep, int):
        return hidden_states if logits_to_keep == 0 else hidden_states[:, -logits_to_keep:]
    return hidden_states[:, logits_to_keep]


class ForgettingTransformerPreTrainedModel(PreTrainedModel):
    config_class = ForgettingTransformerConfig
    config: ForgettingTransformerConfig
    base_model_prefix = "model"
    supports_gradient_checkpointing = True
    _no_split_modules = ["ForgettingTransformerBlock"]
    _skip_keys_device_placement = ["past_key_values"]
    # The Transformer (LLaMA) baseline's RoPE may have stored its inverse frequencies.
    _keys_to_ignore_on_load_unexpected = [r"rotary\.inv_freq"]
    _supports_cache_class = True

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        """The official initialisation: N(0, initializer_range) weights, zero biases, unit norm
        scales, and the forget-gate bias of `bias_only`/`fixed` gates (see `forget_gate`)."""
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weight, mean=0.0, std=std)
            if module.padding_idx is not None and not getattr(module.weight, "_is_hf_initialized", False):
                init.zeros_(module.weight[module.padding_idx])
        elif isinstance(module, (RMSNorm, HeadwiseRMSNorm)):
            init.ones_(module.weight)
        elif isinstance(module, ForgettingAttentionLayer) and getattr(module, "fgate_bias", None) is not None:
            init.copy_(module.fgate_bias, initial_fgate_bias(self.config).to(module.fgate_bias))


class ForgettingTransformerModel(ForgettingTransformerPreTrainedModel):
    def __init__(self, config: ForgettingTransformerConfig):
        super().__init__(config)
        self.padding_idx = config.pad_token_id
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size, self.padding_idx)
        self.layers = nn.ModuleList(
            [ForgettingTransformerBlock(config, index) for index in range(config.num_hidden_layers)]
        )
        self.norm = RMSNorm(config.hidden_size, eps=config.norm_eps)
        self.gradient_checkpointing = False
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings = value

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        cache: Cache | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPast | tuple:
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("pass exactly one of input_ids and inputs_embeds")
        if output_attentions:
            raise ValueError("output_attentions=True is not supported: FoX's attention kernel never forms the weights")
        output_hidden_states = (
            self.config.output_hidden_states if output_hidden_states is None else output_hidden_states
        )
        return_dict = self.config.return_dict if return_dict is None else return_dict
        if use_cache is None:
            use_cache = self.config.use_cache and not self.training
        if self.gradient_checkpointing and self.training:
            use_cache = False
        hidden_states = self.embeddings(input_ids) if inputs_embeds is None else inputs_embeds

        past_key_values = cache if past_key_values is None else past_key_values
        if use_cache and past_key_values is None:
            past_key_values = ForgettingTransformerCache(config=self.config)
        if past_key_values is not None:
            past_key_values = as_fox_cache(past_key_values, len(self.layers))
        past = 0 if past_key_values is None else past_key_values.get_seq_length()
        length = hidden_states.shape[1]
        seq_start = left_padding_starts(attention_mask, past + length)
        positions = self._rope_positions(position_ids, seq_start, past, hidden_states) if self.config.use_rope else None

        all_hidden_states = [] if output_hidden_states else None
        for block in self.layers:
            if all_hidden_states is not None:
                all_hidden_states.append(hidden_states)
            hidden_states = block(
                hidden_states, past_key_values=past_key_values, seq_start=seq_start, positions=positions
            )
        hidden_states = self.norm(hidden_states)
        if all_hidden_states is not None:
            all_hidden_states.append(hidden_states)

        output = BaseModelOutputWithPast(
            last_hidden_state=hidden_states,
            hidden_states=None if all_hidden_states is None else tuple(all_hidden_states),
            **{CACHE_FIELD: past_key_values if use_cache else None},
        )
        return output if return_dict else output.to_tuple()

    @staticmethod
    def _rope_positions(position_ids, seq_start, past: int, hidden_states) -> torch.Tensor:
        """RoPE positions: given ones, else counted from each row's first real token."""
        batch, length = hidden_states.shape[:2]
        if position_ids is not None:
            return position_ids.expand(batch, length)
        positions = torch.arange(past, past + length, device=hidden_states.device).expand(batch, length)
        if seq_start is not None:
            positions = (positions - seq_start[:, None]).clamp(min=0)
        return positions


class ForgettingTransformerForCausalLM(ForgettingTransformerPreTrainedModel, GenerationMixin):
    _tied_weights_keys = {"lm_head.weight": "model.embeddings.weight"}

    def __init__(self, config: ForgettingTransformerConfig):
        super().__init__(config)
        self.model = ForgettingTransformerModel(config)
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    def set_output_embeddings(self, new_embeddings: nn.Linear) -> None:
        self.lm_head = new_embeddings

    def get_decoder(self) -> ForgettingTransformerModel:
        return self.model

    def set_decoder(self, decoder: ForgettingTransformerModel) -> None:
        self.model = decoder

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        cache: Cache | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        return_dict: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        **kwargs,
    ) -> CausalLMOutputWithPast | tuple:
        return_dict = self.config.return_dict if return_dict is None else return_dict
        outputs = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=cache if past_key_values is None else past_key_values,
            inputs_embeds=inputs_embeds,
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
        )
        logits = self.lm_head(keep_last_positions(outputs.last_hidden_state, logits_to_keep))
        loss = None if labels is None else self._next_token_loss(logits, labels)
        output = CausalLMOutputWithPast(
            loss=loss,
            logits=logits,
            hidden_states=outputs.hidden_states,
            **{CACHE_FIELD: getattr(outputs, CACHE_FIELD)},
        )
        return output if return_dict else output.to_tuple()

    @staticmethod
    def _next_token_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of predicting `labels[:, t + 1]` at position t (-100 ignored)."""
        if logits.shape[1] != labels.shape[1]:
            raise ValueError("labels need logits at every position: leave logits_to_keep at 0")
        predicted = logits[:, :-1].float().flatten(0, 1)
        targets = labels[:, 1:].to(logits.device).flatten()
        return F.cross_entropy(predicted, targets, ignore_index=-100)


class TransformerBaselineModel(ForgettingTransformerModel):
    """`ForgettingTransformerModel` for the official `transformer-project_fox` type (LLaMA baseline)."""

    config_class = TransformerBaselineConfig


class TransformerBaselineForCausalLM(ForgettingTransformerForCausalLM):
    """`ForgettingTransformerForCausalLM` for the official `transformer-project_fox` type."""

    config_class = TransformerBaselineConfig
