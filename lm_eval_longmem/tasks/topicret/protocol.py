"""TopicRet's options and its policy for records longer than the model.

`topicret_overlong` decides, and nothing happens silently:

* `skip` (default): a record whose prompt does not fit the model (prompt + the generated
  tokens) is left out; the count is logged as a warning and reported as the metric
  `skipped_documents`.
* `truncate`: L-Eval's rule (`leval_format.leval_truncate`): keep the record's first words,
  cutting 250 more words per attempt until the prompt fits. The number of truncated records is
  logged and reported (`truncated_documents`). This keeps the early topics that are asked
  about, so it makes the task easier than the full record; L-Eval used it to fit 4k-16k models.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from lm_eval_longmem.data.leval_topicret import TopicDocument
from lm_eval_longmem.tasks.prompt_budget import PromptBudget
from lm_eval_longmem.tasks.task_options import TaskOptionError, check_choice, check_local_path
from lm_eval_longmem.tasks.topicret.leval_format import leval_truncate, longchat_prompt

logger = logging.getLogger(__name__)

OPTION_PREFIX = "topicret_"
POLICIES = ("skip", "truncate")
ORDINALS = ("first", "second", "third")


@dataclass(frozen=True)
class TopicRetOptions:
    """`--metadata topicret_<name>=...`."""

    overlong: str = field(
        default="skip",
        metadata={
            "help": "a record that does not fit the model: skip it, or truncate it with L-Eval's rule (counted, warned)"
        },
    )
    data: str | None = field(
        default=None,
        metadata={
            "help": "local copy of topic_retrieval_longchat (parquet/jsonl file or directory), for offline machines"
        },
    )

    def validate(self) -> None:
        """Choices, before any model loads (the start-up check runs it too)."""
        check_choice(f"{OPTION_PREFIX}overlong", self.overlong, POLICIES)
        check_local_path(f"{OPTION_PREFIX}data", self.data, "a parquet/jsonl file or a folder holding one")


@dataclass(frozen=True)
class PreparedDocument:
    index: int  # row in the dataset
    document: str  # possibly truncated record
    questions: tuple[str, ...]
    topics: tuple[str, ...]
    truncated: bool


def _check_shape(documents: list[TopicDocument]) -> None:
    for i, doc in enumerate(documents):
        if len(doc.questions) != len(ORDINALS):
            raise TaskOptionError(
                f"longmem_topicret: record {i} has {len(doc.questions)} questions; TopicRet asks exactly "
                f"{len(ORDINALS)} (first, second, third topic)."
            )


def prepare(documents: list[TopicDocument], budget: PromptBudget, policy: str) -> tuple[list[PreparedDocument], int]:
    """The records to evaluate under `policy`, and how many were skipped."""
    _check_shape(documents)
    kept, skipped = [], 0
    for index, doc in enumerate(documents):
        longest_question = max(doc.questions, key=budget.tokens)

        def fits(record: str, question: str = longest_question) -> bool:
            return budget.fits(longchat_prompt(record, question))

        record = doc.document
        if not fits(record):
            if policy == "truncate":
                room = budget.prompt_limit - budget.tokens(longchat_prompt("", longest_question))
                record = leval_truncate(record, fits, room)
            else:
                record = None
        if record is None:
            skipped += 1
            continue
        kept.append(PreparedDocument(index, record, doc.questions, doc.topics, record != doc.document))
    truncated = sum(d.truncated for d in kept)
    limit = f"prompts up to {budget.prompt_limit} tokens ({budget.context_length} minus {budget.generated} generated)"
    if skipped:
        logger.warning(
            "longmem_topicret: skipped %d of %d records whose prompt does not fit the model "
            "(%s; topicret_overlong=%s).",
            skipped,
            len(documents),
            limit,
            policy,
        )
    if truncated:
        logger.warning(
            "longmem_topicret: truncated %d of %d records with L-Eval's rule to fit the model (%s).",
            truncated,
            len(documents),
            limit,
        )
    if not kept:
        raise TaskOptionError(
            f"longmem_topicret: none of the {len(documents)} records fits the model ({limit}). Raise the model's "
            "limit (max_length=N in --model_args, or a context-extension method), or use topicret_overlong=truncate."
        )
    return kept, skipped
