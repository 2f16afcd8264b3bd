"""Book-level BookSum (Kryscinski et al. 2021) as Bertsch et al. (2024, Unlimiformer) published it:
`abertsch/booksum-fullbooks` on the Hub.

That dataset holds whole books (column `book`) with one reference summary per row
(`summary`); a book summarized by several sources appears once per summary, and its splits
are `train` (314 rows), `validation` (45) and `test` (46). It is parquet, so `datasets` reads
it without a loading script. The Infini-attention paper compares against the BART, PRIMERA
and Unlimiformer rows of Bertsch et al., which used this copy; `kmfoda/booksum` is
chapter-level only. Rows of one book are gathered here into one `Book` with all its
references, so that a model summarizes each book once per input budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from lm_eval_longmem.data.hub_datasets import (
    DatasetUnavailableError,
    find_local_files,
    load_hub_dataset,
    load_local_files,
    require_columns,
)

BOOKSUM_DATASET = "abertsch/booksum-fullbooks"
SPLITS = ("train", "validation", "test")
COLUMNS = ("book", "summary")
TITLE_COLUMNS = ("title", "bid")  # the first present names a book in the results


@dataclass(frozen=True)
class Book:
    title: str
    text: str
    references: tuple[str, ...]  # every reference summary of this book in the split


def _fix(split: str) -> str:
    return (
        f"run `lm-eval-longmem fetch-data booksum` once where the Hub is reachable (or "
        f"`python -c \"import datasets; datasets.load_dataset('{BOOKSUM_DATASET}', split='{split}')\"`, "
        "with HF_DATASETS_OFFLINE unset), or point --metadata bs_data=PATH at a local copy "
        f"({split}.parquet/.jsonl, or a directory holding one) with the columns book, summary."
    )


def load_booksum_split(split: str = "test"):
    """One split of the Hub dataset as a `datasets.Dataset` (cache only when offline)."""
    return load_hub_dataset(BOOKSUM_DATASET, split=split, fix=_fix(split))


def load_books(split: str = "test", data: str | None = None) -> list[Book]:
    """The books of `split`, each with its references, in the order of their first row."""
    if data:
        table = load_local_files(find_local_files(data, split))
        source = data
    else:
        table = load_booksum_split(split)
        source = f"{BOOKSUM_DATASET} ({split})"
    require_columns(table, COLUMNS, source)
    return books_from_rows(table, source)


def books_from_rows(rows, source: str) -> list[Book]:
    title_column = next((c for c in TITLE_COLUMNS if c in rows.column_names), None)
    gathered: dict[str, tuple[str, list[str]]] = {}
    for row in rows:
        text, summary = row["book"], row["summary"]
        if not isinstance(text, str) or not text.strip() or not isinstance(summary, str) or not summary.strip():
            raise DatasetUnavailableError(f"{source}: a row has an empty book or summary")
        title = str(row[title_column]) if title_column else f"book {len(gathered) + 1}"
        gathered.setdefault(text, (title, []))[1].append(summary)
    if not gathered:
        raise DatasetUnavailableError(f"{source} has no rows")
    return [Book(title, text, tuple(references)) for text, (title, references) in gathered.items()]
