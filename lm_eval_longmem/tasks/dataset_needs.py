"""Which Hub datasets the requested tasks need, and one error naming every missing one.

Each task fails fast on its own when its data is missing offline, but a group stops at the
first such task, so a user would fix one dataset per run. Before lm-eval builds anything,
`missing_for(tasks, options)` probes the local cache for every dataset the requested tasks
need (with the options given: a task pointed at local files needs nothing from the Hub; each
task's declaration says when it needs what), and `MissingDatasetsError` lists them all with
the one command that fetches them (`lm-eval-longmem fetch-data`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from lm_eval_longmem.data.requirements import FETCH_COMMAND, MissingDatasetsError, is_available
from lm_eval_longmem.tasks import registry


def needed(tasks: Iterable[str], options: Mapping[str, Any] | None = None) -> dict[str, list[str]]:
    """{dataset key: [tasks needing it]} for our tasks among `tasks` (others are ignored)."""
    options = dict(options or {})
    needs: dict[str, list[str]] = {}
    for task in registry.expand_groups(tasks):
        declaration = registry.find(task)
        for dataset in declaration.needs(options) if declaration else ():
            if task not in needs.setdefault(dataset.key, []):
                needs[dataset.key].append(task)
    return needs


def missing_for(tasks: Iterable[str], options: Mapping[str, Any] | None = None) -> None:
    """Raise `MissingDatasetsError` naming every dataset the tasks need that is not here."""
    known = registry.datasets()
    needs = needed(tasks, options)
    missing = {key: users for key, users in needs.items() if not is_available(known[key])[0]}
    if missing:
        raise MissingDatasetsError(missing_message(missing))


def missing_message(missing: Mapping[str, list[str]]) -> str:
    known = registry.datasets()
    lines = [f"{len(missing)} dataset(s) these tasks need are not in the local cache and the Hub cannot be reached:"]
    for key, users in missing.items():
        lines.append(f"  - {known[key].title}, for {', '.join(users)}")
    keys = " ".join(missing)
    lines.append(
        f"Fix: fetch them all with `{FETCH_COMMAND} {keys}` on a machine that reaches the Hub (then copy "
        "~/.cache/huggingface here if this machine has no network), or point the tasks at local copies ("
        + "; ".join(f"--metadata {option}" for option in local_alternatives(missing))
        + ")."
    )
    return "\n".join(lines)


def local_alternatives(needs: Mapping[str, Iterable[str]]) -> list[str]:
    """The --metadata options that point these tasks at local copies of these datasets, each once."""
    options = {registry.find(task).alternative_to(key) for key, users in needs.items() for task in users}
    return sorted(option for option in options if option)
