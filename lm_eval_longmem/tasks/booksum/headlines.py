"""BookSum's leaderboard headlines: overall Rouge (x 100) at each input budget, the
`rouge_by_length` curve as columns `booksum@<budget>`."""

from __future__ import annotations

from lm_eval_longmem.tasks.headlines import Headline, bucket_headlines


def headlines(metrics: dict, task: str) -> list[Headline]:
    return bucket_headlines(task, metrics, "overall@len", "", lambda n: f"booksum@{n}")


def one_decimal(cell: Headline) -> str:
    """Rouge as the papers print it (x 100, one decimal)."""
    return f"{cell.value:.1f}"
