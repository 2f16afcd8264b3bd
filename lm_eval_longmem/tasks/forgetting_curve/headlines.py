"""The forgetting curve's leaderboard headlines: its memory lengths.

The curve has two shapes. `--model longmem` scores every token, so its curve has the paper's
fine and coarse memory lengths. Any other lm-eval model (`--model hf`) answers only lm-eval's
(loglikelihood, is_greedy) per request, so the task reports a reduced metric instead
(`curve.mode == "reduced"`: per length, `copy_exact`, the share of samples whose copied half is
reproduced exactly under greedy decoding, and `copy_nll`), with no memory lengths. Its headline is
`fc_exact_copy`: the largest tested L at which more than 99% of the samples were copied exactly,
the paper's fine-grained bar applied to whole samples. An exactly copied sample has token accuracy
1, so this never exceeds the fine memory length the same model gets under `--model longmem`.
"""

from __future__ import annotations

from lm_eval_longmem.tasks.headlines import (
    PREFERRED_FILTER,
    SUMMARIES,
    Column,
    Headline,
    is_number,
    length_text,
    summary_headline,
)


def headlines(metrics: dict, task: str) -> list[Headline]:
    """Fine and coarse memory lengths; ">L" bounds come from the curve's own flags. A reduced
    curve (`--model hf`) has none: its exact-copy length instead."""
    curve = metrics.get(f"curve,{PREFERRED_FILTER}")
    curve = curve if isinstance(curve, dict) else {}
    if curve.get("mode") == "reduced":
        return exact_copy_length(curve, task)
    found = []
    for position, kind in enumerate(("fine", "coarse")):
        for headline in summary_headline(task, metrics, f"{kind}_memory_length", f"fc_{kind}", position):
            bound = bool(curve.get(f"{kind}_is_lower_bound", False))
            found.append(Headline(headline.column, headline.value, None, bound))
    return found


def exact_copy_length(curve: dict, task: str) -> list[Headline]:
    """`fc_exact_copy` of a reduced curve: the largest tested L whose exact-copy rate passes the
    fine-grained bar (0 when none does), ">L" when the longest length with numbers still does."""
    from lm_eval_longmem.tasks.forgetting_curve.metrics import FINE_THRESHOLD  # numpy: only when asked

    points = [p for p in curve.get("points") or () if isinstance(p, dict) and is_number(p.get("copy_exact"))]
    if not points:
        return []
    passing = [p["length"] for p in points if p["copy_exact"] > FINE_THRESHOLD]
    length = max(passing, default=0)
    column = Column("fc_exact_copy", task, (SUMMARIES, 2))
    return [Headline(column, length, None, bool(passing) and length == max(p["length"] for p in points))]


def memory_length(cell: Headline) -> str:
    """Tables write a memory length as a whole number, ">L" when only a lower bound."""
    return length_text(cell.value, cell.lower_bound)


def no_numbers_note(metrics: dict) -> str:
    """Why the task gave no headline, where the file says more than "no numeric metric": the
    lengths that ran into a limit (e.g. `cut_by_model`) and gave no numbers."""
    curve = metrics.get(f"curve,{PREFERRED_FILTER}") if isinstance(metrics, dict) else None
    if not isinstance(curve, dict):
        return ""
    failed = [p for p in curve.get("lengths") or () if isinstance(p, dict) and p.get("status", "ok") != "ok"]
    if not failed:
        return ""
    statuses = sorted({str(p.get("status")) for p in failed})
    return f"no tested length gave numbers: {len(failed)} length(s) with status {', '.join(statuses)}"
