"""The docs' method tables are what `lm_eval_longmem/report/docs_tables.py` renders from the method
classes: the committed pages equal the generated ones, every table the docs rely on is there, and
each method's page describes it. A failure prints the one command that rewrites the pages."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from lm_eval_longmem.models.method_registry import available_methods
from lm_eval_longmem.report import docs_tables
from lm_eval_longmem.report.docs_tables import REWRITE_COMMAND, generated_kinds, read_pages, regenerate

ROOT = Path(__file__).resolve().parents[2]

# Where each generated table must stand (a page may hold more).
EXPECTED_BLOCKS = {
    "README.md": ["methods"],
    "docs/model.md": ["method-table", "method-arguments", "families"],
    "docs/index.md": ["method-pages"],
    "docs/methods/kvpress.md": ["arguments:kvpress"],
}


def test_the_committed_docs_equal_the_generated_ones():
    stale = docs_tables.stale_pages(ROOT)
    assert not stale, (
        f"the method tables of {', '.join(stale)} differ from the method classes: rewrite them with\n"
        f"    {REWRITE_COMMAND}\n(the tables come from each class's name, summary, Args, paper and docs_page)"
    )


def test_every_generated_table_stands_where_the_docs_need_it():
    pages = read_pages(ROOT)
    missing = [
        f"{page}: <!-- generated: {kind} -->"
        for page, kinds in EXPECTED_BLOCKS.items()
        for kind in kinds
        if kind not in generated_kinds(pages[page])
    ]
    assert not missing, "restore these generated blocks (and their `<!-- end generated -->`): " + "; ".join(missing)


def test_each_method_page_exists_and_names_its_methods():
    """A method's `docs_page` describes it (the tables link it), and every method page is some method's."""
    pages = read_pages(ROOT)
    declared = {}
    for name, cls in available_methods().items():
        page, _, anchor = cls.docs_page.partition("#")
        path = f"docs/{page}"
        assert path in pages, f"method {name}: docs_page {cls.docs_page!r} is no page under docs/"
        assert f"`{name}`" in pages[path] or f"`method={name}`" in pages[path], (
            f"method {name}: its page {path} never names `{name}`: describe it there, or give it its own page"
        )
        declared.setdefault(path, []).append(name)
    orphans = sorted(p for p in pages if p.startswith("docs/methods/") and p not in declared)
    assert not orphans, f"no method names these pages as its docs_page, so no table links them: {orphans}"


@dataclasses.dataclass(frozen=True)
class _WarpArgs:
    window: int = dataclasses.field(default=16, metadata={"help": "tokens | of local attention"})
    factor: float | None = dataclasses.field(default=None, metadata={"help": "the length ratio (default: 4)"})


class _Warp:
    """What the tables read of a method class (a real subclass would register itself)."""

    name = "warp"
    summary = "a method that is not one"
    paper = "Nobody 2099"
    docs_page = "methods/rope.md"
    Args = _WarpArgs
    more_arguments = ()
    rewrites_rope = True


def test_a_new_method_appears_in_every_table_and_a_gone_one_leaves():
    pages = read_pages(ROOT)
    methods = {**available_methods(), "warp": _Warp}
    fresh = regenerate(pages, methods)
    assert (
        "| `warp` | a method that is not one | Nobody 2099 | [RoPE context-extension methods](docs/methods/rope.md) |"
        in fresh["README.md"]
    )
    assert "| `warp` | `window`=16, `factor` | a method that is not one |" in fresh["docs/model.md"]
    assert "| `window` | `int` | 16 | tokens \\| of local attention |" in fresh["docs/model.md"]
    assert "| `factor` | `float \\| None` | see meaning | the length ratio (default: 4) |" in fresh["docs/model.md"]
    assert re.search(r"\(methods/rope\.md\): [^\n]*`warp`", fresh["docs/index.md"])
    # its row of the family table: a RoPE method scales Gemma 3's global layers, as every one does
    assert "| warp | ✔ | ✔ | ✔ | ✔ | ✔ | ✔ | ✔ (global layers) |" in fresh["docs/model.md"]

    without_yarn = regenerate(pages, {k: v for k, v in available_methods().items() if k != "yarn"})
    assert "`yarn`" not in "".join(m.group() for m in docs_tables._BLOCK.finditer(without_yarn["README.md"]))


def test_a_hand_edited_table_is_stale_and_write_restores_it(tmp_path, monkeypatch, capsys):
    for page, text in read_pages(ROOT).items():
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / page).write_text(text, encoding="utf-8")
    readme = tmp_path / "README.md"
    original = readme.read_text(encoding="utf-8")
    readme.write_text(original.replace("| `yarn` |", "| `yarn_by_hand` |"), encoding="utf-8")
    monkeypatch.setattr(docs_tables, "repository_root", lambda: tmp_path)

    assert docs_tables.main([]) == 1
    assert f"stale generated tables in: README.md; rewrite them with: {REWRITE_COMMAND}" in capsys.readouterr().out
    assert docs_tables.main(["--write"]) == 0
    assert readme.read_text(encoding="utf-8") == original
    assert docs_tables.main([]) == 0


def test_an_unknown_block_is_named():
    page = "<!-- generated: method-tabel -->\n<!-- end generated -->\n"
    with pytest.raises(KeyError, match="unknown generated block 'method-tabel'"):
        regenerate({"docs/x.md": page}, available_methods())
