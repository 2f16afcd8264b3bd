"""TopicRet's leaderboard headlines: accuracy per question position (first, second, third
topic) and their mean."""

from __future__ import annotations

from lm_eval_longmem.tasks.headlines import Headline, summary_headline


def headlines(metrics: dict, task: str) -> list[Headline]:
    found = []
    for position, which in enumerate(("first", "second", "third")):
        found += summary_headline(task, metrics, f"{which}_topic_acc", f"topicret_{which}", position)
    return found + summary_headline(task, metrics, "mean_acc", "topicret_mean", 3)
