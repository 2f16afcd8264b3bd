"""Perplexity's leaderboard headlines: `ppl@<length>` per length (lower is better); an
overall `ppl` if the task reports one."""

from __future__ import annotations

from lm_eval_longmem.tasks.headlines import Headline, bucket_headlines, summary_headline


def headlines(metrics: dict, task: str) -> list[Headline]:
    return bucket_headlines(task, metrics, "ppl@", "", lambda n: f"ppl@{n}", higher_is_better=False) + summary_headline(
        task, metrics, "ppl", "ppl_all", 0, higher_is_better=False
    )


def perplexity_value(cell: Headline) -> str:
    """Tables write a perplexity with two decimals, in 4 significant digits once it is huge."""
    return f"{cell.value:.2f}" if cell.value < 1000 else f"{cell.value:.4g}"
