"""Every method by name, with where its class lives ("module:Class"), read without importing it.

Most method files import torch and transformers (through the RoPE, attention and cache
machinery), so the registry imports a method only when it is asked for by name: an unknown
`method=` is refused, the valid names listed and run folders named without loading any of
them, and reports label results files without torch. A new method file adds its line here;
tests/methods/test_method_table.py fails, naming it, for a method class missing from this
table, a line whose class is gone, or a stale `NAMES_ITS_CHECKPOINT`.
"""

from __future__ import annotations

METHODS: dict[str, str] = {
    "clex": "lm_eval_longmem.models.methods.clex:Clex",
    "dynamic_ntk": "lm_eval_longmem.models.methods.dynamic_ntk:DynamicNTK",
    "fox": "lm_eval_longmem.models.methods.fox:ForgettingTransformer",
    "infini": "lm_eval_longmem.models.methods.infini:Infini",
    "kvpress": "lm_eval_longmem.models.methods.kvpress:KVPressMethod",
    "landmark": "lm_eval_longmem.models.methods.landmark:Landmark",
    "llama3": "lm_eval_longmem.models.methods.llama3:Llama3",
    "lm_infinite": "lm_eval_longmem.models.methods.lm_infinite:LMInfinite",
    "longcache": "lm_eval_longmem.models.methods.longcache:LongCache",
    "longrope": "lm_eval_longmem.models.methods.longrope:LongRoPE",
    "ntk": "lm_eval_longmem.models.methods.ntk:NTKAware",
    "pi": "lm_eval_longmem.models.methods.pi:PositionInterpolation",
    "self_extend": "lm_eval_longmem.models.methods.self_extend:SelfExtend",
    "statedclm": "lm_eval_longmem.models.methods.statedclm:StatedCLM",
    "streamingllm": "lm_eval_longmem.models.methods.streamingllm:StreamingLLM",
    "vanilla": "lm_eval_longmem.models.methods.vanilla:Vanilla",
    "yarn": "lm_eval_longmem.models.methods.yarn:YaRN",
}

# The methods whose class overrides `LongMemMethod.checkpoint_identity` (they name the checkpoint
# they run, beside their arguments: `fox` its architecture). Reports import only these, so their
# modules import nothing heavy; every other method names no checkpoint without being imported.
NAMES_ITS_CHECKPOINT: frozenset[str] = frozenset({"fox"})
