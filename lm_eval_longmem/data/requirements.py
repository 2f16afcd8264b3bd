"""A Hub dataset a task needs, whether this machine has it, and fetching it.

Each task fails fast on its own when its data is missing offline, but a group stops at the
first such task, so a user would fix one dataset per run. A task's declaration
(`tasks/<task>/declaration.py`) names the `HubDataset`s it may need; before lm-eval builds
anything, `tasks/dataset_needs.py` probes the local cache for all of them with `is_available`
and `MissingDatasetsError` lists every missing one with the one command that fetches them:
`lm-eval-longmem fetch-data` (cli/fetch_data.py), which calls `fetch()` here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lm_eval_longmem.data.hub_datasets import DatasetUnavailableError

FETCH_COMMAND = "lm-eval-longmem fetch-data"


class MissingDatasetsError(DatasetUnavailableError):
    """Datasets the requested tasks need are neither cached nor reachable; lists them all."""


@dataclass(frozen=True)
class HubDataset:
    key: str  # name on the fetch-data command line
    title: str  # what it is, for messages
    load: Callable[[], Any]  # loads it: from the cache only when the Hub is unreachable
    local_option: str  # the --metadata option that points the task at local copies instead


def is_available(dataset: HubDataset) -> tuple[bool, str]:
    """Whether `dataset` loads here (cache only when offline), and why not."""
    from lm_eval_longmem.errors import LongMemError

    try:
        dataset.load()
    except LongMemError as err:
        return False, str(err)
    return True, ""


def fetch(datasets: Iterable[HubDataset], report: Callable[[str], None] = print) -> list[str]:
    """Download (into the Hugging Face caches) each of `datasets`; returns the keys of those that failed."""
    failed = []
    for dataset in datasets:
        report(f"fetching {dataset.key}: {dataset.title} ...")
        ok, why = is_available(dataset)
        report(f"  {'ok, cached' if ok else 'FAILED: ' + why}")
        if not ok:
            failed.append(dataset.key)
    return failed
