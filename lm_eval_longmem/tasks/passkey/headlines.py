"""Passkey's leaderboard headlines: accuracy per prompt length, and over all cells."""

from __future__ import annotations

from lm_eval_longmem.tasks.headlines import Headline, bucket_headlines, summary_headline


def headlines(metrics: dict, task: str) -> list[Headline]:
    return bucket_headlines(task, metrics, "acc@len", "", lambda n: f"passkey@{n}") + summary_headline(
        task, metrics, "acc", "passkey_all", 0
    )
