"""Each task's headline numbers, read out of one results file's `results.<task>` mapping.

Our tasks' headlines come from their declarations (`tasks/<task>/headlines.py`, read through
`tasks/registry.py`): their columns sort by the task's place among ours, then by their place
within the task. A task missing from a file simply yields no number. Tasks that are not ours
(lm-eval's RULER, LongBench, ... run next to ours) get one column per numeric metric, after ours.
Scores by input length that `--model longmem` wrote (`<metric>@len<lo>-<hi>`, by_length=) are a
column each, `<task>:<metric>@len<lo>-<hi>`, after the task's other columns, shortest bin first.
"""

from __future__ import annotations

import dataclasses
import re

from lm_eval_longmem.common.length_bins import parse_length
from lm_eval_longmem.tasks import registry
from lm_eval_longmem.tasks.headlines import SUMMARIES, Column, Headline, metric_values


def ours(task: str, metrics: dict) -> list[Headline] | None:
    """The headlines of one of our tasks, placed among ours; None when `task` is not ours."""
    declaration = registry.find(task)
    if declaration is None or declaration.headlines is None:
        return None
    index = registry.position(task)
    return [
        dataclasses.replace(
            headline, column=dataclasses.replace(headline.column, order=(index, *headline.column.order))
        )
        for headline in declaration.headlines(metrics, task)
    ]


def no_numbers_note(task: str, metrics: dict) -> str:
    """Why a task gave no headline, where its declaration can say more than "no numeric metric"
    (the forgetting curve: the lengths that ran into a limit, e.g. `cut_by_model`)."""
    declaration = registry.find(task)
    if declaration is None or declaration.no_numbers_note is None or not isinstance(metrics, dict):
        return ""
    return declaration.no_numbers_note(metrics)


def other_task(task: str, metrics: dict, higher_is_better: dict | None = None) -> list[Headline]:
    """Any other task (lm-eval's `ruler`, `longbench`, ...): each numeric metric as a column
    `<task>:<metric>`, after ours, in the direction the results file records for it."""
    direction = higher_is_better if isinstance(higher_is_better, dict) else {}
    after_ours = len(registry.declarations())
    return [
        Headline(
            Column(f"{task}:{name}", task, (after_ours, task, name), direction.get(name) is not False), value, stderr
        )
        for name, (value, stderr) in sorted(metric_values(metrics).items())
        if not BIN_KEY.match(name)
    ]


# harness/live_by_length.py's keys: <metric>@len<lo>-<hi>[_n|_ci] (passkey's own acc@len64 has no bin)
BIN_KEY = re.compile(r"^(?P<metric>.+)@len(?P<low>[0-9.]+[km]?)(?:-[0-9.]+[km]?|\+)(?P<part>_n|_ci)?$")


def by_length(task: str, metrics: dict, place: tuple, higher_is_better: dict | None = None) -> list[Headline]:
    """A column per bin mean (`<metric>@len<lo>-<hi>`; counts and intervals are not columns),
    placed at `place` + (metric, the bin's low edge)."""
    direction = higher_is_better if isinstance(higher_is_better, dict) else {}
    found = []
    for name, (value, _) in metric_values(metrics).items():
        match = BIN_KEY.match(name)
        if not match or match["part"]:
            continue
        metric, low = match["metric"], parse_length(match["low"])
        column = Column(f"{task}:{name}", task, (*place, metric, low), direction.get(metric) is not False)
        found.append(Headline(column, value, None))
    return found


def headlines_of(results: dict, higher_is_better: dict | None = None) -> dict[str, list[Headline]]:
    """task -> its headlines for every task of one results file: ours by their declared
    extractors, any other task by its numeric metrics (`higher_is_better` is the file's mapping
    of that name)."""
    found = {}
    directions = higher_is_better if isinstance(higher_is_better, dict) else {}
    for task, metrics in results.items():
        if not isinstance(metrics, dict):
            continue
        headlines = ours(task, metrics)
        if headlines is None:
            headlines = other_task(task, metrics, directions.get(task))
            place = (len(registry.declarations()), task)
        else:
            place = (registry.position(task), SUMMARIES + 1)
        headlines = [*headlines, *by_length(task, metrics, place, directions.get(task))]
        if headlines:
            found[task] = headlines
    return dict(sorted(found.items(), key=lambda item: (registry.position(item[0]), item[0])))
