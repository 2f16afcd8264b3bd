"""`forgetting_curve` as an lm-eval task.

Each document is one (length L, sample) pair holding a copy target S and an irrelevant
text I, both spans of the corpus token stream. It becomes exactly two loglikelihood
requests, copy and LM, one teacher-forced forward each. The requests are `LengthProbe`s: the
exact tokens for `--model longmem`, which runs them past its context length up to the claimed
length as the paper does, and their decoded text for any other lm-eval model.

Every planned length is reported in the `curve` with its input size, whether that input is
past the training length, and a status: `ok`, `model_limit` (cannot run at all: learned
absolute positions or an explicit max_length), `out_of_memory` (failed while running), or
`cut_by_model` (a model other than longmem whose context is shorter than the input: lm-eval's
models cut such inputs from the left, so no number is reported for it).

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
from lm_eval_longmem.models.runtime.length_probes import LengthProbe, ScoreFailure
from lm_eval_longmem.tasks.buckets import bucket_tag, round_robin, tag_width
from lm_eval_longmem.tasks.forgetting_curve import metrics
from lm_eval_longmem.tasks.forgetting_curve.protocol import ModelLengths, Options, max_fitting_length, plan_lengths
from lm_eval_longmem.tasks.forgetting_curve.sequences import (
    copy_sequence,
    input_tokens,
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
CUT_WARNING = (
    "forgetting_curve: length(s) %s need more input tokens (2L + 1) than this model's context (%d). This model is "
    "not longmem, and lm-eval's models cut such inputs from the left, so these lengths are reported with status "
    "cut_by_model and no numbers. Pass max_length=N in --model_args to let it run them (relative positions), or "
    "use --model longmem."
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
        self.plans = plan_lengths(options, ModelLengths.of(model))
        self.context_length = model.context_length
        self.lengths = [p.length for p in self.plans if p.runs]
        blocked = [p.length for p in self.plans if not p.runs]
        if blocked:
            logger.warning(
                "forgetting_curve: length(s) %s cannot run on this model (%s); they are reported with status "
                "model_limit.",
                blocked,
                next(p.reason for p in self.plans if not p.runs),
            )
        self._warned_cut = False
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
            "lengths": [p.length for p in self.plans],
            "length_plan": [
                {
                    "length": p.length,
                    "input_tokens": p.input_tokens,
                    "beyond_training_length": p.beyond_training_length,
                    "beyond_context_length": p.beyond_context_length,
                    "status": p.status,
                    "reason": p.reason,
                }
                for p in self.plans
            ],
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
            "claimed_length": model.sizing_length,
            "hard_input_limit": model.hard_input_limit,
            "relative_positions": model.relative_positions,
            "bounded_memory": model.bounded_memory,
        }
        logger.info(
            "forgetting_curve: %d lengths (%d..%d) x %d samples on %s (%d tokens)",
            len(self.lengths),
            self.lengths[0],
            self.lengths[-1],
            options.samples,
            corpus.name,
            len(stream),
        )

    def doc_to_text(self, doc, doc_to_text=None) -> str:
        return ""  # prompt-free by design: the sequences are the whole input

    def doc_to_target(self, doc, doc_to_target=None) -> str:
        start, end = scored_range(doc["length"])
        return self._decode(copy_sequence(doc["target_ids"], self.bos_id, self.eos_id)[start:end])

    # --- requests -------------------------------------------------------------------------
    def construct_requests(self, doc, ctx, **kwargs) -> list[Instance]:
        self.drop_chat_template(kwargs, "the paper's test is prompt-free.")
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

    def _token_text(self, ids) -> LengthProbe:
        return LengthProbe(self._decode(ids), ids)

    # --- metrics --------------------------------------------------------------------------
    def _tag(self, length: int) -> str:
        return bucket_tag(length, tag_width(self.lengths))

    def process_results(self, doc, results) -> dict:
        copy, lm = results
        length = int(doc["length"])
        tag = self._tag(length)
        failed = next((r for r in (copy, lm) if isinstance(r, ScoreFailure)), None)
        if failed is not None:
            return self._status_only({"length": length, "status": failed.reason, "detail": failed.detail})
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
        if input_tokens(length) > self.context_length:
            if not self._warned_cut:
                cut = [L for L in self.lengths if input_tokens(L) > self.context_length]
                logger.warning(CUT_WARNING, cut, self.context_length)
                self._warned_cut = True
            return {"curve": {"length": length, "status": "cut_by_model"}}  # the reduced metric has no memory lengths
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

    @staticmethod
    def _status_only(record: dict) -> dict:
        """A document whose length did not give numbers: only the curve (and the memory
        lengths, which skip it) hear of it."""
        return {"fine_memory_length": record, "coarse_memory_length": record, "curve": record}

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
            curve=self._curve,
        )
        return table

    def _curve(self, records) -> metrics.Curve:
        return metrics.curve(records, getattr(self, "plans", None))

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
