"""lm-eval's own tasks that need packages of an lm-eval extra (`lm_eval[ruler]`, `[longbench]`,
...): say which is missing in one line before anything loads.

Without this, `--tasks ruler_vt` on a machine without wonderwords ends in lm-eval's ImportError
traceback, after its task index. lm-eval names its task extras in its own metadata (the `tasks`
extra lists them: ruler, longbench, ifeval, ...), and each extra's tasks live in the task folder
of the same name (`lm_eval/tasks/ruler/`: `ruler_vt`, `niah_single_1`, the `ruler` group), so
both are read from there, not from a list kept here. A task of another folder with a similar
name (a local copy such as `ruler_vt_local` that leaves the NIAH part out) is not touched.
"""

from __future__ import annotations

import importlib.metadata
import re
from functools import cache

from lm_eval_longmem.errors import LongMemError

_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


class MissingTaskPackageError(LongMemError, ImportError):
    """A requested lm-eval task needs packages of an lm-eval extra that are not installed."""


@cache
def task_extras() -> dict[str, tuple[str, ...]]:
    """lm-eval's task extras (those its `tasks` extra pulls in) -> the distributions each needs."""
    from packaging.requirements import Requirement

    needs: dict[str, list[Requirement]] = {}
    for line in importlib.metadata.requires("lm_eval") or []:
        marker = _EXTRA_MARKER.search(line)
        if marker:
            needs.setdefault(_normalized(marker.group(1)), []).append(Requirement(line.split(";")[0]))
    listed = {_normalized(extra) for requirement in needs.get("tasks", []) for extra in requirement.extras}
    return {
        extra: tuple(requirement.name for requirement in needs[extra]) for extra in sorted(listed) if extra in needs
    }


def _normalized(name: str) -> str:
    return name.replace("-", "_").lower()


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


_NAME_LINE = re.compile(r"^(?:task|group|tag):[ \t]*([\w.-]+)[ \t]*$", re.MULTILINE)
_TAG_LIST = re.compile(r"^tag:[ \t]*\n((?:[ \t]+-[ \t]*[\w.-]+[ \t]*\n)+)", re.MULTILINE)


@cache
def builtin_names(extra: str) -> frozenset[str]:
    """The task, group and tag names lm-eval's own YAMLs in `lm_eval/tasks/<extra>/` declare."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("lm_eval")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    folder = Path(next(iter(spec.submodule_search_locations))) / "tasks" / extra
    names: set[str] = set()
    for path in folder.rglob("*.yaml"):
        text = path.read_text(encoding="utf-8", errors="replace")
        names.update(_NAME_LINE.findall(text))
        for block in _TAG_LIST.findall(text):
            names.update(item.strip().lstrip("-").strip() for item in block.splitlines() if item.strip())
    return frozenset(names)


def check_task_extras(tasks: list[str]) -> None:
    """Raise one line for the first requested lm-eval task whose extra is not installed."""
    for task in tasks:
        for extra, distributions in task_extras().items():
            if task not in builtin_names(extra):
                continue
            missing = [d for d in distributions if not _installed(d)]
            if missing:
                raise MissingTaskPackageError(
                    f"lm-eval's task {task} needs {', '.join(missing)} (the lm_eval[{extra}] extra), which "
                    f'{"is" if len(missing) == 1 else "are"} not installed: pip install "lm_eval[{extra}]"'
                )
