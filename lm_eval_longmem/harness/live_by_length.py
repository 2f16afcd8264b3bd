"""Scores by input length written into the results of a `--model longmem` run, as it runs.

`lm-eval-longmem by-length` reads a finished run's `--log_samples` files; this writes the same
per-bin numbers into `results[task]` directly, so `leaderboard` and `sweep` show them. lm-eval
computes each document's metrics in `evaluate` and keeps only their aggregate. The wrapper of
`evaluate` listens to each chosen task while lm-eval scores it: `Task.doc_iterator` says which
document comes next and `Task.process_results` returns its metrics (both wrapped on the task
object, for this run only). The input length of a document is its longest request (context plus
continuation), in the model's tokenizer, special tokens not counted, as `by-length` counts.

Keys, for metric `acc` under filter `none` and the bin [512, 1024):
`acc@len512-1k,none` (the mean), `acc@len512-1k_n,none` (the samples) and, from `FLOOR` samples
up, `acc@len512-1k_ci,none` = [low, high] (the seeded bootstrap of common/bootstrap.py). Bins are
powers of two (common/length_bins.py). Which tasks: `by_length=` of `--model longmem` (the
model's `by_length_tasks` attribute): `auto` (ours only: lm-eval's tasks keep their result keys),
`on`, `off`. Other models are left alone.
"""

from __future__ import annotations

import functools
from collections import defaultdict

from lm_eval_longmem.common.bootstrap import DEFAULT_SETTINGS, as_number, bootstrap_interval
from lm_eval_longmem.common.length_bins import LengthBin, bin_of, power_of_two_bins
from lm_eval_longmem.common.wrap_once import wrap_once
from lm_eval_longmem.errors import UsageError

FLOOR = 10  # fewer samples in a bin: its mean and count, no interval (by-length's floor)
CHOICES = ("auto", "on", "off")
_MARKER = "__lm_eval_longmem_live_by_length__"


class ByLengthSettingError(UsageError):
    """`by_length=` is not auto, on or off."""


def parse_setting(value) -> str:
    """`by_length=` of `--model longmem`: auto (default), on, off; a bool reads as on/off."""
    if value is None:
        return "auto"
    if isinstance(value, bool):
        return "on" if value else "off"
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return "on"
    if text in ("false", "0", "no"):
        return "off"
    if text not in CHOICES:
        raise ByLengthSettingError(
            f"--model_args by_length={value}: unknown setting; valid: {', '.join(CHOICES)} "
            "(default auto: per-bin scores for our tasks only, lm-eval's keep their result keys)."
        )
    return text


def chosen(setting: str, task_name: str, ours) -> bool:
    """Whether `task_name` gets per-bin keys under `setting` (`ours`: the names of our tasks)."""
    return setting == "on" or (setting == "auto" and task_name in ours)


class TaskListener:
    """Records (filter, doc_id, metrics) for each document lm-eval scores of one task."""

    def __init__(self, task):
        self.task = task
        self.records: list[tuple[str, int, dict]] = []
        self._pass = -1  # which filter's pass over the documents (lm-eval makes one per filter)
        self._scoring = False
        self._doc_id = None

    def attach(self) -> None:
        task = self.task
        apply_filters, doc_iterator, process_results = task.apply_filters, task.doc_iterator, task.process_results

        def filtered(*args, **kwargs):  # lm-eval filters, then scores: the passes start here
            self._scoring, self._pass = True, -1
            return apply_filters(*args, **kwargs)

        def documents(*args, **kwargs):
            if not self._scoring:
                yield from doc_iterator(*args, **kwargs)
                return
            self._pass += 1
            for doc_id, doc in doc_iterator(*args, **kwargs):
                self._doc_id = doc_id
                yield doc_id, doc

        def scored(doc, results):
            metrics = process_results(doc, results)
            if self._scoring and self._doc_id is not None:
                filters = list(task.instances[0].filtered_resps) if task.instances else ["none"]
                self.records.append((filters[min(self._pass, len(filters) - 1)], self._doc_id, dict(metrics)))
            return metrics

        task.apply_filters, task.doc_iterator, task.process_results = filtered, documents, scored

    def detach(self) -> None:
        for name in ("apply_filters", "doc_iterator", "process_results"):
            self.task.__dict__.pop(name, None)

    def averaged(self) -> set[str] | None:
        """The metrics lm-eval reports as a mean of the documents' values: a bin's mean is the same
        number over fewer documents. A count (`skipped_documents`), a corpus F1 or a perplexity is
        not. None: the task does not say (every numeric metric is binned, as by-length does)."""
        from lm_eval.api.metrics import mean

        try:
            aggregations = self.task.aggregation()
        except Exception:  # noqa: BLE001 - a task without aggregations: nothing to go by
            return None
        return {name for name, aggregate in aggregations.items() if aggregate is mean}

    def lengths(self, count) -> dict[int, int]:
        """doc_id -> its longest request, in tokens."""
        found: dict[int, int] = {}
        for instance in self.task.instances:
            texts = [argument for argument in instance.args[:2] if isinstance(argument, str)]  # not gen_kwargs
            length = sum(count(text) for text in texts)
            found[instance.doc_id] = max(found.get(instance.doc_id, 0), length)
        return found


def token_counter(tokenizer):
    """A text's token count (special tokens not counted), each distinct text counted once."""

    @functools.cache
    def count(text: str) -> int:
        if not text:
            return 0
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return count


def per_bin_entries(samples: list[tuple[str, int, dict]], settings=DEFAULT_SETTINGS) -> dict:
    """{"acc@len512-1k,none": mean, "..._n,none": count, "..._ci,none": [low, high]} from
    (filter, input length, metrics) per document. Left out: values that are not one number, and
    metrics a task already splits itself (`acc@len096`, `acc@depth050`: a name with "@")."""
    bins = power_of_two_bins([length for _, length, _ in samples])
    held: dict[tuple[str, str, LengthBin], list[float]] = defaultdict(list)
    for filter_key, length, metrics in samples:
        for metric, value in metrics.items():
            if "@" in metric:
                continue
            number = as_number(value)
            where = bin_of(length, bins)
            if number is not None and where is not None:
                held[(metric, filter_key, where)].append(number)
    entries: dict = {}
    for (metric, filter_key, where), scores in sorted(held.items(), key=lambda item: (item[0][0], item[0][2].low)):
        name = f"{metric}@len{where.label}"
        entries[f"{name},{filter_key}"] = sum(scores) / len(scores)
        entries[f"{name}_n,{filter_key}"] = len(scores)
        if len(scores) >= FLOOR:
            entries[f"{name}_ci,{filter_key}"] = list(bootstrap_interval(scores, settings))
    return entries


def _our_task_names() -> set[str]:
    from lm_eval_longmem.tasks.registry import task_names

    return set(task_names())


def _tasks_of(task_dict) -> list[tuple[str, object]]:
    """(name, task) of every task of the run, groups' members included (groups have no task);
    lm-eval 0.4.13 passes {"tasks": {name: task}, "groups": ...} or, from older callers, a nested dict."""
    if "tasks" in task_dict:
        return list(task_dict["tasks"].items())
    from lm_eval.evaluator import _handle_back_comp

    return list(_handle_back_comp(task_dict)[1].items())


def install(evaluator_module=None) -> bool:
    """Wrap lm-eval's `evaluate` so a model with `by_length_tasks` gets per-bin keys. Idempotent."""
    if evaluator_module is None:
        import lm_eval.evaluator as evaluator_module
    return wrap_once(evaluator_module, "evaluate", _adding_bins, _MARKER)


def _adding_bins(original):
    def evaluate(lm, task_dict, *args, **kwargs):
        setting = getattr(lm, "by_length_tasks", None)
        if setting not in ("auto", "on"):
            return original(lm, task_dict, *args, **kwargs)
        ours = _our_task_names() if setting == "auto" else set()
        listeners = {name: TaskListener(task) for name, task in _tasks_of(task_dict) if chosen(setting, name, ours)}
        for listener in listeners.values():
            listener.attach()
        try:
            results = original(lm, task_dict, *args, **kwargs)
        finally:
            for listener in listeners.values():
                listener.detach()
        count = token_counter(lm.tokenizer)
        samples = {}
        for name, listener in listeners.items():
            lengths, averaged = listener.lengths(count), listener.averaged()
            samples[name] = [
                (f, lengths.get(doc_id, 0), {k: v for k, v in metrics.items() if averaged is None or k in averaged})
                for f, doc_id, metrics in listener.records
            ]
        if int(getattr(lm, "world_size", 1) or 1) > 1:
            parts = lm.gather_object(samples, dst=0) or []
            samples = {name: [s for part in parts for s in part.get(name, [])] for name in listeners}
        if isinstance(results, dict):
            for name, per_document in samples.items():
                if name in results.get("results", {}) and per_document:
                    results["results"][name].update(per_bin_entries(per_document))
        return results

    return evaluate
