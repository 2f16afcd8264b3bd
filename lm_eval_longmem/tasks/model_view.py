"""What a task can know about its model before meeting it: tokenizer, method, context length.

lm-eval builds tasks apart from the model, passing `--model_args` merged with `--metadata` to
them. Tasks that build token-level inputs resolve the model the same way `LongMemLM` does:
`tokenizer=` or `pretrained=` (or, with neither, our embedded default), `method=` with its
arguments (or the method a checkpoint records), and an explicit `max_length=`. The lengths are
those of `models/checkpoint/context_length.py`; `bounded_memory` is the method's (`LongMemMethod`), the
one place tasks learn that a method reads documents of any length.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from lm_eval_longmem.common.hub import loading_from_hub
from lm_eval_longmem.models.method_registry import DEFAULT_METHOD, LongMemMethod, method_names
from lm_eval_longmem.models.method_registry.resolution import resolve_method


@dataclass(frozen=True)
class ModelView:
    source: str  # where the tokenizer/config come from
    tokenizer: Any
    method: LongMemMethod
    training_length: int
    context_length: int  # longest input an ordinary request may have
    sizing_length: int  # what default grids are sized by: the claimed length l (LongMemMethod.sizing_length)
    hard_input_limit: int | None  # longest input that can run at all; None: only memory limits it
    relative_positions: bool  # False for learned absolute positions (inputs past the table cannot run)

    @property
    def bounded_memory(self) -> bool:
        """The method reads documents of any length: no task skips or truncates one."""
        return self.method.bounded_memory

    @property
    def bos_id(self) -> int:
        bos = self.tokenizer.bos_token_id
        return bos if bos is not None else self.eos_id

    @property
    def eos_id(self) -> int:
        eos = self.tokenizer.eos_token_id
        if eos is None:
            raise ValueError(f"The tokenizer of {self.source} has neither an eos nor a bos token.")
        return eos


def model_view(metadata: dict[str, Any]) -> ModelView:
    from lm_eval_longmem.models.checkpoint.context_length import (
        default_sizing_length,
        hard_input_limit,
        has_relative_positions,
        training_length,
        usable_context_length,
    )

    source = metadata.get("tokenizer") or metadata.get("pretrained")
    if not isinstance(source, str) or not source:
        from lm_eval_longmem.models.checkpoint.default_model import default_model_dir

        source = str(default_model_dir())
    config_source = metadata.get("pretrained") if isinstance(metadata.get("pretrained"), str) else source
    tokenizer, config = _load(source, config_source, bool(metadata.get("trust_remote_code", False)))
    name = metadata.get("method")
    if name is not None and (not isinstance(name, str) or name not in method_names()):  # someone else's `method=`
        name = DEFAULT_METHOD
    pretrained = metadata.get("pretrained") if isinstance(metadata.get("pretrained"), str) else None
    method = resolve_method({**metadata, "pretrained": pretrained, "method": name}).build()
    return ModelView(
        source=source,
        tokenizer=tokenizer,
        method=method,
        training_length=training_length(config, tokenizer, method),
        context_length=usable_context_length(config, method, metadata.get("max_length"), tokenizer),
        sizing_length=default_sizing_length(config, method, metadata.get("max_length"), tokenizer),
        hard_input_limit=hard_input_limit(config, method, metadata.get("max_length")),
        relative_positions=has_relative_positions(config),
    )


@functools.lru_cache(maxsize=4)
def _load(tokenizer_source: str, config_source: str, trust_remote_code: bool):
    from transformers import AutoConfig, AutoTokenizer

    from lm_eval_longmem.models.checkpoint.model_types import register_model_types

    register_model_types()  # FoX's and the Landmark study's

    with loading_from_hub(tokenizer_source):
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_source, trust_remote_code=trust_remote_code)
    with loading_from_hub(config_source):
        config = AutoConfig.from_pretrained(config_source, trust_remote_code=trust_remote_code)
    return tokenizer, config
