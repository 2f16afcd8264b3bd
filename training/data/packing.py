"""Sequence packing: documents tokenized, joined with EOS and cut into chunks of the training
length regardless of document boundaries (as the controlled study and LLaMA do). Cached per
(text, tokenizer, length) so that every process and every resumed run reads the same chunks; the
cache file is written whole and checked when read (cached_arrays.py), so a damaged one is packed
again after one warning."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
from filelock import FileLock

from lm_eval_longmem.common.paths import cache_dir
from lm_eval_longmem.data.cached_arrays import load_cached_array, save_cached_array
from lm_eval_longmem.data.token_stream import tokenizer_fingerprint

from ..errors import TrainingError
from .text_sources import TextSource

BATCH_DOCUMENTS = 16


def packed_chunks(source: TextSource, tokenizer, seq_len: int, max_tokens: int = 0) -> np.ndarray:
    """[num_chunks, seq_len] token ids (int32 or int64), read-only, memory-mapped from the cache."""
    eos = tokenizer.eos_token_id
    if eos is None:
        raise TrainingError("The tokenizer has no EOS token to separate packed documents.")
    limit = max_tokens if source.streamed else 0
    identity = f"{source.identity}|{tokenizer_fingerprint(tokenizer)}|eos={eos}|limit={limit}"
    key = hashlib.sha256(identity.encode()).hexdigest()[:24]
    path = cache_dir("training_tokens") / f"{key}.npy"
    with FileLock(str(path) + ".lock"):
        stream = load_cached_array(path, mmap=True)
        if stream is None:
            save_cached_array(
                path, pack_documents(source.documents, tokenizer, eos, limit, seq_len if source.one_per_row else 0)
            )
            stream = np.load(path, mmap_mode="r")
    num_chunks = len(stream) // seq_len
    if num_chunks == 0:
        raise TrainingError(f"The training text has {len(stream)} tokens, fewer than one chunk of seq_len={seq_len}.")
    return stream[: num_chunks * seq_len].reshape(num_chunks, seq_len)


def pack_documents(documents, tokenizer, eos: int, limit: int = 0, row_length: int = 0) -> np.ndarray:
    """One token stream: each document's ids followed by EOS; stops after `limit` tokens (0: all).
    With `row_length`, each document is padded with EOS to exactly one row of that length."""
    pieces, total = [], 0
    iterator = iter(documents)
    while batch := list(itertools.islice(iterator, BATCH_DOCUMENTS)):
        for ids in tokenizer(batch, add_special_tokens=False)["input_ids"]:
            piece = [*ids, eos]
            if row_length:
                if len(piece) > row_length:
                    raise TrainingError(
                        f"A document of {len(ids)} tokens does not fit one row of seq_len={row_length}."
                    )
                piece += [eos] * (row_length - len(piece))
            pieces.append(np.asarray(piece, dtype=np.int64))
            total += len(piece)
        if limit and total >= limit:
            break
    stream = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
    if limit:
        stream = stream[:limit]
    return stream.astype(np.int32 if stream.size == 0 or stream.max() < 2**31 else np.int64)
