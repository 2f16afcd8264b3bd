"""Does a text prompt fit the model, counting the tokens it will generate?

lm-eval's generation reserves `max_gen_toks` of the model's length for the answer (HFLM cuts
the prompt to `max_length - max_gen_toks` from the left, silently). Our generation tasks size
their prompts before meeting the model, with the same tokenizer and context length the model
will use (`tasks/model_view.py`), and never hand it a prompt that would be cut.
"""

from __future__ import annotations

from dataclasses import dataclass

HFLM_DEFAULT_MAX_GEN_TOKS = 256  # what lm-eval's HFLM generates when a task does not say


def max_gen_toks(generation_kwargs: dict | None, default: int = HFLM_DEFAULT_MAX_GEN_TOKS) -> int:
    return int((generation_kwargs or {}).get("max_gen_toks", default))


@dataclass(frozen=True)
class PromptBudget:
    tokenizer: object
    context_length: int
    generated: int  # tokens reserved for the answer

    def tokens(self, text: str) -> int:
        """Prompt tokens, counting the special tokens the tokenizer adds (a BOS, if any)."""
        return len(self.tokenizer(text, add_special_tokens=True)["input_ids"])

    @property
    def prompt_limit(self) -> int:
        return self.context_length - self.generated

    def fits(self, text: str) -> bool:
        return self.tokens(text) <= self.prompt_limit
