"""The seam between the wrapper's `generate_until` and whoever runs the decoding loop.

The wrapper turns lm-eval requests into `GenerationRequest`s (token ids, already checked to
fit the model) and trims the returned tokens at the request's stop strings. A generator owns
only the loop: the default one reuses the KV cache of a shared prompt prefix; bounded-cache
methods (stated-CLM, StreamingLLM) bring their own through `LongMemMethod.make_generator`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class GenerationRequest:
    prompt_ids: tuple[int, ...]
    max_new_tokens: int
    stop_token_ids: frozenset[int] = frozenset()
    stop_strings: tuple[str, ...] = ()
    # Hugging Face sampling options (do_sample, temperature, top_p, ...); empty means greedy.
    sampling: dict[str, Any] = field(default_factory=dict)


class TokenGenerator(Protocol):
    def generate(self, request: GenerationRequest) -> list[int]:
        """New token ids after the prompt. May stop early at a stop token or once a stop string
        has been produced; the wrapper trims at the stop strings itself."""
        ...
