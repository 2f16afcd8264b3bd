"""Which decoder families each method runs on, and why not where it does not: the method x family
table of `lm-eval-longmem methods NAME` and docs/model.md (rendered there by `report/docs_tables.py`).
tests/methods/test_family_matrix.py checks it against what every method does on a tiny model of each
family (it runs, or it refuses in one line naming a method that works), so the table cannot drift
from the code.

Families are transformers model types whose attention layout `models/runtime/attention_layout.py`
describes; a cell is None (runs: ✔) or the short reason it refuses.
"""

from __future__ import annotations

from lm_eval_longmem.models.method_framework.base import LongMemMethod
from lm_eval_longmem.models.method_framework.bounded_cache_family import BoundedCacheMethod
from lm_eval_longmem.models.runtime.attention_layout import FAMILIES as _LAYOUTS

FAMILIES: tuple[str, ...] = tuple(_LAYOUTS)

_PER_LAYER_ROPE = "per-layer-type RoPE: reads one rotary table"
_SOFTCAP = "attention soft-capping: not in its kernels"

_WINDOWED = ("mistral", "phi3", "gemma2", "gemma3_text")  # sliding-window checkpoints (Phi-3-mini-4k: 2047)
_PER_LAYER_TYPE_ROPE = ("gemma3_text",)  # local layers with a rotary table of their own

# Only the refusals: every other (method, family) runs.
_REFUSED: dict[str, dict[str, str]] = {
    "fox": {family: "FoX checkpoints only" for family in FAMILIES},
    "self_extend": {"gemma2": _SOFTCAP},
    "lm_infinite": {"gemma2": _SOFTCAP},
    "longrope": {"gemma3_text": _PER_LAYER_ROPE},
    "clex": {"gemma2": _SOFTCAP, "gemma3_text": _PER_LAYER_ROPE},
}
# Cells that hold beyond ✔ (shown after the mark): what the method needs of a checkpoint of the family.
NOTES: dict[tuple[str, str], str] = {
    **{("longrope", family): "with LongRoPE factors" for family in FAMILIES if family != "gemma3_text"},
    ("dynamic_ntk", "gemma3_text"): "global layers; variant=hf refused",
    # the family's sliding window is not applied: the segment bounds attention instead, exact while
    # segment_length stays within the window; a warning says so at load
    **{("infini", f): "segment, not window" for f in _WINDOWED},
    # a checkpoint trained with landmarks (a <landmark> token in its config); the window of W tokens
    # bounds attention in place of the family's sliding window
    **{("landmark", f): "landmark checkpoints" for f in FAMILIES if f not in _WINDOWED},
    **{("landmark", f): "landmark checkpoints; its windows, not the family's" for f in _WINDOWED},
    # kvpress 0.5.5 names Llama, Mistral, Phi-3, Qwen2, Qwen3 and Gemma3ForConditionalGeneration as tested,
    # and warns for the others; it runs on both (checked in .venv-kvpress by the family test)
    **{("kvpress", f): "kvpress warns: not in its tested list" for f in ("gemma2", "gemma3_text")},
}


def support(method: str, family: str) -> str | None:
    """None when `method` runs on `family`, else the reason it refuses (KeyError: a family not in the table)."""
    if family not in FAMILIES:
        raise KeyError(f"{family!r} is not among the families {FAMILIES}")
    return _REFUSED.get(method, {}).get(family)


def _note_of_its_kind(method: type[LongMemMethod], family: str) -> str | None:
    """What every method of a kind needs of a family, read from the class rather than listed by name."""
    if method.rewrites_rope and family in _PER_LAYER_TYPE_ROPE:
        return "global layers"  # the extension scales the global layers' table; the local layers keep theirs
    if issubclass(method, BoundedCacheMethod) and family in _WINDOWED:
        # the family's sliding window is not applied: the cache budget bounds attention instead, exact
        # while budget + chunk stays within the window; a warning says so at load
        return "budget, not window"
    return None


def cell(method: type[LongMemMethod], family: str) -> str:
    """The table's cell: ✔ (with a note), or the reason."""
    why = support(method.name, family)
    if why is not None:
        return why
    note = NOTES.get((method.name, family)) or _note_of_its_kind(method, family)
    return f"✔ ({note})" if note else "✔"


def family_lines(method: type[LongMemMethod]) -> list[str]:
    """`lm-eval-longmem methods NAME`'s lines on the families `method` runs on."""
    return [f"{family}: {cell(method, family)}" for family in FAMILIES]


def markdown_table(methods: list[type[LongMemMethod]]) -> str:
    lines = ["| method | " + " | ".join(FAMILIES) + " |", "|---|" + "---|" * len(FAMILIES)]
    # rendered into docs/model.md by report/docs_tables.py
    lines += [f"| {m.name} | " + " | ".join(cell(m, f) for f in FAMILIES) + " |" for m in methods]
    return "\n".join(lines)
