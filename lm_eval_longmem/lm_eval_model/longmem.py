"""`LongMemLM`: lm-eval's HFLM with a long-memory method plugged in (`--model longmem`).

Thin on purpose. It parses `method=` and that method's arguments out of `--model_args`,
loads the embedded default model when no `pretrained=` is given, lets the method edit the
config and patch the model (for a model object passed as `pretrained=`, loaded before the
method met it: `method_framework/loaded_model.py`), and replaces HFLM's scoring with `TeacherForcedScorer`, which
keeps logits only for scored positions and refuses (rather than silently truncates) inputs
longer than the model takes. Generation goes through a `TokenGenerator` (the method's, or
`PrefixReuseGenerator`, which reuses the KV cache of prompt prefixes shared between
requests); it refuses over-long prompts too, where HFLM would cut them from the left.
`overlength=skip|middle|left` replaces both refusals (models/runtime/overlength.py).
Everything else is HFLM's.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re

import torch
from lm_eval.models.huggingface import HFLM
from lm_eval.models.utils import handle_stop_sequences, normalize_gen_kwargs, postprocess_generated_text
from tqdm import tqdm

from lm_eval_longmem.common.hub import loading_from_hub, offline_context
from lm_eval_longmem.errors import LongMemError, UsageError
from lm_eval_longmem.harness.live_by_length import parse_setting
from lm_eval_longmem.harness.run_arguments import repeated_keys
from lm_eval_longmem.lm_eval_model import cost_plan, request_cache
from lm_eval_longmem.lm_eval_model.overlength import OverlengthLedger, forget_counts, install_document_skipping
from lm_eval_longmem.models.checkpoint.context_length import hard_input_limit, training_length, usable_context_length
from lm_eval_longmem.models.checkpoint.default_model import DEFAULT_MODEL_NAME, default_model_dir
from lm_eval_longmem.models.checkpoint.model_types import register_model_types
from lm_eval_longmem.models.checkpoint.source_name import source_name
from lm_eval_longmem.models.fox.compatibility import check_method_fits
from lm_eval_longmem.models.method_framework.loaded_model import prepare_loaded_model
from lm_eval_longmem.models.method_registry.model_arguments import (
    UnknownModelArgumentError,
    config_overrides,
    unknown_arguments,
    unknown_arguments_message,
)
from lm_eval_longmem.models.method_registry.resolution import resolve_method
from lm_eval_longmem.models.runtime.data_parallel import adopt_launched_processes
from lm_eval_longmem.models.runtime.generation import GenerationRequest
from lm_eval_longmem.models.runtime.length_probes import OUT_OF_MEMORY, ScoreFailure, is_length_probe
from lm_eval_longmem.models.runtime.overlength import CutScore, CutText, SkippedScore, SkippedText, cut, parse_policy
from lm_eval_longmem.models.runtime.prefix_reuse_generator import PrefixReuseGenerator
from lm_eval_longmem.models.runtime.requests import token_ids_of
from lm_eval_longmem.models.runtime.scoring import ScoredSpan, TeacherForcedScorer

logger = logging.getLogger(__name__)


class ContextTooLongError(UsageError):
    """An input is longer than the model takes; memory tests are never silently truncated."""


class ScoringOutOfMemoryError(LongMemError, RuntimeError):
    """Scoring one input ran out of memory; the message says which and how to go on."""


def _parse_bool(name: str, value) -> bool:
    from lm_eval_longmem.common.typed_values import MalformedValueError, coerce

    try:
        return coerce(value, bool)
    except ValueError:
        raise MalformedValueError(f"--model_args {name}={value!r} is malformed: expected true or false") from None


AUTO_DEVICE = "auto"  # what `lm_eval` passes when no --device was typed (preflight.py; lm-eval's own default is cuda:0)


def resolve_device(device: str | None) -> str:
    """No `--device`: CUDA where there is one, else the CPU, silently. An explicit CUDA device on
    a machine without CUDA also runs on the CPU, but says so once, plainly: the user asked for a
    GPU and is about to wait for a CPU."""
    if device is None or device == AUTO_DEVICE:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        logger.warning(
            "--device %s: this machine has no CUDA GPU that torch %s can use; running on the CPU instead "
            "(much slower).",
            device,
            torch.__version__,
        )
        return "cpu"
    ordinal = re.fullmatch(r"cuda:(\d+)", device)
    if ordinal and int(ordinal[1]) >= torch.cuda.device_count():
        # torch would fail at the first tensor moved there, with "invalid device ordinal" deep in a traceback
        count = torch.cuda.device_count()
        raise UsageError(
            f"argument --device: {device} is not a GPU of this machine, which has {count} "
            f"(cuda:0{f' to cuda:{count - 1}' if count > 1 else ''}); use one of those, or CUDA_VISIBLE_DEVICES."
        )
    return device


class LongMemLM(HFLM):
    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        """lm-eval's command line says "Overwriting key ..." for a repeated `--model_args` key;
        its Python API (`simple_evaluate(model_args="k=v,...")`) keeps the last value silently."""
        for key, values in repeated_keys(arg_string).items():
            logger.warning(
                "model_args gives %s %d times (%s); using the last, %s=%s",
                key,
                len(values),
                ", ".join(f"{key}={v}" for v in values),
                key,
                values[-1],
            )
        return super().create_from_arg_string(arg_string, additional_config)

    def __init__(
        self,
        pretrained=None,
        method: str | None = None,
        device: str | None = None,
        reuse_prefix: bool | str = True,
        overlength: str | None = None,
        by_length: str | bool | None = None,
        **kwargs,
    ):
        request_cache.install()  # before lm-eval can wrap us: --use_cache keeps our scores apart per fingerprint
        self.reuse_prefix = _parse_bool("reuse_prefix", reuse_prefix)
        self.overlength = parse_policy(overlength)  # models/runtime/overlength.py
        self.overlength_ledger = OverlengthLedger()
        self.by_length_tasks = parse_setting(by_length)  # harness/live_by_length.py: per-bin scores
        if self.overlength != "refuse":
            install_document_skipping()  # also counts the cuts, from the responses' markers
            forget_counts()  # counted afresh for this model's results
        resolved = resolve_method({"pretrained": pretrained, "method": method, **kwargs})
        self.longmem_method, other = resolved.build(), dict(resolved.other_args)
        self._config_overrides = config_overrides(other)
        other = {k: v for k, v in other.items() if k not in self._config_overrides}
        self.loading_args = dict(other)  # as given, for the --use_cache fingerprint (score_fingerprint.py)
        self.uses_default_model = pretrained is None
        if pretrained is None:
            pretrained = str(default_model_dir())
        register_model_types()  # those transformers lacks: FoX's, the Landmark study's
        with loading_from_hub(pretrained):
            super().__init__(pretrained=pretrained, device=resolve_device(device), **other)
        adopt_launched_processes(self)  # split documents under `accelerate launch` where HFLM sees < 2 GPUs
        if self.backend != "causal":
            raise ValueError("--model longmem supports decoder-only (causal) models only.")
        if isinstance(pretrained, str):
            self._model = self.longmem_method.prepare_model(self._model)
        else:  # a model object: HFLM skipped _get_config/_create_model, so the method's config edit is made now
            self._model = prepare_loaded_model(self.longmem_method, self._model, self._config_overrides)
        self.scorer = self.longmem_method.make_scorer(self.model) or TeacherForcedScorer(self.model)

    # --- model construction hooks (HFLM calls these from its __init__) ----------------------
    def _get_config(self, pretrained, **kwargs) -> None:
        with self.longmem_method.loading_context():
            super()._get_config(pretrained, **kwargs)
        unknown = unknown_arguments(self._config, self._config_overrides)
        if unknown:
            raise UnknownModelArgumentError(unknown_arguments_message(self.longmem_method, unknown))
        for key, value in self._config_overrides.items():
            setattr(self._config, key, value)
        check_method_fits(self._config, self.longmem_method, source=str(pretrained))
        self.longmem_method.prepare_config(self._config)

    def _create_model(self, pretrained, **kwargs) -> None:
        # Pass our (possibly edited) config so the method's changes reach the weights' model.
        if isinstance(pretrained, str):
            kwargs.setdefault("config", self._config)
        with self.longmem_method.loading_context():
            super()._create_model(pretrained, **kwargs)

    # --- lengths ------------------------------------------------------------------------
    @property
    def max_length(self) -> int:
        return usable_context_length(self.config, self.longmem_method, self._max_length, self.tokenizer)

    # --- scoring ------------------------------------------------------------------------
    def _encode_pair(self, context, continuation):
        """Token-exact requests (`TokenText`) keep their ids; plain strings go through HFLM."""
        context_ids, continuation_ids = token_ids_of(context), token_ids_of(continuation)
        if context_ids is not None and continuation_ids is not None:
            return list(context_ids), list(continuation_ids)
        return super()._encode_pair(context, continuation)

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        """lm-eval's entry for scoring: the whole planned run, so its plan is announced once."""
        self._plan_tasks = tuple(sorted({r.task_name for r in requests if r.task_name}))
        # HFLM hands _loglikelihood_tokens each request's (context, continuation) objects: their
        # ids say which document a request belongs to (overlength= acts per document)
        self._request_docs = {(id(r.args[0]), id(r.args[1])): (r.task_name, r.doc_id) for r in requests}
        try:
            return super().loglikelihood(requests, disable_tqdm=disable_tqdm)
        finally:
            self._plan_tasks = None
            self._request_docs = {}

    def _announce_plan(self, kind: str, lengths: list[int], scored_fraction: float = 0.0) -> None:
        """The run's size (and, when big, its estimated time), once per lm-eval request batch.
        `scored_fraction`: the share of input positions whose predictions the requests score."""
        tasks = getattr(self, "_plan_tasks", None)
        if tasks is None or self.rank != 0:
            return
        self._plan_tasks = None
        device = f"cpu, {torch.get_num_threads()} threads" if self.device.type == "cpu" else str(self.device)
        time_one = functools.partial(self._time_scoring, scored_fraction=scored_fraction)
        cost_plan.announce(cost_plan.CostPlan(kind, tuple(lengths), tasks), time_one, device)

    def _time_scoring(self, length: int, scored_fraction: float = 0.0) -> float:
        """Seconds to score one input of `length` tokens (random ids) through this method, with the
        run's share of positions scored: the output head over the scored positions is part of the
        cost (the forgetting curve scores half of every input), a large part on a small model with a
        large vocabulary (docs/benchmarks.md)."""
        import time

        ids = torch.randint(0, self.config.vocab_size, (1, length), generator=torch.Generator().manual_seed(0))
        scored = min(length, max(1, round(scored_fraction * length)))
        started = time.perf_counter()
        self.scorer.score(ids.to(self.device), [ScoredSpan(length - scored, tuple(ids[0, length - scored :].tolist()))])
        return time.perf_counter() - started

    def _loglikelihood_tokens(self, requests, disable_tqdm: bool = False, override_bs=None):
        """Scores; an over-length request is handled by `overlength=` first (refused by _check_fits)."""
        if self.overlength == "refuse":
            return self._score_requests(requests, disable_tqdm, override_bs)
        if self.overlength != "skip":
            fitted = [self._cut_to_fit(r) for r in requests]
            scores = self._score_requests([request for request, _ in fitted], disable_tqdm, override_bs)
            return [score if cut is None else CutScore(score, *cut) for score, (_, cut) in zip(scores, fitted)]
        skipped = self._skipped_documents(requests)
        kept = [r for r, doc in zip(requests, self._documents_of(requests)) if doc not in skipped]
        scores = iter(self._score_requests(kept, disable_tqdm, override_bs) if kept else [])
        return [SkippedScore(skipped[doc]) if doc in skipped else next(scores) for doc in self._documents_of(requests)]

    def _documents_of(self, requests) -> list:
        """Each request's (task, doc_id); a request lm-eval did not hand to loglikelihood() is its own."""
        docs = getattr(self, "_request_docs", None) or {}
        return [
            docs.get((id(s[0]), id(s[1])), ("", ("request", index))) if s is not None else ("", ("request", index))
            for index, (s, _, _) in enumerate(requests)
        ]

    def _skipped_documents(self, requests) -> dict:
        """(task, doc_id) -> the longest input length, for each document with an over-length request
        (all its requests are skipped: a multiple-choice document is scored whole or not at all)."""
        skipped: dict = {}
        for (request_str, context, continuation), doc in zip(requests, self._documents_of(requests)):
            length = len(context) + len(continuation) - 1
            if length > self.max_length and not _is_probe(request_str):
                skipped[doc] = max(length, skipped.get(doc, 0))
        return skipped

    def _cut_to_fit(self, request):
        """`request` with its context cut by `overlength=` (middle or left) to fit the model, and
        (input tokens, tokens removed) when it was cut, else None."""
        request_str, context, continuation = request
        length = len(context) + len(continuation) - 1
        if length <= self.max_length or _is_probe(request_str):
            return request, None
        keep = self.max_length + 1 - len(continuation)
        if keep < 1:  # the continuation alone is too long: nothing to cut
            self._check_fits(length, request_str)
        return (request_str, cut(context, keep, self.overlength), continuation), (length, len(context) - keep)

    def _score_requests(self, requests, disable_tqdm: bool = False, override_bs=None):
        probes = [_is_probe(request_str) for request_str, _, _ in requests]
        for (request_str, context_ids, continuation_ids), probe in zip(requests, probes):
            self._check_fits(len(context_ids) + len(continuation_ids) - 1, request_str, probe)
        lengths = [len(c) + len(t) - 1 for _, c, t in requests]
        scored = sum(len(t) for _, _, t in requests)
        self._announce_plan("scoring", lengths, scored / max(1, sum(lengths)))
        batch_size = override_bs or (self.batch_size if isinstance(self.batch_size, int) else 1)
        order = sorted(range(len(requests)), key=lambda i: -(len(requests[i][1]) + len(requests[i][2])))
        results = [None] * len(requests)
        progress = tqdm(total=len(requests), desc="longmem scoring", disable=disable_tqdm or self.rank != 0, unit="req")
        for first in range(0, len(order), batch_size):
            chunk = order[first : first + batch_size]
            rows = [(requests[i][1] + requests[i][2])[:-1] for i in chunk]
            # row = (context + continuation)[:-1]: the prediction at position p is for token p + 1,
            # so the continuation is predicted from the last len(continuation) positions.
            spans = [ScoredSpan(len(row) - len(requests[i][2]), tuple(requests[i][2])) for row, i in zip(rows, chunk)]
            scores = self._score_chunk(rows, spans, all(probes[i] for i in chunk))
            for i, score in zip(chunk, scores):
                results[i] = score
                request_str = requests[i][0]
                if request_str is not None and not isinstance(score, ScoreFailure):
                    self.cache_hook.add_partial("loglikelihood", request_str, score)
            progress.update(len(chunk))
        progress.close()
        return results

    def _score_chunk(self, rows, spans, tolerate_oom: bool):
        """Scores, or for length probes that run out of memory a `ScoreFailure` each (a batch
        that does not fit is retried one row at a time first), so the task reports the length."""
        try:
            return self._score_rows(rows, spans)
        except ScoringOutOfMemoryError as err:
            if not tolerate_oom:
                raise
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if len(rows) > 1:
                return [score for r, s in zip(rows, spans) for score in self._score_chunk([r], [s], True)]
            logger.warning("%s Reported as a failed length; the run goes on.", err)
            return [ScoreFailure(OUT_OF_MEMORY, str(err))]

    def _score_rows(self, rows, spans):
        width = max(len(r) for r in rows)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        batch = torch.full((len(rows), width), pad, dtype=torch.long)
        for b, row in enumerate(rows):
            batch[b, : len(row)] = torch.tensor(row, dtype=torch.long)
        try:
            return self.scorer.score(batch.to(self.device), spans)
        except (torch.OutOfMemoryError, RuntimeError) as err:
            if (
                isinstance(err, torch.OutOfMemoryError)
                or "can't allocate memory" in str(err)
                or "out of memory" in str(err)
            ):
                raise ScoringOutOfMemoryError(
                    f"Out of memory scoring {len(rows)} input(s) of {width} tokens with "
                    f"method={self.longmem_method.name}. Requests already scored are kept in the "
                    "--use_cache database if you passed one (rerun with the same --use_cache to resume); "
                    "lower the task's lengths or batch_size, or use a method with bounded memory."
                ) from err
            raise

    # --- generation ---------------------------------------------------------------------
    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        """Greedy (or sampled) continuations, one request at a time, never truncating prompts
        unless `overlength=` says to.

        Requests run in the order of their token ids, so prompts that share a prefix (the
        demonstrations of a many-shot prompt, the document before several questions) meet
        one after another and the generator can reuse that prefix's KV cache. Results come
        back in request order. `batch_size` does not apply: each prompt runs alone.
        """
        eos_text = self.tok_decode(self.eot_token_id, skip_special_tokens=False)
        planned = [self._generation_plan(request, eos_text) for request in requests]
        plans = [self._fit_generation(plan) for plan in planned]
        # overlength=skip: a document with an over-length request goes whole
        skipped = {_document_of(r) for r, plan in zip(requests, plans) if plan is None}
        kept = [i for i, request in enumerate(requests) if _document_of(request) not in skipped]
        texts = iter(self._generate([requests[i] for i in kept], [plans[i] for i in kept], disable_tqdm))
        kept_set = set(kept)
        return [
            _marked(next(texts), original, fitted)
            if i in kept_set
            else SkippedText(len(original.prompt_ids) + original.max_new_tokens)
            for i, ((original, _), fitted) in enumerate(zip(planned, plans))
        ]

    def _generate(self, requests, plans, disable_tqdm: bool) -> list[str]:
        if not requests:
            return []
        for request, plan in zip(requests, plans):
            self._check_fits_generation(request, plan)
        self._plan_tasks = tuple(sorted({r.task_name for r in requests if getattr(r, "task_name", None)}))
        self._announce_plan("generation", [len(g.prompt_ids) + g.max_new_tokens for g, _ in plans])
        generator = self._make_generator()
        order = sorted(range(len(plans)), key=lambda i: plans[i][0].prompt_ids)
        results: list[str | None] = [None] * len(plans)
        progress = tqdm(total=len(plans), desc="longmem generation", disable=disable_tqdm or self.rank != 0, unit="req")
        for i in order:
            generation, until = plans[i]
            new_tokens = _cut_at_stop_token(generator.generate(generation), generation.stop_token_ids)
            text = self._postprocess(new_tokens, until)
            results[i] = text
            context, gen_kwargs = requests[i].args
            self.cache_hook.add_partial("generate_until", (context, gen_kwargs), text)
            progress.update(1)
        progress.close()
        return results

    def _make_generator(self):
        generator = self.longmem_method.make_generator(self.model, self.tokenizer)
        if generator is None:
            reuse = self.reuse_prefix and self.longmem_method.prefix_cache_reusable
            if self.reuse_prefix and not reuse:
                logger.info(
                    "method=%s: prompt prefixes are re-encoded (its cache depends on the whole prompt).",
                    self.longmem_method.name,
                )
            generator = PrefixReuseGenerator(self.model, self.tokenizer, reuse=reuse)
        return generator

    def _generation_plan(self, request, eos_text: str) -> tuple[GenerationRequest, list[str]]:
        """lm-eval's (context, gen_kwargs) as a `GenerationRequest` plus the stop strings."""
        context, gen_kwargs = request.args
        kwargs = dict(normalize_gen_kwargs(gen_kwargs, self.max_gen_toks))
        until = handle_stop_sequences(kwargs.pop("until", None), eos=eos_text)
        max_new_tokens = int(kwargs.pop("max_gen_toks"))
        ids = token_ids_of(context)
        prompt = tuple(ids) if ids is not None else tuple(self.tok_encode(context))
        if "max_length" in kwargs:  # Hugging Face's name for prompt + generation
            max_new_tokens = min(max_new_tokens, int(kwargs.pop("max_length")) - len(prompt))
        if not kwargs.get("do_sample"):
            kwargs.pop("temperature", None)
        elif kwargs.get("temperature") is not None and float(kwargs["temperature"]) <= 0:  # transformers' traceback
            raise UsageError(
                f"{_describe_request(request)} asks to sample (do_sample=true) at temperature "
                f"{kwargs['temperature']}: give --gen_kwargs temperature=T with T above 0, or do_sample=false for "
                "greedy decoding."
            )
        return (
            GenerationRequest(
                prompt_ids=prompt,
                max_new_tokens=max_new_tokens,
                stop_token_ids=frozenset(self._stop_token_ids()),
                stop_strings=tuple(s for s in until if s),
                sampling=kwargs,
            ),
            until,
        )

    def _stop_token_ids(self) -> set[int]:
        """The tokenizer's end-of-text plus whatever the checkpoint's generation config ends on."""
        ids = {int(self.eot_token_id)} if self.eot_token_id is not None else set()
        configured = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        if configured is not None:
            ids.update(int(t) for t in (configured if isinstance(configured, (list, tuple)) else [configured]))
        return ids

    def _fit_generation(self, plan):
        """The plan with its prompt cut by `overlength=` (middle, left) to fit, None to skip it
        (skip), or unchanged (refuse: `_check_fits_generation` refuses it)."""
        generation, until = plan
        total = len(generation.prompt_ids) + generation.max_new_tokens
        keep = self.max_length - generation.max_new_tokens
        if total <= self.max_length or self.overlength == "refuse" or keep < 1 or generation.max_new_tokens < 1:
            return plan
        if self.overlength == "skip":
            return None
        prompt = tuple(cut(generation.prompt_ids, keep, self.overlength))
        return dataclasses.replace(generation, prompt_ids=prompt), until

    def _postprocess(self, new_tokens: list[int], until: list[str]) -> str:
        if isinstance(self.think_end_token, int) and self.think_end_token in new_tokens:
            last = len(new_tokens) - 1 - new_tokens[::-1].index(self.think_end_token)
            return postprocess_generated_text(self.tok_decode(new_tokens[last + 1 :]).lstrip(), until, None)
        think = self.think_end_token if isinstance(self.think_end_token, str) else None
        return postprocess_generated_text(self.tok_decode(new_tokens), until, think)

    def _check_fits_generation(self, request, plan) -> None:
        generation, _ = plan
        prompt, room = len(generation.prompt_ids), generation.max_new_tokens
        if room < 1:
            raise UsageError(f"{_describe_request(request)} asks for {room} new tokens; max_gen_toks must be positive.")
        if prompt + room > self.max_length:
            raise ContextTooLongError(
                f"{_describe_request(request)} has a prompt of {prompt} tokens and asks for up to {room} new "
                f"tokens: {prompt + room} in all, more than the {self.max_length} tokens this model takes with "
                f"method={self.longmem_method.name}. lm-eval's hf model would silently cut the prompt from the "
                "left, which breaks memory tests, so longmem refuses. Shorten the task's inputs (its lengths or "
                "shot counts), lower max_gen_toks (--gen_kwargs), pick a context-extension method, or pass "
                "max_length=N in --model_args to allow longer inputs (or overlength=skip|middle|left to skip or "
                "cut them)."
            )

    def _check_fits(self, num_tokens: int, request_str, probe: bool = False) -> None:
        where = ""
        if request_str is not None:
            where = f" (request starting {str(request_str[0])[:60]!r})"
        if probe:  # probes memory past max_length on purpose: only the hard limit applies
            limit = hard_input_limit(self.config, self.longmem_method, self._max_length)
            if limit is not None and num_tokens > limit:
                raise ContextTooLongError(
                    f"An input of {num_tokens} tokens cannot run: this model takes at most {limit} (its learned "
                    f"absolute positions, the method's own limit, or max_length in --model_args){where}. "
                    "Nothing is truncated."
                )
            return
        if num_tokens > self.max_length:
            raise ContextTooLongError(
                f"An input of {num_tokens} tokens is longer than the {self.max_length} tokens this model "
                f"takes with method={self.longmem_method.name}{where}. lm-eval would silently cut it from "
                "the left, which breaks memory tests, so longmem refuses. Shorten the task's lengths, pick a "
                "context-extension method, or pass max_length=N in --model_args to allow longer inputs (or "
                "overlength=skip|middle|left to skip or cut them)."
            )

    # --- chat templates -----------------------------------------------------------------
    def chat_template(self, chat_template: bool | str = False) -> str | None:
        """lm-eval asks for the template right after the model loads, before any request is
        built: a tokenizer without one is refused here in one line, not by transformers' traceback
        halfway through building the requests."""
        if chat_template not in (False, None):
            self._require_chat_template()
        return super().chat_template(chat_template)

    def apply_chat_template(self, chat_history, add_generation_prompt: bool = True) -> str:
        self._require_chat_template()  # the Python API may skip chat_template() above
        return super().apply_chat_template(chat_history, add_generation_prompt)

    def _require_chat_template(self) -> None:
        if self.tokenizer is None or getattr(self.tokenizer, "chat_template", None) is not None:
            return
        name = DEFAULT_MODEL_NAME if self.uses_default_model else source_name(self.pretrained)
        raise UsageError(
            f"--apply_chat_template: the tokenizer of {name} has no chat template (a base model). Drop "
            "--apply_chat_template, or evaluate a chat (instruct) model whose tokenizer has one."
        )

    # --- reporting ----------------------------------------------------------------------
    def gather_object(self, obj, dst=0):
        """lm-eval's gather, with this process's `overlength=` counts riding along: every process
        takes part in lm-eval's gathers after the documents are scored and filtered, while only
        rank 0 writes the results (get_model_info), so that is where the counts meet."""
        if self.world_size <= 1:
            return super().gather_object(obj, dst=dst)
        parts = super().gather_object((obj, self.overlength_ledger.snapshot()), dst=dst)
        if parts is None:  # not the gathering rank
            return None
        self.overlength_ledger.other_ranks = [snap for rank, (_, snap) in enumerate(parts) if rank != self.rank]
        return [part for part, _ in parts]

    def get_model_info(self) -> dict:
        with offline_context():  # HFLM looks up the model's Hub revision; skip that offline
            info = super().get_model_info()
        described = self.longmem_method.describe()
        info.update(
            {
                "longmem_method": described["method"],
                "longmem_method_args": described["args"],
                "longmem_pretrained": DEFAULT_MODEL_NAME if self.uses_default_model else source_name(self.pretrained),
                "longmem_training_length": training_length(self.config, self.tokenizer, self.longmem_method),
                "longmem_context_length": self.max_length,
                "longmem_bounded_memory": self.longmem_method.bounded_memory,
                "longmem_scoring": self.scorer.strategy,
                # what generation did, not only what was asked: methods whose cache depends on the
                # whole prompt re-encode every prompt whatever reuse_prefix says
                "longmem_reuse_prefix": self.reuse_prefix and self.longmem_method.prefix_cache_reusable,
                "longmem_overlength": self.overlength_ledger.as_dict(self.overlength, self.max_length),
            }
        )
        run_record = self.longmem_method.run_record()
        if run_record:
            info["longmem_method_run"] = run_record
        if getattr(self, "cache_database", None):  # --use_cache: the database this run read and wrote
            info["longmem_use_cache"] = self.cache_database
        return info


def _is_probe(request_str) -> bool:
    """A request whose context is a `LengthProbe` (lm-eval's request_str is (context, continuation))."""
    return request_str is not None and is_length_probe(request_str[0])


def _marked(text: str, planned, fitted):
    """`text`, marked with what `overlength=` cut from its prompt when `fitted` is shorter than `planned`."""
    original, kept = len(planned.prompt_ids), len(fitted[0].prompt_ids)
    return CutText(text, original, original - kept) if kept < original else text


def _document_of(request) -> tuple:
    return (getattr(request, "task_name", None), getattr(request, "doc_id", id(request)))


def _cut_at_stop_token(tokens: list[int], stop_ids) -> list[int]:
    """The answer ends before its first end-of-text token (which decoding may not drop)."""
    for position, token in enumerate(tokens):
        if token in stop_ids:
            return tokens[:position]
    return tokens


def _describe_request(request) -> str:
    """Which request, in words: task, document and the start of the prompt."""
    context = request.args[0]
    where = []
    if getattr(request, "task_name", None):
        where.append(f"task {request.task_name}")
    if getattr(request, "doc_id", None) is not None:
        where.append(f"doc {request.doc_id}")
    head = " ".join(str(context)[:60].split())
    return f"The generation request ({', '.join(where) + ', ' if where else ''}prompt starting {head!r})"
