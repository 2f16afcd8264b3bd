"""L-Eval's TopicRet (`topic_retrieval_longchat` of `L4NLP/LEval`): long multi-topic chats.

Each row: `input` (a record of a USER/ASSISTANT conversation over many topics),
`instructions` (three questions: the first, second and third topic), `outputs` (the three
gold topic names), plus `source` and `evaluation` ("exam"). The dataset's main branch holds
a loading script, which `datasets` >= 4 refuses, so we read the Hub's parquet conversion
(`refs/convert/parquet`, files `topic_retrieval_longchat/test/*.parquet`), or local copies
with the same columns.
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

LEVAL_DATASET = "L4NLP/LEval"
TOPICRET_CONFIG = "topic_retrieval_longchat"
PARQUET_REVISION = "refs/convert/parquet"
PARQUET_FILES = f"{TOPICRET_CONFIG}/test/*.parquet"
COLUMNS = ("input", "instructions", "outputs")


@dataclass(frozen=True)
class TopicDocument:
    document: str
    questions: tuple[str, ...]
    topics: tuple[str, ...]  # gold answer of each question


def _fix() -> str:
    return (
        'run once where the Hub is reachable to cache it, e.g. `python -c "import datasets; '
        f"datasets.load_dataset('{LEVAL_DATASET}', revision='{PARQUET_REVISION}', "
        f"data_files={{'test': '{PARQUET_FILES}'}}, split='test')\"` (with HF_DATASETS_OFFLINE unset), or "
        f"point --metadata topicret_data=PATH at a local copy ({TOPICRET_CONFIG}.parquet/.jsonl, or a "
        "directory holding one) with the columns input, instructions, outputs."
    )


def load_topicret(data: str | None = None) -> list[TopicDocument]:
    if data:
        table = load_local_files(find_local_files(data, TOPICRET_CONFIG))
        source = data
    else:
        table = load_hub_dataset(
            LEVAL_DATASET, revision=PARQUET_REVISION, data_files={"test": PARQUET_FILES}, split="test", fix=_fix()
        )
        source = f"{LEVAL_DATASET}/{TOPICRET_CONFIG}"
    require_columns(table, COLUMNS, source)
    documents = []
    for row in table:
        questions, topics = tuple(row["instructions"]), tuple(row["outputs"])
        if len(questions) != len(topics):
            raise DatasetUnavailableError(
                f"{source}: a row has {len(questions)} instructions but {len(topics)} outputs"
            )
        documents.append(TopicDocument(row["input"], questions, topics))
    return documents
