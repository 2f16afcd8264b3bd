"""`longmem_topicret` as an lm-eval task: three greedy answers per record, scored as L-Eval does.

One lm-eval document per (record, question), in record order with the three questions of a
record next to each other: consecutive requests share the record prefix, and `--limit N`
(N >= 3) covers all three question positions. Metrics: accuracy on the first, second and
third topic, their mean, and how many records the overlong policy skipped or truncated.
"""

from __future__ import annotations

import logging

import datasets
import numpy as np
from lm_eval.api.metrics import mean

from lm_eval_longmem.data.leval_topicret import load_topicret
from lm_eval_longmem.tasks.model_view import model_view
from lm_eval_longmem.tasks.prompt_budget import PromptBudget, max_gen_toks
from lm_eval_longmem.tasks.python_task import LongMemTask
from lm_eval_longmem.tasks.task_options import parse_task_options
from lm_eval_longmem.tasks.topicret.leval_format import longchat_prompt, user_message
from lm_eval_longmem.tasks.topicret.protocol import OPTION_PREFIX, ORDINALS, TopicRetOptions, prepare
from lm_eval_longmem.tasks.topicret.scoring import topic_correct

logger = logging.getLogger(__name__)

TASK_NAME = "longmem_topicret"
# L-Eval generates greedily (512 new tokens); the answer is read from the first line longer
# than one character, so a short budget loses nothing for a one-line topic name.
GENERATION_KWARGS = {"until": [], "max_gen_toks": 50, "do_sample": False, "temperature": 0.0}
POSITION_METRICS = tuple(f"{o}_topic_acc" for o in ORDINALS)


def mean_of_positions(records) -> float:
    """Mean of the per-position accuracies (equals the overall mean when positions are balanced)."""
    by_position: dict[int, list[float]] = {}
    for record in records:
        by_position.setdefault(int(record["position"]), []).append(float(record["score"]))
    return float(np.mean([np.mean(v) for v in by_position.values()])) if by_position else float("nan")


class TopicRetTask(LongMemTask):
    TASK_NAME = TASK_NAME
    GENERATION_KWARGS = GENERATION_KWARGS

    # --- data -----------------------------------------------------------------------------
    def download(self, dataset_kwargs=None, **kwargs) -> None:
        metadata = dict(self.config.metadata or {})
        options = parse_task_options(TopicRetOptions, metadata, OPTION_PREFIX)
        model = model_view(metadata)
        budget = PromptBudget(model.tokenizer, model.context_length, max_gen_toks(self.config.generation_kwargs))
        records = load_topicret(options.data)
        kept, self.skipped = prepare(records, budget, options.overlong)
        self.truncated = sum(d.truncated for d in kept)
        self._documents = [d.document for d in kept]
        docs = [
            {"record": k, "source_row": d.index, "position": p, "question": q, "topic": t}
            for k, d in enumerate(kept)
            for p, (q, t) in enumerate(zip(d.questions, d.topics))
        ]
        self.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})
        self.config.metadata["protocol"] = {
            "records": len(records),
            "evaluated_records": len(kept),
            "skipped_records": self.skipped,
            "truncated_records": self.truncated,
            "overlong_policy": options.overlong,
            "data": options.data or "L4NLP/LEval topic_retrieval_longchat (refs/convert/parquet)",
            "tokenizer": model.source,
            "method": model.method.describe(),
            "bounded_memory": model.bounded_memory,  # reads whole records: the policy never applies
            "context_length": model.context_length,
            "max_gen_toks": budget.generated,
        }

    def doc_to_text(self, doc, doc_to_text=None) -> str:
        return longchat_prompt(self._documents[doc["record"]], doc["question"])

    def doc_to_target(self, doc, doc_to_target=None) -> str:
        return doc["topic"]

    def fewshot_context(
        self,
        doc,
        num_fewshot,
        system_instruction=None,
        apply_chat_template=False,
        fewshot_as_multiturn=False,
        chat_template=None,
        gen_prefix=None,
    ):
        """Plain LongChat text by default; with a chat template, L-Eval's user message in it."""
        if not (apply_chat_template and chat_template):
            return super().fewshot_context(
                doc,
                num_fewshot,
                system_instruction,
                apply_chat_template,
                fewshot_as_multiturn,
                chat_template,
                gen_prefix,
            )
        messages = [{"role": "system", "content": system_instruction}] if system_instruction else []
        messages.append({"role": "user", "content": user_message(self._documents[doc["record"]], doc["question"])})
        return chat_template(messages, add_generation_prompt=True)

    # --- metrics --------------------------------------------------------------------------
    def process_results(self, doc, results) -> dict:
        score = float(topic_correct(results[0], doc["topic"]))
        position = int(doc["position"])
        return {
            POSITION_METRICS[position]: score,
            "mean_acc": {"position": position, "score": score},
            "skipped_documents": 0,
            "truncated_documents": 0,
        }

    def aggregation(self) -> dict:
        return {
            **{name: mean for name in POSITION_METRICS},
            "mean_acc": mean_of_positions,
            "skipped_documents": lambda _: self.skipped,
            "truncated_documents": lambda _: self.truncated,
        }

    def higher_is_better(self) -> dict:
        return {
            **{name: True for name in POSITION_METRICS},
            "mean_acc": True,
            "skipped_documents": False,
            "truncated_documents": False,
        }
