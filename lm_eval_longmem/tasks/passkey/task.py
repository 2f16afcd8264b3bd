"""`longmem_passkey` as an lm-eval task.

One document per (length, depth, sample): the landmark-attention prompt sized to the length
with the key at the depth, and a key drawn uniformly from 1..50000 (seeded by seed, length,
depth and sample, so adding a cell does not change the others). Requests are ordinary
`generate_until` with plain-text prompts and greedy decoding, so `--model hf` runs the task
as well as `--model longmem`. Documents are listed round robin over the cells, so
`--limit N` with N >= the number of cells covers every one.
"""

from __future__ import annotations

import logging

import datasets
from lm_eval.api.metrics import mean

from lm_eval_longmem.data.passkey_prompt import prompt_for_characters
from lm_eval_longmem.tasks.buckets import bucket_tag, round_robin, tag_width
from lm_eval_longmem.tasks.model_view import model_view
from lm_eval_longmem.tasks.passkey import metrics
from lm_eval_longmem.tasks.passkey.protocol import (
    ANSWER_TOKENS,
    Options,
    cell_key,
    check_lengths_fit,
    check_prompt_fits,
    prompt_for_tokens,
)
from lm_eval_longmem.tasks.passkey.scoring import first_integer, is_correct
from lm_eval_longmem.tasks.python_task import LongMemTask

logger = logging.getLogger(__name__)

TASK_NAME = "longmem_passkey"


class PasskeyTask(LongMemTask):
    TASK_NAME = TASK_NAME
    GENERATION_KWARGS = {"until": [], "max_gen_toks": ANSWER_TOKENS, "do_sample": False, "temperature": 0.0}

    # --- data -----------------------------------------------------------------------------
    def download(self, dataset_kwargs=None, **kwargs) -> None:
        metadata = dict(self.config.metadata or {})
        options = Options.from_metadata(metadata)
        model = model_view(metadata)
        check_lengths_fit(options, model.context_length)
        self.options = options

        def count(text: str) -> int:
            return len(model.tokenizer(text)["input_ids"])

        cells = []
        for length in options.lengths:
            for depth in options.depths:
                cell = []
                for sample in range(options.samples):
                    key = cell_key(options.seed, length, depth, sample)
                    if options.protocol == "tokens":
                        prompt, tokens = prompt_for_tokens(length, depth, key, count)
                    else:
                        prompt = prompt_for_characters(length, depth, key)
                        tokens = count(prompt)
                        check_prompt_fits(tokens, length, model.context_length)
                    cell.append(
                        {
                            "length": length,
                            "depth": depth,
                            "sample": sample,
                            "key": key,
                            "prompt": prompt,
                            "prompt_tokens": tokens,
                        }
                    )
                cells.append(cell)
        docs = round_robin(cells)
        self.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})
        self.config.metadata["protocol"] = {
            "lengths": list(options.lengths),
            "length_unit": options.unit,
            "depths": list(options.depths),
            "samples": options.samples,
            "seed": options.seed,
            "protocol": options.protocol,
            "answer_tokens": ANSWER_TOKENS,
            "tokenizer": model.source,
            "method": model.method.describe(),
            "bounded_memory": model.bounded_memory,
            "context_length": model.context_length,
            "prompt_tokens": {
                "min": min(d["prompt_tokens"] for d in docs),
                "max": max(d["prompt_tokens"] for d in docs),
            },
        }
        logger.info(
            "longmem_passkey: %d lengths x %d depths x %d samples (%s protocol), prompts of %d..%d tokens",
            len(options.lengths),
            len(options.depths),
            options.samples,
            options.protocol,
            min(d["prompt_tokens"] for d in docs),
            max(d["prompt_tokens"] for d in docs),
        )

    def doc_to_text(self, doc, doc_to_text=None) -> str:
        return doc["prompt"]  # verbatim: no template engine between the format and the model

    def doc_to_target(self, doc, doc_to_target=None) -> str:
        return str(doc["key"])

    # --- metrics --------------------------------------------------------------------------
    def _length_tag(self, length: int) -> str:
        return "len" + bucket_tag(length, tag_width(self.options.lengths))

    @staticmethod
    def _depth_tag(depth: int) -> str:
        return "depth" + bucket_tag(depth, 3)

    def process_results(self, doc, results) -> dict:
        (generated,) = results
        correct = float(is_correct(generated, doc["key"]))
        record = {
            "length": doc["length"],
            "depth": doc["depth"],
            "correct": correct,
            "unit": self.options.unit,
            "answer": first_integer(generated),
        }
        return {
            "acc": correct,
            f"acc@{self._length_tag(doc['length'])}": correct,
            f"acc@{self._depth_tag(doc['depth'])}": correct,
            "grid": record,
        }

    def _metric_names(self) -> list[str]:
        return [
            "acc",
            *(f"acc@{self._length_tag(L)}" for L in self.options.lengths),
            *(f"acc@{self._depth_tag(d)}" for d in self.options.depths),
        ]

    def aggregation(self) -> dict:
        return {**{name: mean for name in self._metric_names()}, "grid": metrics.grid}

    def higher_is_better(self) -> dict:
        return {**{name: True for name in self._metric_names()}, "grid": True}
