"""Where training text comes from: the plugin's corpora (embedded Shakespeare, PG-19, local files)
any `datasets` Hub id, streamed so that only the tokens a run needs are read, or `passkey`:
synthetic passkey-retrieval documents (the task's prompt followed by the answer), for the
Infini-attention paper's passkey fine-tune: each one sized to a training row, so that a key is
never cut off from its question by packing. Offline, a Hub id not in the local cache fails at
once with the fix (lm_eval_longmem.common.hub)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from lm_eval_longmem.common.hub import looks_like_hub_id
from lm_eval_longmem.data.corpora import CORPUS_NAMES, CorpusUnavailableError, load_corpus
from lm_eval_longmem.data.hub_datasets import DatasetUnavailableError, load_hub_dataset

from ..errors import TrainingError


@dataclass(frozen=True)
class TextSource:
    identity: str  # changes whenever the text could change (cache key)
    documents: Iterable[str]
    streamed: bool  # read lazily: stop once enough tokens are in
    one_per_row: bool = False  # each document is one training row (padded with EOS), never packed across rows


PASSKEY = "passkey"


def open_text_source(
    data: str,
    *,
    config: str = "",
    split: str = "train",
    text_column: str = "text",
    seed: int = 0,
    seq_len: int = 4096,
    tokenizer=None,
) -> TextSource:
    if data == PASSKEY:
        if tokenizer is None:
            raise ValueError("data=passkey sizes its documents in tokens: pass the tokenizer")
        documents = passkey_documents(
            seed, seq_len, lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])
        )
        return TextSource(f"passkey-rows:{seed}:{seq_len}", documents, streamed=True, one_per_row=True)
    if data in CORPUS_NAMES or os.path.exists(os.path.expanduser(data)):
        try:
            corpus = load_corpus(data)
        except CorpusUnavailableError as err:
            raise TrainingError(f"data={data}: {err}") from None
        return TextSource(corpus.identity, corpus.documents, streamed=False)
    if not looks_like_hub_id(data):
        raise TrainingError(
            f"data={data!r} is neither a corpus ({', '.join(CORPUS_NAMES)}), an existing file or folder, "
            "nor a `datasets` Hub id."
        )
    return TextSource(
        f"hub:{data}:{config}:{split}:{text_column}", hub_documents(data, config, split, text_column), True
    )


def hub_documents(data: str, config: str, split: str, text_column: str) -> Iterable[str]:
    fix = (
        f'run once where the Hub is reachable to cache it (e.g. `python -c "import datasets; '
        f"datasets.load_dataset('{data}', split='{split}')\"`), or train on local text: data=<file or folder> "
        "or data=shakespeare (embedded, offline)."
    )
    try:
        table = load_hub_dataset(data, fix=fix, name=config or None, split=split, streaming=True)
    except DatasetUnavailableError as err:
        raise TrainingError(str(err)) from None
    if table.column_names is not None and text_column not in table.column_names:
        raise TrainingError(f"data={data}: no column {text_column!r} (it has {table.column_names}); set text_column=.")
    return (row[text_column] for row in table)


def passkey_documents(seed: int, seq_len: int, count) -> Iterable[str]:
    """Endless passkey prompts with their answers, random keys at random depths (seeded), each the
    longest prompt that leaves room in `seq_len` tokens for the answer and an EOS."""
    import random

    from lm_eval_longmem.data.passkey_prompt import (
        ANSWER_TOKENS,
        KEY_RANGE,
        PromptTooShortError,
        prompt_sized_to_tokens,
    )

    rng = random.Random(seed)
    while True:
        key = rng.randint(*KEY_RANGE)
        try:
            prompt, _ = prompt_sized_to_tokens(seq_len - ANSWER_TOKENS - 1, rng.randint(0, 100), key, count)
        except PromptTooShortError:
            raise TrainingError(
                f"data=passkey: seq_len={seq_len} is too short for a passkey prompt and its answer."
            ) from None
        yield f"{prompt} {key}."
