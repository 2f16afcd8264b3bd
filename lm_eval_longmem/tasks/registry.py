"""Every task of ours, found by its declaration (`<folder>/declaration.py` exposing
`DECLARATION`, see tasks/declaration.py), and the questions the rest of the package asks of them.

The folders scanned are `TASK_FOLDERS`: this package's tasks folder. It is the one hook for
adding tasks from elsewhere; a test adds a throw-away task with
`monkeypatch.setattr(registry, "TASK_FOLDERS", (*registry.TASK_FOLDERS, folder))`. A declaration
under this package is imported as `lm_eval_longmem.tasks.<folder>.declaration`; one from another
folder is read from its file (it may import only installed modules, not its neighbours).

Order (of the leaderboard's columns, of listings): the `longmem` group's YAML, then any task
outside the group by name. So adding a task is one folder plus its line in `longmem/longmem.yaml`.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lm_eval_longmem.data.requirements import HubDataset
from lm_eval_longmem.errors import LongMemError
from lm_eval_longmem.tasks import TASKS_DIR
from lm_eval_longmem.tasks.declaration import TaskDeclaration

TASK_FOLDERS: tuple[str | Path, ...] = (TASKS_DIR,)
DECLARATION_FILE = "declaration.py"
GROUP_NAME = "longmem"
GROUP_FILE = Path(TASKS_DIR) / "longmem" / "longmem.yaml"


class TaskDeclarationError(LongMemError, ValueError):
    """Two declarations claim one task name or one dataset name, or a declaration is malformed."""


def declarations() -> tuple[TaskDeclaration, ...]:
    """All of our tasks' declarations, in order."""
    return _scan(tuple(str(folder) for folder in TASK_FOLDERS))


def task_names() -> list[str]:
    return [declaration.name for declaration in declarations()]


def find(name: str) -> TaskDeclaration | None:
    """The declaration of the task called `name`; None for a task that is not ours."""
    return next((declaration for declaration in declarations() if declaration.name == name), None)


def position(name: str) -> int:
    """`name`'s place among our tasks; tasks not ours come after all of them."""
    names = task_names()
    return names.index(name) if name in names else len(names)


def datasets() -> dict[str, HubDataset]:
    """fetch-data name -> the Hub dataset, for every dataset any task may need, in task order."""
    found: dict[str, HubDataset] = {}
    for declaration in declarations():
        for need in declaration.datasets:
            found.setdefault(need.dataset.key, need.dataset)
    return found


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


def group_members(name: str = GROUP_NAME) -> list[str]:
    """The task names of our group, read from its YAML (so the list cannot drift from it)."""
    return [task for task, _ in group_entries(name)]


def expand_groups(tasks: Iterable[str]) -> list[str]:
    """`tasks` with our group replaced by its members."""
    expanded: list[str] = []
    for task in tasks:
        expanded += [t for t in group_members(task) or [task] if t not in expanded]
    return expanded


@functools.lru_cache(maxsize=8)
def _scan(folders: tuple[str, ...]) -> tuple[TaskDeclaration, ...]:
    found: dict[str, TaskDeclaration] = {}
    for folder in folders:
        for path in sorted(Path(folder).glob(f"*/{DECLARATION_FILE}")):
            declaration = getattr(_load(path), "DECLARATION", None)
            if not isinstance(declaration, TaskDeclaration):
                raise TaskDeclarationError(f"{path} has no DECLARATION (a tasks.declaration.TaskDeclaration)")
            if declaration.name in found:
                raise TaskDeclarationError(f"task {declaration.name!r} is declared twice (again in {path})")
            found[declaration.name] = declaration
    _check_datasets(found.values())
    in_group = group_members()
    return tuple(
        sorted(found.values(), key=lambda d: (0, in_group.index(d.name)) if d.name in in_group else (1, d.name))
    )


def _load(path: Path):
    package_folder = Path(TASKS_DIR)
    if path.parent.parent == package_folder:
        return importlib.import_module(f"lm_eval_longmem.tasks.{path.parent.name}.declaration")
    spec = importlib.util.spec_from_file_location(f"_longmem_task_declaration_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_datasets(declared: Iterable[TaskDeclaration]) -> None:
    """One fetch-data name, one dataset: a dataset two tasks share is one definition (data/)."""
    seen: dict[str, HubDataset] = {}
    for declaration in declared:
        for need in declaration.datasets:
            if seen.setdefault(need.dataset.key, need.dataset) is not need.dataset:
                raise TaskDeclarationError(
                    f"dataset {need.dataset.key!r} is defined twice (again by {declaration.name}): define it once "
                    "and name it in both declarations"
                )
