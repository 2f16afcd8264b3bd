"""The docs' method tables, rendered from the method classes, so that a method's facts stand in one
place: its class (`name`, `summary`, `Args` with defaults and help, `paper`, `docs_page`,
`more_arguments`) and the family table (`method_registry/family_support.py`).

A generated block sits in a Markdown page between `<!-- generated: KIND -->` and
`<!-- end generated -->`; everything else on the page is written by hand. The kinds:

* `methods`: the README's table (method, what it is, paper, its page);
* `method-table`: docs/model.md's table (method, arguments with their defaults, what it does);
* `method-arguments`: every method's arguments (type, default, meaning), one table each;
* `arguments:NAME`: method NAME's arguments alone (on its own page);
* `families`: the method x model family table;
* `method-pages`: docs/index.md's bullets, one per method page with the methods it describes.

    python -m lm_eval_longmem.report.docs_tables           # exit 1, naming the stale pages
    python -m lm_eval_longmem.report.docs_tables --write   # rewrite them

tests/project/test_docs_tables.py fails, printing that command, when a committed page differs.
Methods are listed by page, the page describing the most first (`vanilla`, on the model's page,
leads), and by name within a page.
"""

from __future__ import annotations

import argparse
import posixpath
import re
import sys
from collections.abc import Callable
from pathlib import Path

from lm_eval_longmem.models.method_framework.arguments import REQUIRED, argument_facts
from lm_eval_longmem.models.method_framework.base import LongMemMethod

REWRITE_COMMAND = "python -m lm_eval_longmem.report.docs_tables --write"
MODEL_PAGE = "model.md"  # the page of a method no other page describes

_BLOCK = re.compile(
    r"(?P<open><!-- generated: (?P<kind>[\w:-]+)[^\n]*?-->\n)(?P<body>.*?)(?P<close><!-- end generated -->)",
    re.DOTALL,
)
_TITLE = re.compile(r"^# (.+)$", re.MULTILINE)


def repository_root() -> Path:
    """The checkout the package runs from (the docs are not installed with it)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "README.md").is_file() or not (root / "docs").is_dir():
        raise SystemExit(f"error: {root} is not a checkout of lm-eval-longmem: run this from one (pip install -e .)")
    return root


def ordered_methods(methods: dict[str, type[LongMemMethod]]) -> list[type[LongMemMethod]]:
    """The model page's methods first, then by page (the page describing most first), by name within."""
    per_page: dict[str, int] = {}
    for cls in methods.values():
        per_page[_page(cls)] = per_page.get(_page(cls), 0) + 1
    return sorted(methods.values(), key=lambda c: (_page(c) != MODEL_PAGE, -per_page[_page(c)], _page(c), c.name))


def _page(cls: type[LongMemMethod]) -> str:
    return cls.docs_page.partition("#")[0]


def _cell(text: str) -> str:
    """Text for a table cell: a `|` would end the cell, a newline the row."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _link(cls: type[LongMemMethod], from_page: str, titles: dict[str, str]) -> str:
    """A Markdown link from `from_page` (a path from the repository root) to the method's page."""
    page, _, anchor = cls.docs_page.partition("#")
    target = posixpath.relpath(posixpath.join("docs", page), posixpath.dirname(from_page) or ".")
    return f"[{titles.get(page, page)}]({target}{'#' + anchor if anchor else ''})"


def _default(value) -> str:
    if value is REQUIRED:
        return "(required)"
    if value is None:
        return "see meaning"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _arguments(cls: type[LongMemMethod]) -> list[tuple[str, str, str, str]]:
    """(argument, type, default, meaning) rows: the fields of `Args`, then `more_arguments`."""
    rows = [(f"`{a.name}`", f"`{a.type_name}`", _default(a.default), a.help) for a in argument_facts(cls.Args)]
    rows += [
        (f"`{name}`" if " " not in name else name, "", default, meaning)
        for name, default, meaning in cls.more_arguments
    ]
    return rows


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def readme_methods(methods, page: str, titles: dict[str, str]) -> str:
    rows = [[f"`{c.name}`", c.summary, c.paper, _link(c, page, titles)] for c in ordered_methods(methods)]
    return _table(["method", "what it is", "paper", "details"], rows)


def method_table(methods, page: str, titles: dict[str, str]) -> str:
    rows = []
    for c in ordered_methods(methods):
        arguments = []
        for a in argument_facts(c.Args):
            shown = _default(a.default)
            suffix = {"see meaning": "", "(required)": " (required)"}.get(shown, f"={shown}")
            arguments.append(f"`{a.name}`{suffix}")
        arguments += [f"`{name}`" if " " not in name else name for name, _, _ in c.more_arguments]
        rows.append([f"`{c.name}`", ", ".join(arguments) or "none", c.summary, _link(c, page, titles)])
    return _table(["method", "arguments", "what it does", "details"], rows)


def method_arguments(methods, page: str, titles: dict[str, str]) -> str:
    parts = []
    for c in ordered_methods(methods):
        rows = _arguments(c)
        parts.append(
            f"### `{c.name}`\n\n"
            + (_table(["argument", "type", "default", "meaning"], rows) if rows else "No arguments.\n")
        )
    return "\n".join(parts)


def one_method_arguments(name: str) -> Callable:
    def render(methods, page: str, titles: dict[str, str]) -> str:
        if name not in methods:
            raise KeyError(f"{page}: `<!-- generated: arguments:{name} -->` names no method")
        return _table(["argument", "type", "default", "meaning"], _arguments(methods[name]))

    return render


def families(methods, page: str, titles: dict[str, str]) -> str:
    from lm_eval_longmem.models.method_registry.family_support import markdown_table

    return markdown_table(list(methods.values())) + "\n"


def method_pages(methods, page: str, titles: dict[str, str]) -> str:
    pages: dict[str, list[str]] = {}
    for c in ordered_methods(methods):
        if _page(c) != MODEL_PAGE:
            pages.setdefault(_page(c), []).append(c.name)
    lines = []
    for target, names in pages.items():
        link = posixpath.relpath(posixpath.join("docs", target), posixpath.dirname(page) or ".")
        lines.append(f"* [{titles.get(target, target)}]({link}): {', '.join(f'`{n}`' for n in names)}.")
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable] = {
    "methods": readme_methods,
    "method-table": method_table,
    "method-arguments": method_arguments,
    "families": families,
    "method-pages": method_pages,
}


def renderer(kind: str) -> Callable:
    if kind.startswith("arguments:"):
        return one_method_arguments(kind.partition(":")[2])
    if kind not in RENDERERS:
        raise KeyError(f"unknown generated block {kind!r}: one of {', '.join(RENDERERS)}, arguments:NAME")
    return RENDERERS[kind]


def page_titles(pages: dict[str, str]) -> dict[str, str]:
    """docs page (from docs/) -> its title up to a colon: the text of links to it."""
    titles = {}
    for path, text in pages.items():
        m = _TITLE.search(text)
        if path.startswith("docs/") and m:
            titles[path.removeprefix("docs/")] = m.group(1).partition(": ")[0].strip()
    return titles


def regenerate(pages: dict[str, str], methods: dict[str, type[LongMemMethod]]) -> dict[str, str]:
    """Each page (path from the repository root -> text) with its generated blocks rendered anew."""
    titles = page_titles(pages)

    def fill(page: str, m: re.Match) -> str:
        return m.group("open") + renderer(m.group("kind"))(methods, page, titles) + m.group("close")

    return {page: _BLOCK.sub(lambda m, p=page: fill(p, m), text) for page, text in pages.items()}


def generated_kinds(text: str) -> list[str]:
    return [m.group("kind") for m in _BLOCK.finditer(text)]


def read_pages(root: Path) -> dict[str, str]:
    paths = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in paths}


def stale_pages(root: Path) -> dict[str, str]:
    """The pages whose generated blocks differ from what the code renders now: path -> new text."""
    from lm_eval_longmem.models.method_registry import available_methods

    pages = read_pages(root)
    fresh = regenerate(pages, available_methods())
    return {page: text for page, text in fresh.items() if text != pages[page]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lm_eval_longmem.report.docs_tables",
        description="Check (or --write) the docs' tables generated from the method classes.",
    )
    parser.add_argument("--write", action="store_true", help="rewrite the stale pages' generated blocks")
    options = parser.parse_args(argv)
    root = repository_root()
    stale = stale_pages(root)
    if options.write:
        for page, text in stale.items():
            (root / page).write_text(text, encoding="utf-8")
            print(f"rewrote {page}")
        return 0
    if stale:
        print(f"stale generated tables in: {', '.join(stale)}; rewrite them with: {REWRITE_COMMAND}")
        return 1
    print("the generated tables are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
