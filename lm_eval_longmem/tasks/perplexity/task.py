"""`longmem_perplexity` as an lm-eval task.

Each document is one window of L corpus tokens. It becomes one loglikelihood request, the
window's first token as context and the rest as continuation, so the model reads tokens
0 .. L-2 once and every token 1 .. L-1 is scored: one teacher-forced pass through the same
scoring path as the other tasks (`--model longmem` keeps logits only for scored positions,
and bounded-memory methods, Infini-attention and FoX score through their own loops). The
requests carry the exact tokens for `--model longmem` and their decoded text for any other
lm-eval model.

With `ppl_stride=S` (sliding-window evaluation, protocol.py) the request's context is the
window's first L - S tokens and its continuation the last S: the model still reads L - 1
tokens, and only the last S are scored.

`--model longmem` also returns each token's loss, from which the per-position loss curve is
binned. Other models only answer `(loglikelihood, is_greedy)`: perplexity per length is still
exact (from the summed log-likelihood), the loss curve is left empty and a warning says why.

The requests are `LengthProbe`s: an explicit length past the context length runs (up to the
hard input limit) instead of being refused, and a window that runs out of memory comes back
as a failure. `ppl_curve` lists every planned length with its status: `ok`, `out_of_memory`,
or `cut_by_model` (a model other than longmem whose context is shorter than the window:
lm-eval's models cut such inputs from the left, so no number is reported for it).
"""

from __future__ import annotations

import functools
import logging

import datasets
import numpy as np
from lm_eval.api.instance import Instance

from lm_eval_longmem.data.corpora import load_corpus
from lm_eval_longmem.data.token_stream import corpus_documents
from lm_eval_longmem.models.runtime.length_probes import LengthProbe, ScoreFailure
from lm_eval_longmem.tasks.buckets import bucket_tag, round_robin, tag_width
from lm_eval_longmem.tasks.model_view import model_view
from lm_eval_longmem.tasks.perplexity import metrics
from lm_eval_longmem.tasks.perplexity.protocol import (
    OPTION_PREFIX,
    Options,
    book_windows,
    first_scored,
    input_tokens,
    window_lengths,
)
from lm_eval_longmem.tasks.python_task import LongMemTask

logger = logging.getLogger(__name__)

TASK_NAME = "longmem_perplexity"
CUT_WARNING = (
    "longmem_perplexity: window length(s) %s make the model read more tokens than its context (%d). This model "
    "is not longmem, and lm-eval's models cut such inputs from the left, so these lengths are reported with "
    "status cut_by_model and no numbers. Pass max_length=N in --model_args, or use --model longmem."
)
NO_TOKEN_LOSSES_WARNING = (
    "longmem_perplexity: this model returned only lm-eval's (loglikelihood, is_greedy) per window, not "
    "per-token losses: perplexity per length is exact, but the loss-by-position curve cannot be computed "
    "and is left empty. Use --model longmem for the curve."
)


class PerplexityTask(LongMemTask):
    TASK_NAME = TASK_NAME
    OUTPUT_TYPE = "loglikelihood"

    def __init__(self, config: dict | None = None, **kwargs):
        self._warned = False
        self._warned_cut = False
        super().__init__(config, **kwargs)

    # --- data -----------------------------------------------------------------------------
    def download(self, dataset_kwargs=None, **kwargs) -> None:
        metadata = dict(self.config.metadata or {})
        options = Options.from_metadata(metadata)
        self.bins = options.bins
        self.stride = options.stride
        model = model_view(metadata)
        self.lengths = window_lengths(options, model)
        self.context_length = model.context_length
        corpus = load_corpus(options.corpus, option=f"{OPTION_PREFIX}corpus")
        documents = corpus_documents(corpus, model.tokenizer)
        self.tokenizer = model.tokenizer
        by_length = []
        for length in self.lengths:
            rng = np.random.default_rng([options.seed, length])
            by_length.append(
                [
                    {
                        "length": length,
                        "window": w,
                        "document": d,
                        "start": s,
                        "ids": documents[d][s : s + length].tolist(),
                    }
                    for w, (d, s) in enumerate(book_windows(documents, length, options.windows, rng))
                ]
            )
        self.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(round_robin(by_length))})
        self.config.metadata["protocol"] = {
            "lengths": self.lengths,
            "windows": options.windows,
            "bins": options.bins,
            "seed": options.seed,
            "stride": options.stride,
            "corpus": corpus.name,
            "corpus_identity": corpus.identity,
            "corpus_documents": len(documents),
            "tokenizer": model.source,
            "method": model.method.describe(),
            "context_length": model.context_length,
            "training_length": model.training_length,
            "claimed_length": model.sizing_length,
            "hard_input_limit": model.hard_input_limit,
            "bounded_memory": model.bounded_memory,
            "length_plan": [
                {
                    "length": L,
                    "input_tokens": input_tokens(L),
                    "beyond_training_length": input_tokens(L) > model.training_length,
                    "beyond_context_length": input_tokens(L) > model.context_length,
                }
                for L in self.lengths
            ],
        }
        logger.info(
            "longmem_perplexity: %d lengths (%d..%d) x %d windows on %s",
            len(self.lengths),
            self.lengths[0],
            self.lengths[-1],
            options.windows,
            corpus.name,
        )

    def doc_to_text(self, doc, doc_to_text=None) -> str:
        return ""  # prompt-free: the window is the whole input

    def doc_to_target(self, doc, doc_to_target=None) -> str:
        return self._decode(doc["ids"][self._first(doc) :])

    def _first(self, doc) -> int:
        return first_scored(int(doc["length"]), self.stride)

    # --- requests -------------------------------------------------------------------------
    def construct_requests(self, doc, ctx, **kwargs) -> list[Instance]:
        self.drop_chat_template(kwargs, "perplexity is measured on raw text.")
        ids, first = doc["ids"], self._first(doc)
        context, scored = ids[:first], ids[first:]
        arguments = (LengthProbe(self._decode(context), context), LengthProbe(self._decode(scored), scored))
        return [Instance(request_type="loglikelihood", doc=doc, arguments=arguments, idx=0, **kwargs)]

    def _decode(self, ids) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    # --- metrics --------------------------------------------------------------------------
    def _tag(self, length: int) -> str:
        return bucket_tag(length, tag_width(self.lengths))

    def process_results(self, doc, results) -> dict:
        (scored,) = results
        length = int(doc["length"])
        if isinstance(scored, ScoreFailure):
            return {"ppl_curve": {"length": length, "status": scored.reason, "detail": scored.detail}}
        token_nll = getattr(scored, "token_nll", None)
        if token_nll is None and input_tokens(length) > self.context_length:
            if not self._warned_cut:
                logger.warning(
                    CUT_WARNING, [L for L in self.lengths if input_tokens(L) > self.context_length], self.context_length
                )
                self._warned_cut = True
            return {"ppl_curve": {"length": length, "status": "cut_by_model"}}
        if token_nll is None and not self._warned:
            logger.warning(NO_TOKEN_LOSSES_WARNING)
            self._warned = True
        record = {
            "length": length,
            "status": "ok",
            "nll_sum": -float(scored[0]),
            "tokens": length - self._first(doc),
            "first": self._first(doc),
            "token_nll": token_nll,
        }
        tag = self._tag(length)
        return {f"ppl@{tag}": record, f"nll@{tag}": record, "ppl_curve": record, "loss_curve": record}

    def aggregation(self) -> dict:
        table = {}
        for length in self.lengths:
            tag = self._tag(length)
            table[f"ppl@{tag}"] = metrics.perplexity
            table[f"nll@{tag}"] = metrics.mean_nll
        table["ppl_curve"] = metrics.perplexity_curve
        table["loss_curve"] = functools.partial(metrics.loss_curve, bins=self.bins)
        return table

    def higher_is_better(self) -> dict:
        table = {}
        for length in self.lengths:
            tag = self._tag(length)
            table[f"ppl@{tag}"] = False
            table[f"nll@{tag}"] = False
        table.update(ppl_curve=False, loss_curve=False)
        return table
