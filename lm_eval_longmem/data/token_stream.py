"""A corpus as one long token stream, tokenized once per (corpus, tokenizer) and cached.

The forgetting curve samples spans from "all books concatenated into one sequence"; each
document is tokenized on its own (no special tokens) and the results are concatenated.
`corpus_documents` keeps where each document starts, for tasks that cut windows inside books.
"""

from __future__ import annotations

import hashlib
import json
import logging

import numpy as np
from filelock import FileLock
from tqdm import tqdm

from lm_eval_longmem.data.corpora import Corpus
from lm_eval_longmem.paths import cache_dir

logger = logging.getLogger(__name__)


def tokenizer_fingerprint(tokenizer) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        blob = backend.to_str()
    else:
        blob = json.dumps(sorted(tokenizer.get_vocab().items()))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def corpus_tokens(corpus: Corpus, tokenizer) -> np.ndarray:
    key = hashlib.sha256(f"{corpus.identity}|{tokenizer_fingerprint(tokenizer)}".encode()).hexdigest()[:24]
    path = cache_dir("token_streams") / f"{key}.npy"
    with FileLock(str(path) + ".lock"):
        if path.is_file():
            return np.load(path)
        stream = tokenize_documents(corpus.documents, tokenizer)
        partial = path.with_name(path.stem + ".partial.npy")
        np.save(partial, stream)
        partial.rename(path)
    return stream


def corpus_documents(corpus: Corpus, tokenizer) -> list[np.ndarray]:
    """Each document's tokens (views into the cached stream, cut at the cached boundaries)."""
    stream = corpus_tokens(corpus, tokenizer)
    key = hashlib.sha256(f"{corpus.identity}|{tokenizer_fingerprint(tokenizer)}".encode()).hexdigest()[:24]
    path = cache_dir("token_streams") / f"{key}.starts.npy"
    with FileLock(str(path) + ".lock"):
        if path.is_file():
            starts = np.load(path)
        else:
            lengths = [len(piece) for piece in tokenize_pieces(corpus.documents, tokenizer)]
            starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            np.save(path, starts)
    if int(starts[-1]) != len(stream):
        raise ValueError(f"cached document boundaries of {corpus.name} do not match its token stream; clear {path}")
    return [stream[a:b] for a, b in zip(starts[:-1], starts[1:])]


def tokenize_pieces(documents, tokenizer, batch: int = 8) -> list[np.ndarray]:
    pieces = []
    for start in tqdm(range(0, len(documents), batch), desc="Tokenizing corpus", unit="batch", leave=False):
        encoded = tokenizer(list(documents[start : start + batch]), add_special_tokens=False)["input_ids"]
        pieces.extend(np.asarray(ids, dtype=np.int64) for ids in encoded)
    return pieces


def tokenize_documents(documents, tokenizer, batch: int = 8) -> np.ndarray:
    pieces = tokenize_pieces(documents, tokenizer, batch)
    stream = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
    dtype = np.int32 if stream.size == 0 or stream.max() < 2**31 else np.int64
    return stream.astype(dtype)
