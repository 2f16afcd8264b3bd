"""The docs list what the code has: every task, training approach, recipe and kernel op has its
row (or page), and no row names one that is gone. (The method tables are generated from the
method classes: tests/project/test_docs_tables.py holds them.)

What is read from the code: the task registry's declarations and the `longmem` group's members,
`available_approaches()`, the shipped recipes (training/recipes/*.yaml, with their `approach:`) and
the op folders of lm_eval_longmem/kernels/. What is read from the docs: specific Markdown tables,
found by their first header cell under a given section heading, and the name(s) in backticks in the
first cell of each row; the link lists of docs/index.md; page titles. Nothing is a loose search of a
whole page, so a removed row fails:

* tasks (and the group): README.md's tasks table and docs/index.md's task list, each task linked
  to its own docs/tasks/ page whose title names it; the group's page names every member;
* approaches: docs/training.md's approaches table;
* recipes: docs/training.md's recipes table, whose approach column agrees with the YAML;
* kernel ops: a heading of docs/kernels.md naming `lm_eval_longmem/kernels/<op>/`.

Every message names the item and the file and table to fix. The second half runs each check on
a doctored copy of the pages and sees it fail.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.helpers.markdown import lines_outside_fences

ROOT = Path(__file__).resolve().parents[2]

README = "README.md"
INDEX = "docs/index.md"
TRAINING = "docs/training.md"
KERNELS = "docs/kernels.md"
TASK_PAGES = "docs/tasks/"

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]+)>?\s*\)")
_SEPARATOR_CELL = re.compile(r"^:?-{3,}:?$")


# --- reading Markdown --------------------------------------------------------------------------


def split_row(line: str) -> list[str]:
    """The cells of a table row; a `|` inside backticks or escaped as `\\|` does not split."""
    cells, cell, in_code, i = [], "", False, 0
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body) and body[i + 1] == "|":
            cell += "|"
            i += 2
            continue
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append(cell.strip())
            cell = ""
        else:
            cell += ch
        i += 1
    cells.append(cell.strip())
    return cells


@dataclass
class Table:
    page: str
    heading: str  # the nearest heading above it ("" at the top of the page)
    line: int  # of its header row
    header: list[str]
    rows: list[tuple[int, list[str]]]  # (line number, cells)

    def describe(self) -> str:
        under = f" under '{self.heading}'" if self.heading else ""
        return f"{self.page}'s '{self.header[0]}' table{under}"


def tables(page: str, text: str) -> list[Table]:
    found: list[Table] = []
    heading, previous, current = "", None, None
    for number, line in lines_outside_fences(text):
        m = _HEADING.match(line)
        if m:
            heading = f"{m.group(1)} {m.group(2)}"
        if not line.lstrip().startswith("|"):
            previous, current = None, None
            continue
        cells = split_row(line)
        if current is not None:
            current.rows.append((number, cells))
        elif previous is not None and cells and all(_SEPARATOR_CELL.match(c) for c in cells):
            current = Table(page, heading, previous[0], previous[1], [])
            found.append(current)
        else:
            previous = (number, cells)
    return found


def find_table(
    pages: Mapping[str, str], page: str, first_header: str, heading: str | None = None, second_header: str | None = None
) -> Table:
    """The table of `page` whose header starts with `first_header` (and `second_header`), under a
    heading that starts with `heading` when given. Fails, naming what was looked for, when none is."""
    for table in tables(page, pages[page]):
        header = [c.strip("` ").lower() for c in table.header]
        if header[0] != first_header or (second_header and (len(header) < 2 or header[1] != second_header)):
            continue
        if heading and not table.heading.startswith(heading):
            continue
        return table
    under = f" under '{heading}'" if heading else ""
    pytest.fail(
        f"{page} has no table whose header starts with '{first_header}'{under}: the docs-sync "
        "check reads that table (restore it, or update tests/project/test_docs_sync.py)"
    )


def names_in(cell: str) -> list[str]:
    """The names in backticks in a cell (`pi`, `ntk`, `yarn` -> pi, ntk, yarn)."""
    return [m.group(1).strip() for m in _CODE.finditer(cell)]


def first_cell_names(table: Table) -> dict[str, int]:
    """name -> line number, for each name in backticks in the first cell of each row."""
    return {name: number for number, cells in table.rows for name in names_in(cells[0])}


def links_in(text: str) -> list[tuple[str, str]]:
    """(link text, target without #anchor) of each Markdown link in `text`."""
    return [(m.group(1), m.group(2).partition("#")[0]) for m in _LINK.finditer(text)]


def resolve(page: str, target: str) -> str:
    """A relative link's target as a path from the repository root."""
    return posixpath.normpath(posixpath.join(posixpath.dirname(page), target))


def title(text: str) -> str:
    for _, line in lines_outside_fences(text):
        m = _HEADING.match(line)
        if m and len(m.group(1)) == 1:
            return m.group(2)
    return ""


def names_the(text: str, name: str) -> bool:
    """Whether the page names `name` in backticks (`name` or `method=name`) outside code blocks."""
    spans = {m.group(1).strip() for _, line in lines_outside_fences(text) for m in _CODE.finditer(line)}
    return name in spans or f"method={name}" in spans


def section(text: str, heading: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines under the heading that starts with `heading`, up to the next
    heading of the same or a higher level."""
    out, level = [], None
    for number, line in lines_outside_fences(text):
        m = _HEADING.match(line)
        if m:
            if level is not None and len(m.group(1)) <= level:
                break
            if level is None and f"{m.group(1)} {m.group(2)}".startswith(heading):
                level = len(m.group(1))
                continue
        if level is not None:
            out.append((number, line))
    return out


def bullets(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(line number, text) of each `* ` or `- ` list item, its indented continuation lines joined."""
    items: list[tuple[int, str]] = []
    for number, line in lines:
        if re.match(r"^[*-] ", line):
            items.append((number, line[2:].strip()))
        elif items and line.startswith("  ") and line.strip():
            items[-1] = (items[-1][0], items[-1][1] + " " + line.strip())
    return items


def compare(
    kind: str,
    expected: Iterable[str],
    listed: Mapping[str, int],
    where: str,
    source: str,
    fix: str = "add a row for it",
) -> list[str]:
    """A problem for each expected name that is not listed, and for each listed name that is not expected."""
    expected = list(expected)
    problems = [f"{kind} `{name}` is missing from {where}: {fix}" for name in expected if name not in listed]
    problems += [
        f"{where} (line {line}) lists `{name}`, which is no {kind} of {source}: remove the row or fix the name"
        for name, line in listed.items()
        if name not in expected
    ]
    return problems


# --- the checks --------------------------------------------------------------------------------


def task_problems(tasks: Iterable[str], group: str, members: Iterable[str], pages: Mapping[str, str]) -> list[str]:
    expected = [*dict.fromkeys([*tasks, *members]), group]
    source = "the task registry (tasks/registry.py) or its group"
    readme = find_table(pages, README, "task", heading="## Tasks")
    problems = compare("task", expected, first_cell_names(readme), readme.describe(), source)

    index_pages: dict[str, tuple[int, str]] = {}  # task -> (line, its page)
    for number, item in bullets(section(pages[INDEX], "## Tasks")):
        for text, target in links_in(item)[:1]:
            for name in names_in(text):
                index_pages[name] = (number, resolve(INDEX, target))
    where = f"{INDEX}'s list under '## Tasks'"
    problems += compare(
        "task",
        expected,
        {name: line for name, (line, _) in index_pages.items()},
        where,
        source,
        fix=f"add a bullet linking its page in {TASK_PAGES}",
    )
    for name, (number, page) in index_pages.items():
        if name not in expected:
            continue
        if not page.startswith(TASK_PAGES):
            problems.append(
                f"{where} (line {number}) links `{name}` to {page}: each task has its own page in {TASK_PAGES}"
            )
        elif page not in pages:
            problems.append(f"{where} (line {number}) links `{name}` to {page}, which does not exist: write it")
        elif name not in names_in(title(pages[page])):
            problems.append(
                f"{page}'s title does not name `{name}` ({where} links it there, line {number}): "
                f"put `{name}` in its first heading"
            )
    linked = {page for _, page in index_pages.values()}
    for page in sorted(p for p in pages if p.startswith(TASK_PAGES)):
        if page not in linked:
            problems.append(f"{page} is not linked from {where}: link it, with its task's name in backticks")

    for number, cells in readme.rows:
        for name in names_in(cells[0]):
            targets = [resolve(README, target) for _, target in links_in(cells[-1])]
            if name in index_pages and (not targets or targets[0] != index_pages[name][1]):
                problems.append(
                    f"{readme.describe()}: the row of `{name}` (line {number}) links "
                    f"{targets[0] if targets else 'no page'}, {INDEX} links {index_pages[name][1]}: "
                    "link the task's own page in both"
                )

    group_page = index_pages.get(group, (0, ""))[1]
    if group_page in pages:
        for member in members:
            if not names_the(pages[group_page], member):
                problems.append(
                    f"{group_page} does not name `{member}`, a member of the `{group}` group "
                    "(tasks/longmem/longmem.yaml): add it to the members it lists"
                )
    return problems


def approach_problems(approaches: Iterable[str], pages: Mapping[str, str]) -> list[str]:
    table = find_table(pages, TRAINING, "approach")
    return compare(
        "training approach", list(approaches), first_cell_names(table), table.describe(), "available_approaches()"
    )


def recipe_problems(recipes: Mapping[str, str], pages: Mapping[str, str]) -> list[str]:
    """`recipes`: each shipped recipe's name -> the approach its YAML sets."""
    table = find_table(pages, TRAINING, "recipe", second_header="approach")
    problems = compare("recipe", list(recipes), first_cell_names(table), table.describe(), "training/recipes/*.yaml")
    for number, cells in table.rows:
        approaches = names_in(cells[1]) if len(cells) > 1 else []
        for name in names_in(cells[0]):
            if name not in recipes:
                continue
            if approaches and recipes[name] not in approaches:
                problems.append(
                    f"{table.describe()}: `{name}` (line {number}) is given approach "
                    f"{', '.join(approaches)}, but training/recipes/{name}.yaml sets approach: "
                    f"{recipes[name]}: fix the approach column"
                )
            full = name.removeprefix("tiny-")
            if not approaches and recipes.get(full, recipes[name]) != recipes[name]:
                problems.append(
                    f"{table.describe()}: `{name}` (line {number}) takes the approach of its full "
                    f"recipe, but training/recipes/{name}.yaml sets approach: {recipes[name]} and "
                    f"{full}.yaml {recipes[full]}: give it a row of its own"
                )
    return problems


def kernel_problems(ops: Iterable[str], pages: Mapping[str, str]) -> list[str]:
    documented: dict[str, int] = {}
    for number, line in lines_outside_fences(pages[KERNELS]):
        m = _HEADING.match(line)
        if m:
            for span in names_in(m.group(2)):
                op = re.fullmatch(r"lm_eval_longmem/kernels/([A-Za-z0-9_]+)/?", span)
                if op:
                    documented[op.group(1)] = number
    ops = list(ops)
    where = f"{KERNELS}'s headings"
    problems = [
        f"kernel op `{op}` (lm_eval_longmem/kernels/{op}/) is missing from {where}: add a section whose "
        f"heading names `lm_eval_longmem/kernels/{op}/`"
        for op in ops
        if op not in documented
    ]
    problems += [
        f"{where} (line {line}) name `lm_eval_longmem/kernels/{op}/`, which is no op folder: remove or "
        "rename that section"
        for op, line in documented.items()
        if op not in ops
    ]
    return problems


# --- what the code has -------------------------------------------------------------------------


def read_pages() -> dict[str, str]:
    paths = [ROOT / README, *sorted((ROOT / "docs").rglob("*.md"))]
    return {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8") for path in paths}


def code_tasks() -> tuple[list[str], str, list[str]]:
    from lm_eval_longmem.tasks import registry

    return registry.task_names(), registry.GROUP_NAME, registry.group_members()


def code_approaches() -> list[str]:
    from lm_eval_longmem_training.approaches import available_approaches

    return list(available_approaches())


def code_recipes() -> dict[str, str]:
    from lm_eval_longmem_training.recipes.loading import shipped_recipes

    return {
        name: str(yaml.safe_load(path.read_text(encoding="utf-8")).get("approach"))
        for name, path in shipped_recipes().items()
    }


def code_kernel_ops() -> list[str]:
    folder = ROOT / "lm_eval_longmem" / "kernels"
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").is_file())


def _report(problems: list[str]) -> str:
    return "the docs and the code disagree:\n  " + "\n  ".join(problems)


def test_every_task_has_its_row_and_page():
    problems = task_problems(*code_tasks(), read_pages())
    assert not problems, _report(problems)


def test_every_training_approach_has_its_row():
    problems = approach_problems(code_approaches(), read_pages())
    assert not problems, _report(problems)


def test_every_recipe_has_its_row_with_its_approach():
    problems = recipe_problems(code_recipes(), read_pages())
    assert not problems, _report(problems)


def test_every_kernel_op_has_its_section():
    problems = kernel_problems(code_kernel_ops(), read_pages())
    assert not problems, _report(problems)


def test_what_the_checks_read_is_really_there():
    """The checks see the real lists (a parser that read nothing would pass vacuously)."""
    pages = read_pages()
    assert "longmem" in first_cell_names(find_table(pages, README, "task", heading="## Tasks"))
    assert {"tiny-pi", "infini-passkey"} <= set(
        first_cell_names(find_table(pages, TRAINING, "recipe", second_header="approach"))
    )
    assert "forgetting_attention" in code_kernel_ops()


# --- each check, failing on a doctored copy -----------------------------------------------------


def without_line(page: str, fragment: str) -> Callable[[dict[str, str]], None]:
    """Remove the one line of `page` that contains `fragment`."""

    def doctor(pages: dict[str, str]) -> None:
        lines = pages[page].splitlines(keepends=True)
        hits = [i for i, line in enumerate(lines) if fragment in line]
        assert len(hits) == 1, f"{fragment!r} is on {len(hits)} lines of {page}"
        del lines[hits[0]]
        pages[page] = "".join(lines)

    return doctor


def replaced(page: str, old: str, new: str) -> Callable[[dict[str, str]], None]:
    def doctor(pages: dict[str, str]) -> None:
        assert pages[page].count(old) == 1, f"{old!r} is not once in {page}"
        pages[page] = pages[page].replace(old, new)

    return doctor


def after_line(page: str, fragment: str, new_line: str) -> Callable[[dict[str, str]], None]:
    """Insert `new_line` after the one line of `page` that contains `fragment`."""

    def doctor(pages: dict[str, str]) -> None:
        lines = pages[page].splitlines(keepends=True)
        hits = [i for i, line in enumerate(lines) if fragment in line]
        assert len(hits) == 1, f"{fragment!r} is on {len(hits)} lines of {page}"
        lines.insert(hits[0] + 1, new_line + "\n")
        pages[page] = "".join(lines)

    return doctor


def check(kind: str) -> Callable[[Mapping[str, str]], list[str]]:
    """The check of `kind` with the real code's names, to run on (doctored) pages."""
    return {
        "tasks": lambda pages: task_problems(*code_tasks(), pages),
        "approaches": lambda pages: approach_problems(code_approaches(), pages),
        "recipes": lambda pages: recipe_problems(code_recipes(), pages),
        "kernels": lambda pages: kernel_problems(code_kernel_ops(), pages),
    }[kind]


DOCTORED = {
    "README task row removed": (
        "tasks",
        without_line(README, "| `longmem_topicret` |"),
        "task `longmem_topicret` is missing from README.md's 'task' table under '## Tasks'",
    ),
    "group row removed": (
        "tasks",
        without_line(README, "| `longmem` (group) |"),
        "task `longmem` is missing from README.md's 'task' table",
    ),
    "task gone from the index": (
        "tasks",
        without_line(INDEX, "[`longmem_perplexity`](tasks/perplexity.md)"),
        "task `longmem_perplexity` is missing from docs/index.md's list under '## Tasks': add a bullet linking its "
        "page in docs/tasks/",
    ),
    "task page without its name in the title": (
        "tasks",
        replaced("docs/tasks/passkey.md", "# Task: `longmem_passkey`", "# Task: passkey"),
        "docs/tasks/passkey.md's title does not name `longmem_passkey`",
    ),
    "README task linked to another page": (
        "tasks",
        replaced(
            README,
            "L-Eval's TopicRet | [page](docs/tasks/topicret.md)",
            "L-Eval's TopicRet | [page](docs/tasks/passkey.md)",
        ),
        "links docs/tasks/passkey.md, docs/index.md links docs/tasks/topicret.md",
    ),
    "group page missing a member": (
        "tasks",
        replaced(
            "docs/tasks/longmem-group.md",
            "`longmem_topicret`, `longmem_perplexity`",
            "TopicRet, `longmem_perplexity`",
        ),
        "docs/tasks/longmem-group.md does not name `longmem_topicret`, a member of the `longmem` group",
    ),
    "approach row removed": (
        "approaches",
        without_line(TRAINING, "| `from_scratch` | a new model"),
        "training approach `from_scratch` is missing from docs/training.md's 'approach' table",
    ),
    "stale approach row": (
        "approaches",
        after_line(TRAINING, "| `infini` | the base model", "| `distill` | gone | none | nothing |"),
        "lists `distill`, which is no training approach of available_approaches()",
    ),
    "recipe removed from a shared row": (
        "recipes",
        replaced(TRAINING, "`tiny-ntk`, ", ""),
        "recipe `tiny-ntk` is missing from docs/training.md's 'recipe' table",
    ),
    "stale recipe row": (
        "recipes",
        replaced(TRAINING, "| `fox`, `transformer` |", "| `fox`, `transformer`, `mamba` |"),
        "lists `mamba`, which is no recipe of training/recipes/*.yaml",
    ),
    "recipe with the wrong approach": (
        "recipes",
        replaced(TRAINING, "| `longlora` | `longlora` |", "| `longlora` | `rope_extension` |"),
        "is given approach rope_extension, but training/recipes/longlora.yaml sets approach: longlora",
    ),
    "kernel section renamed": (
        "kernels",
        replaced(
            KERNELS, "(`lm_eval_longmem/kernels/forgetting_attention/`)", "(`lm_eval_longmem/kernels/fox_attention/`)"
        ),
        "kernel op `forgetting_attention` (lm_eval_longmem/kernels/forgetting_attention/) is missing from "
        "docs/kernels.md's headings",
    ),
}


@pytest.mark.parametrize("case", list(DOCTORED))
def test_each_check_fails_on_a_doctored_copy_and_names_the_fix(case):
    kind, doctor, expected = DOCTORED[case]
    pages = read_pages()
    assert not check(kind)(pages), "the real pages must pass before a doctored copy can show a failure"
    doctor(pages)
    problems = check(kind)(pages)
    assert any(expected in problem for problem in problems), f"expected {expected!r} in:\n" + "\n".join(problems)


def test_a_stale_kernel_section_and_a_missing_op_are_named():
    pages = read_pages()
    problems = kernel_problems(["forgetting_attention", "grouped_softmax", "top_keys", "alibi_attention"], pages)
    assert problems == [
        "kernel op `alibi_attention` (lm_eval_longmem/kernels/alibi_attention/) is missing from "
        "docs/kernels.md's headings: add a section whose heading names "
        "`lm_eval_longmem/kernels/alibi_attention/`"
    ]
    assert "no op folder" in kernel_problems([], pages)[0]


def test_a_tiny_recipe_whose_approach_is_not_its_full_recipes_is_named():
    recipes = {**code_recipes(), "tiny-fox": "infini"}
    problems = recipe_problems(recipes, read_pages())
    assert len(problems) == 1 and "`tiny-fox`" in problems[0] and "give it a row of its own" in problems[0], problems


def test_a_missing_table_is_named_not_passed():
    pages = read_pages()
    pages[TRAINING] = pages[TRAINING].replace("| approach | what it trains |", "| name | what it trains |")
    with pytest.raises(
        pytest.fail.Exception, match="docs/training.md has no table whose header starts with 'approach'"
    ):
        approach_problems(code_approaches(), pages)


def test_rows_are_split_on_pipes_outside_code_only():
    assert split_row("| `a|b` | c \\| d | e |") == ["`a|b`", "c | d", "e"]
    assert names_in("`pi`, `ntk`, `yarn`") == ["pi", "ntk", "yarn"]
