"""Perplexity's leaderboard headlines: `ppl@<length>` per length (lower is better); an
overall `ppl` if the task reports one."""

from __future__ import annotations

from lm_eval_longmem.tasks.headlines import Headline, bucket_headlines, summary_headline


def headlines(metrics: dict, task: str) -> list[Headline]:
    return bucket_headlines(task, metrics, "ppl@", "", lambda n: f"ppl@{n}", higher_is_better=False) + summary_headline(
        task, metrics, "ppl", "ppl_all", 0, higher_is_better=False
    )


def perplexity_value(cell: Headline) -> str:
    """Tables write a perplexity with two decimals, huge ones too: one format down a column
    (4 significant digits once huge put "1234" and "1.235e+04" beside "20.25")."""
    return f"{cell.value:.2f}"
