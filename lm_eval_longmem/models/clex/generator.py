"""CLEX's decoding loop: cached steps while t stays, the whole sequence encoded again when t grows.

Keys cached before RoPE and rotated with the current theta_t make the first layer exact when t
changes, but not the layers above it: their cached keys and values were computed from hidden
states of the old t, which running the sequence at once computes with the new one (measured on a
2-layer Phi with a trained ODE: logits 8.5e-4 apart; in 1 layer, 1e-7). So when the next token
moves the sequence to another t (at C, 2C, ... tokens) the sequence is encoded again from
scratch at the new t, at most `max_factor` times per sequence, and every token's logits are
those of the whole sequence up to it read at once: generation equals teacher forcing.
"""

from __future__ import annotations

import torch

from lm_eval_longmem.models.clex.scaling import ClexScaling
from lm_eval_longmem.models.runtime.cache_argument import cache_argument
from lm_eval_longmem.models.runtime.generation import GenerationRequest
from lm_eval_longmem.models.runtime.stepwise_decoding import TokenPicker, decode_tokens


class ClexGenerator:
    def __init__(self, model, clex: ClexScaling, tokenizer=None):
        self.model = model
        self.clex = clex
        self.tokenizer = tokenizer
        self.pick = TokenPicker("method=clex")
        self.encodes = 0  # full encodings, prompts included (tests read it)

    @torch.no_grad()
    def generate(self, request: GenerationRequest) -> list[int]:
        tokens = list(request.prompt_ids)
        state: dict = {}

        def encode_all() -> torch.Tensor:
            from transformers import DynamicCache

            state["cache"] = DynamicCache(config=self.model.config)
            state["factor"] = self.clex.factor_for_length(len(tokens))
            self.encodes += 1
            return self._last_logits([tokens], state["cache"])

        def feed(token: int) -> torch.Tensor:
            tokens.append(token)
            if self.clex.factor_for_length(len(tokens)) != state["factor"]:
                return encode_all()
            return self._last_logits([[token]], state["cache"])

        return decode_tokens(encode_all(), feed, request, self.pick, self.tokenizer)

    def _last_logits(self, ids: list[list[int]], cache) -> torch.Tensor:
        device = self.model.get_input_embeddings().weight.device
        input_ids = torch.tensor(ids, dtype=torch.long, device=device)  # made where the model is
        output = self.model(input_ids=input_ids, use_cache=True, logits_to_keep=1, **cache_argument(cache))
        return output.logits[0, -1]
