"""Tabular datasets from the Hub or from local files, failing fast offline with the fix.

Offline, `datasets.load_dataset` on a Hub id either answers from the local cache or gives up
with an error that does not say what to do (and without HF_DATASETS_OFFLINE it first retries
for a long while). Here a Hub id is loaded from the cache only when the Hub is unreachable (checked
once, in seconds), and a miss becomes a `DatasetUnavailableError` whose message names the
command or option that fixes it. Users on offline clusters point a task option at local
copies instead (parquet or JSON lines with the dataset's own columns).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from lm_eval_longmem.common.hub import hub_reachable, local_files_only
from lm_eval_longmem.errors import LongMemError

LOCAL_FORMATS = {".parquet": "parquet", ".jsonl": "json", ".json": "json"}


class DatasetUnavailableError(LongMemError, RuntimeError):
    """A dataset cannot be loaded here; the message says how to get it."""


def load_hub_dataset(path: str, *, fix: str, **kwargs):
    """`datasets.load_dataset(path, **kwargs)`, from the cache only when the Hub is unreachable."""
    import datasets

    try:
        if hub_reachable():
            return datasets.load_dataset(path, **kwargs)
        with local_files_only():
            return datasets.load_dataset(path, **kwargs)
    except (ConnectionError, FileNotFoundError, OSError, ValueError) as err:
        where = (
            "the Hub is reachable but loading failed"
            if hub_reachable()
            else ("it is not in the local datasets cache and the Hub cannot be reached")
        )
        raise DatasetUnavailableError(
            f"Could not load the dataset {path!r}: {where} ({type(err).__name__}: {err}). Fix: {fix}"
        ) from err


def load_local_files(files: Sequence[Path]):
    """One `datasets.Dataset` from local parquet / JSON-lines files (all of one format)."""
    import datasets

    formats = {LOCAL_FORMATS.get(Path(f).suffix) for f in files}
    if not files or None in formats or len(formats) != 1:
        raise DatasetUnavailableError(
            f"Expected local files of one format among {', '.join(LOCAL_FORMATS)}; got {[str(f) for f in files]}"
        )
    (builder,) = formats
    return datasets.load_dataset(builder, data_files=[str(f) for f in files], split="train")


def find_local_files(location: str, stem: str) -> list[Path]:
    """Files named `<stem>.<parquet|jsonl|json>` (or `<stem>-*.<ext>` shards) under a directory.

    `location` may also be one file, which is then returned as is (stem ignored).
    """
    path = Path(os.path.expanduser(location))
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise DatasetUnavailableError(f"Local dataset path {str(path)!r} does not exist.")
    found = sorted(
        p for p in path.iterdir() if p.suffix in LOCAL_FORMATS and (p.stem == stem or p.stem.startswith(stem + "-"))
    )
    if not found:
        raise DatasetUnavailableError(
            f"No {stem}.parquet / {stem}.jsonl (or {stem}-*.parquet shards) in {str(path)!r}."
        )
    return found


def require_columns(table, columns: Sequence[str], source: str) -> None:
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise DatasetUnavailableError(
            f"{source} lacks the column(s) {missing}; it has {table.column_names}. "
            "Local copies must keep the original dataset's columns."
        )
