"""A corpus as one long token stream, tokenized once per (corpus, tokenizer) and cached.

The forgetting curve samples spans from "all books concatenated into one sequence"; each
document is tokenized on its own (no special tokens) and the results are concatenated.
`corpus_documents` keeps where each document starts, for tasks that cut windows inside books.
Both files are written whole and checked when read (cached_arrays.py): a damaged one is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
from filelock import FileLock
from tqdm import tqdm

from lm_eval_longmem.common.atomic_files import warn_rebuilding
from lm_eval_longmem.common.paths import cache_dir
from lm_eval_longmem.data.cached_arrays import load_cached_array, save_cached_array
from lm_eval_longmem.data.corpora import Corpus

logger = logging.getLogger(__name__)


def tokenizer_fingerprint(tokenizer) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        blob = backend.to_str()
    else:
        blob = json.dumps(sorted(tokenizer.get_vocab().items()))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def corpus_tokens(corpus: Corpus, tokenizer) -> np.ndarray:
    path = _cache_file(corpus, tokenizer, ".npy")
    with FileLock(str(path) + ".lock"):
        stream = load_cached_array(path)
        if stream is None:
            stream = tokenize_documents(corpus.documents, tokenizer)
            save_cached_array(path, stream)
    return stream


def corpus_documents(corpus: Corpus, tokenizer) -> list[np.ndarray]:
    """Each document's tokens (views into the cached stream, cut at the cached boundaries)."""
    stream = corpus_tokens(corpus, tokenizer)
    path = _cache_file(corpus, tokenizer, ".starts.npy")
    with FileLock(str(path) + ".lock"):
        starts = load_cached_array(path)
        if starts is not None and (problem := _boundaries_problem(starts, len(stream))):
            warn_rebuilding(path, problem, logger)
            starts = None
        if starts is None:
            pieces = tokenize_pieces(corpus.documents, tokenizer)
            starts = np.concatenate([[0], np.cumsum([len(piece) for piece in pieces])]).astype(np.int64)
            if int(starts[-1]) != len(stream):  # a whole .npy file, but not this corpus's tokens
                stream = _replace_stream(corpus, tokenizer, join_pieces(pieces), len(stream))
            save_cached_array(path, starts)
    return [stream[a:b] for a, b in zip(starts[:-1], starts[1:])]


def _cache_file(corpus: Corpus, tokenizer, suffix: str) -> Path:
    key = hashlib.sha256(f"{corpus.identity}|{tokenizer_fingerprint(tokenizer)}".encode()).hexdigest()[:24]
    return cache_dir("token_streams") / f"{key}{suffix}"


def _boundaries_problem(starts: np.ndarray, stream_length: int) -> str | None:
    if len(starts) == 0 or starts[0] != 0 or np.any(np.diff(starts) < 0):
        return "not a list of document starts"
    if int(starts[-1]) != stream_length:
        return f"the documents end at token {int(starts[-1])}, the token stream has {stream_length}"
    return None


def _replace_stream(corpus: Corpus, tokenizer, stream: np.ndarray, cached_length: int) -> np.ndarray:
    path = _cache_file(corpus, tokenizer, ".npy")
    warn_rebuilding(path, f"{cached_length} tokens, the corpus has {len(stream)}", logger)
    with FileLock(str(path) + ".lock"):
        save_cached_array(path, stream)
    return stream


def tokenize_pieces(documents, tokenizer, batch: int = 8) -> list[np.ndarray]:
    pieces = []
    for start in tqdm(range(0, len(documents), batch), desc="Tokenizing corpus", unit="batch", leave=False):
        encoded = tokenizer(list(documents[start : start + batch]), add_special_tokens=False)["input_ids"]
        pieces.extend(np.asarray(ids, dtype=np.int64) for ids in encoded)
    return pieces


def tokenize_documents(documents, tokenizer, batch: int = 8) -> np.ndarray:
    return join_pieces(tokenize_pieces(documents, tokenizer, batch))


def join_pieces(pieces: list[np.ndarray]) -> np.ndarray:
    """The documents' tokens as one stream, int32 where the vocabulary allows (half the disk)."""
    stream = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
    dtype = np.int32 if stream.size == 0 or stream.max() < 2**31 else np.int64
    return stream.astype(dtype)
