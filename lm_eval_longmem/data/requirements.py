"""Which Hub datasets our tasks need, whether this machine has them, and fetching them all.

Each task fails fast on its own when its data is missing offline, but a group stops at the
first such task, so a user would fix one dataset per run. Before lm-eval builds anything,
`missing_for(tasks, options)` probes the local cache for every dataset the requested tasks
need (with the options given: a task pointed at local files needs nothing from the Hub), and
`MissingDatasetsError` lists them all with the one command that fetches them:
`lm-eval-longmem fetch-data` (cli/fetch_data.py), which calls `fetch()` here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lm_eval_longmem.data.hub_datasets import DatasetUnavailableError

FETCH_COMMAND = "lm-eval-longmem fetch-data"
GROUP_FILE = Path(__file__).resolve().parent.parent / "tasks" / "longmem" / "longmem.yaml"
GROUP_NAME = "longmem"


class MissingDatasetsError(DatasetUnavailableError):
    """Datasets the requested tasks need are neither cached nor reachable; lists them all."""


@dataclass(frozen=True)
class HubDataset:
    key: str  # name on the fetch-data command line
    title: str  # what it is, for messages
    load: Callable[[], Any]  # loads it: from the cache only when the Hub is unreachable
    local_option: str  # the --metadata option that points the task at local copies instead


def _load_pg19():
    from lm_eval_longmem.data.corpora import load_pg19

    return load_pg19()


def _load_trec():
    from lm_eval_longmem.data.trec import load_trec

    return load_trec()


def _load_manyshots():
    from lm_eval_longmem.data.trec import MANYSHOT_COUNTS, load_manyshot_rows

    return [load_manyshot_rows(shots) for shots in MANYSHOT_COUNTS]


def _load_topicret():
    from lm_eval_longmem.data.leval_topicret import load_topicret

    return load_topicret()


DATASETS = {
    d.key: d
    for d in (
        HubDataset("pg19", "emozilla/pg19-test (PG-19 test books, the forgetting curve's paper corpus)", _load_pg19,
                   "fc_corpus=shakespeare or a path to text files"),
        HubDataset("trec", "CogComp/trec (TREC questions, parquet conversion)", _load_trec, "trec_data_dir=DIR"),
        HubDataset("trec-manyshots", "Leooyii/manyshots_trec (the published many-shot prompts)", _load_manyshots,
                   "trec_data_dir=DIR"),
        HubDataset("leval-topicret", "L4NLP/LEval topic_retrieval_longchat (TopicRet chats)", _load_topicret,
                   "topicret_data=PATH"),
    )
}


def group_members(name: str = GROUP_NAME) -> list[str]:
    """The task names of our group, read from its YAML (so the list cannot drift from it)."""
    return [task for task, _ in group_entries(name)]


def group_entries(name: str = GROUP_NAME) -> list[tuple[str, dict[str, Any]]]:
    """(task, the `metadata:` the group gives it) for each member of our group; [] for any other name."""
    import yaml

    if name != GROUP_NAME:
        return []
    config = yaml.safe_load(GROUP_FILE.read_text("utf-8"))
    return [
        (entry["task"], dict(entry.get("metadata") or {})) if isinstance(entry, dict) else (entry, {})
        for entry in config.get("task", [])
    ]


def expand_groups(tasks: Iterable[str]) -> list[str]:
    """`tasks` with our group replaced by its members."""
    expanded: list[str] = []
    for task in tasks:
        expanded += [t for t in group_members(task) or [task] if t not in expanded]
    return expanded


def _option(options: Mapping[str, Any], key: str) -> str | None:
    value = options.get(key)
    return None if value is None or str(value).strip().lower() in ("", "none", "null") else str(value).strip()


def needed(tasks: Iterable[str], options: Mapping[str, Any] | None = None) -> dict[str, list[str]]:
    """{dataset key: [tasks needing it]} for our tasks among `tasks` (others are ignored).

    Only what a task cannot run without: `fc_corpus=auto` (the default) falls back to the
    offline corpus, so PG-19 is needed only when asked for by name.
    """
    options = dict(options or {})
    expanded = expand_groups(tasks)
    needs: dict[str, list[str]] = {}

    def need(key: str, task: str) -> None:
        if task not in needs.setdefault(key, []):
            needs[key].append(task)

    for task in expanded:
        if task == "forgetting_curve" and _option(options, "fc_corpus") == "pg19":
            need("pg19", task)
        elif task == "longmem_perplexity" and _option(options, "ppl_corpus") == "pg19":
            need("pg19", task)
        elif task == "longmem_trec_manyshot" and not _option(options, "trec_data_dir"):
            need("trec-manyshots" if _option(options, "trec_source") == "manyshots" else "trec", task)
        elif task == "longmem_topicret" and not _option(options, "topicret_data"):
            need("leval-topicret", task)
    return needs


def is_available(key: str) -> tuple[bool, str]:
    """Whether dataset `key` loads here (cache only when offline), and why not."""
    from lm_eval_longmem.errors import LongMemError

    try:
        DATASETS[key].load()
    except LongMemError as err:
        return False, str(err)
    return True, ""


def missing_for(tasks: Iterable[str], options: Mapping[str, Any] | None = None) -> None:
    """Raise `MissingDatasetsError` naming every dataset the tasks need that is not here."""
    needs = needed(tasks, options)
    missing = {key: users for key, users in needs.items() if not is_available(key)[0]}
    if missing:
        raise MissingDatasetsError(missing_message(missing))


def missing_message(missing: Mapping[str, list[str]]) -> str:
    lines = [f"{len(missing)} dataset(s) these tasks need are not in the local cache and the Hub cannot be reached:"]
    for key, users in missing.items():
        lines.append(f"  - {DATASETS[key].title}, for {', '.join(users)}")
    keys = " ".join(missing)
    lines.append(
        f"Fix: fetch them all with `{FETCH_COMMAND} {keys}` on a machine that reaches the Hub (then copy "
        "~/.cache/huggingface here if this machine has no network), or point the tasks at local copies ("
        + ", ".join(f"--metadata {option}" for option in sorted({DATASETS[key].local_option for key in missing}))
        + ")."
    )
    return "\n".join(lines)


def fetch(keys: Iterable[str], report: Callable[[str], None] = print) -> list[str]:
    """Download (into the Hugging Face caches) each dataset in `keys`; returns those that failed."""
    failed = []
    for key in keys:
        report(f"fetching {key}: {DATASETS[key].title} ...")
        ok, why = is_available(key)
        report(f"  {'ok, cached' if ok else 'FAILED: ' + why}")
        if not ok:
            failed.append(key)
    return failed
