"""Many-shot TREC's leaderboard headlines: accuracy per shot count, and over all of them."""

from __future__ import annotations

from lm_eval_longmem.tasks.headlines import Headline, bucket_headlines, summary_headline


def headlines(metrics: dict, task: str) -> list[Headline]:
    return bucket_headlines(task, metrics, "acc@", "shots", lambda n: f"trec@{n}shots") + summary_headline(
        task, metrics, "acc", "trec_all", 0
    )
