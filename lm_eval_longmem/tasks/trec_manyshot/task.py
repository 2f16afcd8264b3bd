"""`longmem_trec_manyshot` as an lm-eval task: one greedy generation per (shot count, question).

Documents are interleaved across shot counts (so `--limit N` keeps every count once N reaches
the number of counts). A document carries its shot count, its test question and the index of
its shared prefix; the prompt is that prefix + "Question: ...\\nType:", shared part first, so
backends that reuse the KV cache of a common prefix encode each shot count's demonstrations
once. Scoring is LongBench's classification_score (see classification_score.py).
"""

from __future__ import annotations

import logging

import datasets
from lm_eval.api.metrics import mean

from lm_eval_longmem.tasks.buckets import bucket_tag, round_robin, tag_width
from lm_eval_longmem.tasks.model_view import model_view
from lm_eval_longmem.tasks.prompt_budget import PromptBudget, max_gen_toks
from lm_eval_longmem.tasks.python_task import LongMemTask
from lm_eval_longmem.tasks.task_options import parse_task_options
from lm_eval_longmem.tasks.trec_manyshot.classification_score import trec_score
from lm_eval_longmem.tasks.trec_manyshot.protocol import (
    OPTION_PREFIX,
    TrecOptions,
    build_buckets,
    fitting_buckets,
)

logger = logging.getLogger(__name__)

TASK_NAME = "longmem_trec_manyshot"
# LongBench's generation for trec: greedy, 64 new tokens; the answer is the first line.
GENERATION_KWARGS = {"until": ["\n"], "max_gen_toks": 64, "do_sample": False, "temperature": 0.0}


class TrecManyShotTask(LongMemTask):
    TASK_NAME = TASK_NAME
    GENERATION_KWARGS = GENERATION_KWARGS

    # --- data -----------------------------------------------------------------------------
    def download(self, dataset_kwargs=None, **kwargs) -> None:
        metadata = dict(self.config.metadata or {})
        options = parse_task_options(TrecOptions, metadata, OPTION_PREFIX)
        model = model_view(metadata)
        budget = PromptBudget(model.tokenizer, model.context_length, max_gen_toks(self.config.generation_kwargs))
        candidates = build_buckets(options)
        buckets, prompt_tokens = fitting_buckets(candidates, budget, explicit=options.shots is not None)
        fitted = {b.shots for b in buckets}
        self.skipped_shots = [b.shots for b in candidates if b.shots not in fitted]

        self.shot_counts = [b.shots for b in buckets]
        self._width = tag_width(self.shot_counts, minimum=4)
        self._prefixes: list[str] = []
        prefix_ids: dict[str, int] = {}
        per_bucket = []
        for bucket in buckets:
            docs = []
            for index, item in enumerate(bucket.items):
                if item.prefix not in prefix_ids:
                    prefix_ids[item.prefix] = len(self._prefixes)
                    self._prefixes.append(item.prefix)
                docs.append(
                    {
                        "shots": bucket.shots,
                        "index": index,
                        "prefix_id": prefix_ids[item.prefix],
                        "query": item.query,
                        "answers": list(item.answers),
                        "all_classes": list(bucket.all_classes),
                    }
                )
            per_bucket.append(docs)
        self.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(round_robin(per_bucket))})
        self.config.metadata["protocol"] = {
            "shots": self.shot_counts,
            "questions_per_shot_count": [len(b.items) for b in buckets],
            "max_prompt_tokens": {str(b.shots): prompt_tokens[b.shots] for b in buckets},
            "seed": options.seed,
            "source": options.source,
            "data_dir": options.data_dir,
            "skipped_shots": self.skipped_shots,  # default shot counts whose prompts do not fit the model
            "tokenizer": model.source,
            "method": model.method.describe(),
            "bounded_memory": model.bounded_memory,  # reads prompts of any length: nothing is skipped
            "context_length": model.context_length,
            "max_gen_toks": budget.generated,
        }
        logger.info("%s: shot counts %s x %d questions", TASK_NAME, self.shot_counts, len(buckets[0].items))

    def doc_to_text(self, doc, doc_to_text=None) -> str:
        return self._prefixes[doc["prefix_id"]] + doc["query"]

    def doc_to_target(self, doc, doc_to_target=None) -> str:
        return doc["answers"][0]

    # --- metrics --------------------------------------------------------------------------
    def _key(self, shots: int) -> str:
        return f"acc@{bucket_tag(shots, self._width)}shots"

    def process_results(self, doc, results) -> dict:
        score = trec_score(results[0], doc["answers"], doc["all_classes"])
        return {self._key(doc["shots"]): score, "acc": score, "skipped_shot_counts": 0}

    def aggregation(self) -> dict:
        return {
            **{self._key(s): mean for s in self.shot_counts},
            "acc": mean,
            "skipped_shot_counts": lambda _: len(self.skipped_shots),
        }

    def higher_is_better(self) -> dict:
        return {**{self._key(s): True for s in self.shot_counts}, "acc": True, "skipped_shot_counts": False}
