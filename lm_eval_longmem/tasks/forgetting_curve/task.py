"""`forgetting_curve` as an lm-eval task.

Each document is one (length L, sample) pair holding a copy target S and an irrelevant
text I, both spans of the corpus token stream. It becomes exactly two loglikelihood
requests, copy and LM, one teacher-forced forward each. The requests are `TokenText`s: the
exact tokens for `--model longmem`, and their decoded text for any other lm-eval model.

`--model longmem` returns per-token argmax hits, so the paper's accuracies are computed
exactly. Other models can only answer lm-eval's `(loglikelihood, is_greedy)`: the task then
reports a reduced metric (exact-copy rate and per-token NLL) and says so in a warning.
"""

from __future__ import annotations

import logging

import datasets
import numpy as np
from lm_eval.api.instance import Instance
from lm_eval.api.metrics import mean

from lm_eval_longmem.data.corpora import load_corpus
from lm_eval_longmem.data.token_stream import corpus_tokens
from lm_eval_longmem.requests import TokenText
from lm_eval_longmem.tasks.buckets import bucket_tag, round_robin, tag_width
from lm_eval_longmem.tasks.forgetting_curve import metrics
from lm_eval_longmem.tasks.forgetting_curve.protocol import Options, max_fitting_length, test_lengths
from lm_eval_longmem.tasks.forgetting_curve.sequences import (
    copy_sequence,
    lm_sequence,
    num_scored,
    sample_spans,
    scored_range,
)
from lm_eval_longmem.tasks.model_view import model_view
from lm_eval_longmem.tasks.python_task import LongMemTask

logger = logging.getLogger(__name__)

TASK_NAME = "forgetting_curve"
REDUCED_WARNING = (
    "forgetting_curve: this model returned only lm-eval's (loglikelihood, is_greedy) per request, "
    "not per-token predictions, so the paper's token accuracies cannot be computed. Reporting the "
    "reduced metric instead: copy_exact/lm_exact (share of samples whose scored half is reproduced "
    "exactly) and copy_nll/lm_nll (mean negative log-likelihood per scored token). Use "
    "--model longmem for the forgetting curve itself."
)


class ForgettingCurveTask(LongMemTask):
    TASK_NAME = TASK_NAME
    OUTPUT_TYPE = "loglikelihood"

    def __init__(self, config: dict | None = None, **kwargs):
        self._warned_reduced = False
        super().__init__(config, **kwargs)

    # --- data -----------------------------------------------------------------------------
    def download(self, dataset_kwargs=None, **kwargs) -> None:
        metadata = dict(self.config.metadata or {})
        options = Options.from_metadata(metadata)
        model = model_view(metadata)
        self.lengths = test_lengths(options, model.context_length, model.sizing_length)
        corpus = load_corpus(options.corpus)
        stream = corpus_tokens(corpus, model.tokenizer)
        self.tokenizer, self.bos_id, self.eos_id = model.tokenizer, model.bos_id, model.eos_id
        by_length = []
        for length in self.lengths:
            rng = np.random.default_rng([options.seed, length])
            by_length.append(
                [
                    {
                        "length": length,
                        "sample": sample,
                        "target_ids": stream[s : s + length].tolist(),
                        "irrelevant_ids": stream[i : i + length].tolist(),
                    }
                    for sample, (s, i) in enumerate(sample_spans(len(stream), length, options.samples, rng))
                ]
            )
        docs = round_robin(by_length)  # so that --limit N keeps every length
        self.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})
        self.config.metadata["protocol"] = {
            "lengths": self.lengths,
            "samples": options.samples,
            "seed": options.seed,
            "granularity": "explicit" if options.lengths else options.granularity,
            "corpus": corpus.name,
            "corpus_identity": corpus.identity,
            "corpus_tokens": int(len(stream)),
            "tokenizer": model.source,
            "bos_id": self.bos_id,
            "eos_id": self.eos_id,
            "method": model.method.describe(),
            "context_length": model.context_length,
            "max_fitting_length": max_fitting_length(model.context_length),
            "training_length": model.training_length,
        }
        logger.info(
            "forgetting_curve: %d lengths (%d..%d) x %d samples on %s (%d tokens)",
            len(self.lengths), self.lengths[0], self.lengths[-1], options.samples, corpus.name, len(stream),
        )

    def doc_to_text(self, doc, doc_to_text=None) -> str:
        return ""  # prompt-free by design: the sequences are the whole input

    def doc_to_target(self, doc, doc_to_target=None) -> str:
        start, end = scored_range(doc["length"])
        return self._decode(copy_sequence(doc["target_ids"], self.bos_id, self.eos_id)[start:end])

    # --- requests -------------------------------------------------------------------------
    def construct_requests(self, doc, ctx, **kwargs) -> list[Instance]:
        if kwargs.pop("apply_chat_template", False):
            logger.warning("forgetting_curve ignores --apply_chat_template: the paper's test is prompt-free.")
        kwargs.pop("chat_template", None)
        start, end = scored_range(doc["length"])
        sequences = (
            copy_sequence(doc["target_ids"], self.bos_id, self.eos_id),
            lm_sequence(doc["irrelevant_ids"], doc["target_ids"], self.bos_id, self.eos_id),
        )
        return [
            Instance(
                request_type="loglikelihood",
                doc=doc,
                arguments=(self._token_text(seq[:start]), self._token_text(seq[start:end])),
                idx=idx,
                **kwargs,
            )
            for idx, seq in enumerate(sequences)
        ]

    def _decode(self, ids) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def _token_text(self, ids) -> TokenText:
        return TokenText(self._decode(ids), ids)

    # --- metrics --------------------------------------------------------------------------
    def _tag(self, length: int) -> str:
        return bucket_tag(length, tag_width(self.lengths))

    def process_results(self, doc, results) -> dict:
        copy, lm = results
        length = int(doc["length"])
        tag = self._tag(length)
        if hasattr(copy, "num_correct") and hasattr(lm, "num_correct"):
            record = {"length": length, "copy": copy.accuracy, "lm": lm.accuracy}
            return {
                f"copy_acc@{tag}": record["copy"],
                f"copy_acc_std@{tag}": record["copy"],
                f"lm_acc@{tag}": record["lm"],
                f"lm_acc_std@{tag}": record["lm"],
                "fine_memory_length": record,
                "coarse_memory_length": record,
                "curve": record,
            }
        if not self._warned_reduced:
            logger.warning(REDUCED_WARNING)
            self._warned_reduced = True
        scored = num_scored(length)
        record = {
            "length": length,
            "copy_exact": float(copy[1]),
            "lm_exact": float(lm[1]),
            "copy_nll": -float(copy[0]) / scored,
            "lm_nll": -float(lm[0]) / scored,
        }
        reduced = {f"{field}@{tag}": record[field] for field in metrics.REDUCED_FIELDS}
        return {**reduced, "curve": record}

    def _per_length(self, make):
        table = {}
        for length in self.lengths:
            tag = self._tag(length)
            for name, value in make(tag):
                table[name] = value
        return table

    def aggregation(self) -> dict:
        table = self._per_length(
            lambda tag: [
                (f"copy_acc@{tag}", mean),
                (f"copy_acc_std@{tag}", metrics.population_std),
                (f"lm_acc@{tag}", mean),
                (f"lm_acc_std@{tag}", metrics.population_std),
                *((f"{field}@{tag}", mean) for field in metrics.REDUCED_FIELDS),
            ]
        )
        table.update(
            fine_memory_length=metrics.aggregate_fine,
            coarse_memory_length=metrics.aggregate_coarse,
            curve=metrics.curve,
        )
        return table

    def higher_is_better(self) -> dict:
        table = self._per_length(
            lambda tag: [
                (f"copy_acc@{tag}", True),
                (f"copy_acc_std@{tag}", False),
                (f"lm_acc@{tag}", True),
                (f"lm_acc_std@{tag}", False),
                (f"copy_exact@{tag}", True),
                (f"lm_exact@{tag}", True),
                (f"copy_nll@{tag}", False),
                (f"lm_nll@{tag}", False),
            ]
        )
        table.update(fine_memory_length=True, coarse_memory_length=True, curve=True)
        return table
