"""Infini-attention's machinery (Munkhdalai et al. 2024): a compressive memory per layer and
key/value head, per-head gates, and the segment loop that runs a Llama-family model with them
(the sequence the shared scorer and generator feed). `models/methods/infini.py` selects it."""

from lm_eval_longmem.models.compressive_memory.checkpoint import GATES_FILE, load_gates, save_infini_checkpoint
from lm_eval_longmem.models.compressive_memory.gates import MemoryGates
from lm_eval_longmem.models.compressive_memory.memory import CompressiveMemory, feature_map
from lm_eval_longmem.models.compressive_memory.recurrence import SegmentRecurrence

__all__ = [
    "GATES_FILE",
    "CompressiveMemory",
    "MemoryGates",
    "SegmentRecurrence",
    "feature_map",
    "load_gates",
    "save_infini_checkpoint",
]
