"""Generation tasks whose answers are mostly empty: said in the log and recorded in the results.

An instruct model given a plain-text prompt often answers its end-of-turn token at once (it
expects its chat template), so every generation is the empty string and every score is 0, which
reads like a real result. lm-eval says nothing about it. Here every `generate_until` call of an
evaluation is counted per task; a task where at least half the answers are empty gets a warning
naming the count and the likely cause, and every generation task gets
`results["empty_generations"][task] = {"empty", "generated", ["likely_cause"]}` in its results
file. Applies to any model (`longmem`, `hf`, ...) and any generation task.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter

from lm_eval_longmem.common.wrap_once import wrap_once

logger = logging.getLogger(__name__)

RESULTS_KEY = "empty_generations"
MOSTLY = 0.5  # the share of empty answers that makes a task's scores meaningless
_MARKER = "__lm_eval_longmem_empty_outputs__"


def likely_cause(apply_chat_template) -> str:
    if not apply_chat_template:
        return (
            "the model ends its answer at once; an instruct or chat model given a plain-text prompt "
            "usually answers its end-of-turn token: add --apply_chat_template"
        )
    return (
        "the model ends its answer at once even with its chat template: check --gen_kwargs "
        "(an `until` string the model writes first, max_gen_toks) and the model's end-of-text token"
    )


class EmptyAnswerCounter:
    """Counts, per task, the answers of an LM's `generate_until` and how many are empty."""

    def __init__(self):
        self.generated: Counter[str] = Counter()
        self.empty: Counter[str] = Counter()

    def wrap(self, generate_until):
        @functools.wraps(generate_until)
        def counted(requests, *args, **kwargs):
            answers = generate_until(requests, *args, **kwargs)
            for request, answer in zip(requests, answers):
                task = getattr(request, "task_name", None) or "?"
                self.generated[task] += 1
                self.empty[task] += not (isinstance(answer, str) and answer.strip())
            return answers

        return counted

    def merged_with(self, others) -> EmptyAnswerCounter:
        merged = EmptyAnswerCounter()
        for counter in [self, *others]:
            merged.generated.update(counter.generated)
            merged.empty.update(counter.empty)
        return merged

    def report(self, apply_chat_template) -> dict[str, dict]:
        """{task: {"empty", "generated"[, "likely_cause"]}}, warning for each mostly-empty task."""
        found = {}
        for task, generated in sorted(self.generated.items()):
            entry = {"empty": self.empty[task], "generated": generated}
            if generated and self.empty[task] >= MOSTLY * generated:
                entry["likely_cause"] = likely_cause(apply_chat_template)
                logger.warning(
                    "%s: %d of %d generated answers are empty, so its scores mean nothing: %s.",
                    task,
                    self.empty[task],
                    generated,
                    entry["likely_cause"],
                )
            found[task] = entry
        return found


def _gathered(counter: EmptyAnswerCounter, lm) -> EmptyAnswerCounter:
    """Every process's counts on rank 0 (one process: itself)."""
    if int(getattr(lm, "world_size", 1) or 1) <= 1:
        return counter
    parts = lm.gather_object((dict(counter.generated), dict(counter.empty)), dst=0)
    others = []
    for generated, empty in (parts or [])[1:]:
        other = EmptyAnswerCounter()
        other.generated.update(generated)
        other.empty.update(empty)
        others.append(other)
    return counter.merged_with(others)


def install(evaluator_module=None) -> bool:
    """Wrap lm-eval's `evaluate` (what `simple_evaluate` calls) with the count. Idempotent."""
    if evaluator_module is None:
        import lm_eval.evaluator as evaluator_module
    return wrap_once(evaluator_module, "evaluate", _counting_empty_answers, _MARKER)


def _counting_empty_answers(original):
    def evaluate(lm, *args, **kwargs):
        counter = EmptyAnswerCounter()
        had_own = "generate_until" in vars(lm)
        own = vars(lm).get("generate_until")
        lm.generate_until = counter.wrap(lm.generate_until)
        try:
            results = original(lm, *args, **kwargs)
        finally:
            if had_own:
                lm.generate_until = own
            else:
                del lm.generate_until
        counter = _gathered(counter, lm)
        if isinstance(results, dict) and counter.generated:
            results[RESULTS_KEY] = counter.report(kwargs.get("apply_chat_template", False))
        return results

    return evaluate
