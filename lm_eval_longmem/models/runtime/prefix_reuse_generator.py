"""The default decoding loop: Hugging Face `generate`, restarted from a shared prompt prefix.

Long-memory tasks ask many questions about one long text: every TREC test question at a
given shot count follows the same demonstrations, and TopicRet's three questions follow the
same conversation. Re-encoding that prefix per question costs a full prefill each time.
This generator keeps the cache `generate` built for the previous prompt (a transformers
`DynamicCache`, or a model's own cache class, e.g. FoX's, which also holds forget gates);
for the next one it crops the cache to the longest token prefix the two prompts share and
lets `generate` encode only the rest (transformers slices the input ids to the tokens the
cache does not hold yet). The wrapper sends prompts sorted by token ids, so prompts with a
shared prefix arrive one after another.

Greedy outputs are the same with and without reuse (up to float rounding of the split
prefill, which the tests check on a real model); `reuse=False` gives the plain loop.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from lm_eval.models.utils_hf import stop_sequences_criteria

from lm_eval_longmem.models.runtime.cache_argument import cache_argument, cache_of
from lm_eval_longmem.models.runtime.generation import GenerationRequest


def cache_is_croppable(cache) -> bool:
    """Whether `cache.crop` can shorten this cache without losing state.

    transformers 5.24 says it itself (`Cache.is_croppable`, from its layers); transformers 5.2
    has no such attribute, so there a cache is croppable when every layer says so (FoX's layers
    do) or is a plain `DynamicLayer` (full attention; a sliding-window layer can lose states).
    """
    croppable = getattr(cache, "is_croppable", None)
    if croppable is not None:
        return bool(croppable)
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None)
    return bool(layers) and all(getattr(layer, "is_croppable", type(layer) is DynamicLayer) for layer in layers)


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class PrefixReuseGenerator:
    def __init__(self, model, tokenizer, reuse: bool = True):
        self.model = model
        self.tokenizer = tokenizer
        self.reuse = reuse
        self._cache = None  # what `generate` returned for the previous prompt
        self._cached_prompt: tuple[int, ...] = ()
        # What reuse saved, for logs and benchmarks.
        self.prompt_tokens = 0
        self.reused_tokens = 0

    @property
    def strategy(self) -> str:
        return "prefix_reuse" if self.reuse else "fresh_cache"

    def generate(self, request: GenerationRequest) -> list[int]:
        prompt = request.prompt_ids
        if not prompt:
            raise ValueError("cannot generate from an empty prompt")
        cache = self._cache_for(prompt)
        self.prompt_tokens += len(prompt)
        self.reused_tokens += cache.get_seq_length() if cache is not None else 0
        device = self.model.device
        input_ids = torch.tensor([prompt], dtype=torch.long, device=device)
        stopping = stop_sequences_criteria(self.tokenizer, list(request.stop_strings), len(prompt), 1)
        with torch.no_grad():
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                **cache_argument(cache),
                max_new_tokens=request.max_new_tokens,
                eos_token_id=sorted(request.stop_token_ids) or None,
                pad_token_id=self._pad_id(request),
                stopping_criteria=stopping,
                use_cache=True,
                return_dict_in_generate=True,
                **request.sampling,
            )
        if self.reuse:
            self._cache, self._cached_prompt = cache_of(output), prompt
        return output.sequences[0, len(prompt) :].tolist()

    def _cache_for(self, prompt: tuple[int, ...]):
        """The previous cache cropped to the shared prefix, or None: `generate` then builds the
        model's own kind of cache.

        At least one prompt token is left to feed: `generate` needs the logits of the last
        prompt position, so an identical prompt reuses all but its final token.
        """
        if self.reuse and self._cache is not None and cache_is_croppable(self._cache):
            keep = min(common_prefix_length(self._cached_prompt, prompt), len(prompt) - 1)
            if keep > 0:
                # The cache also holds the previous answer's tokens: crop those too.
                self._cache.crop(keep - self._cache.get_seq_length())
                return self._cache
        self._cache, self._cached_prompt = None, ()  # free the old cache before the new prefill
        return None

    def _pad_id(self, request: GenerationRequest) -> int | None:
        pad = self.tokenizer.pad_token_id
        if pad is None and request.stop_token_ids:
            pad = min(request.stop_token_ids)
        return pad
