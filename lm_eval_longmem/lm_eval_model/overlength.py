"""lm-eval's side of `overlength=` (models/runtime/overlength.py has the policies): what the
policy did, for the results file, and leaving skipped documents out of the metrics.

lm-eval computes a task's metrics over every document `Task.doc_iterator` yields, after the
model has answered. `install_document_skipping` wraps it so a document whose responses hold a
skip marker is not yielded then (nor logged with --log_samples); before the model answers there
are no markers and every document is yielded as before. Skipped documents and cut requests are
counted there, from the markers in the responses, so those answered from --use_cache count
too (the cache stores the markers). Counts are per task and per power-of-two bin of the
original input length.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from lm_eval_longmem.common.length_bins import power_of_two_bin
from lm_eval_longmem.common.wrap_once import wrap_once
from lm_eval_longmem.models.runtime.overlength import CUTTING_POLICIES, is_cut, is_skipped

_WRAPPED_MARKER = "__lm_eval_longmem_skips_documents__"

# task name -> {doc_id: input tokens} of the documents left out by `overlength=skip` in this process
SKIPPED_DOCUMENTS: dict[str, dict[int, int]] = {}
# task name -> {(doc_id, request index, repeat): (input tokens, tokens removed)} cut by middle|left
CUT_REQUESTS: dict[str, dict[tuple, tuple[int, int]]] = {}


def forget_counts() -> None:
    """Count afresh, for a new model's results."""
    SKIPPED_DOCUMENTS.clear()
    CUT_REQUESTS.clear()


@dataclass
class OverlengthLedger:
    """What the policy did in the whole run: this process's counts plus, on the gathering rank,
    every other process's latest snapshot (in a data-parallel run each process sees only its
    share of the documents, and only rank 0 writes the results)."""

    other_ranks: list[dict] = field(default_factory=list)

    @staticmethod
    def snapshot() -> dict:
        """This process's counts, picklable, for the gathering rank."""
        return {
            "skipped": {task: dict(docs) for task, docs in SKIPPED_DOCUMENTS.items()},
            "cut": {task: dict(requests) for task, requests in CUT_REQUESTS.items()},
        }

    def _all_ranks(self) -> dict:
        """Keyed by document or request, so snapshots taken several times during a run never
        count twice."""
        total: dict = {"skipped": {}, "cut": {}}
        for part in [self.snapshot(), *self.other_ranks]:
            for kind in total:
                for task, entries in part[kind].items():
                    total[kind].setdefault(task, {}).update(entries)
        return total

    def as_dict(self, policy: str, context_length: int) -> dict:
        record: dict = {"policy": policy, "context_length": context_length}
        counts = self._all_ranks()
        if policy == "skip":
            record["skipped"] = {
                task: {"documents": len(docs), "by_length": _by_length(docs.values())}
                for task, docs in sorted(counts["skipped"].items())
            }
        if policy in CUTTING_POLICIES:
            record["cut"] = {
                task: {
                    "requests": len(requests),
                    "tokens_cut": sum(removed for _, removed in requests.values()),
                    "by_length": _by_length(tokens for tokens, _ in requests.values()),
                }
                for task, requests in sorted(counts["cut"].items())
            }
        return record


def _by_length(lengths) -> dict[str, int]:
    bins = Counter(power_of_two_bin(n) for n in lengths)
    return {b.label: bins[b] for b in sorted(bins, key=lambda b: b.low)}


def skipped_in(task) -> dict[int, int]:
    """doc_id -> input tokens of the documents of `task` whose responses hold a skip marker."""
    skipped = {}
    for instance in getattr(task, "_instances", None) or []:
        for response in instance.resps:
            if is_skipped(response):
                skipped[instance.doc_id] = max(skipped.get(instance.doc_id, 0), response.tokens)
    return skipped


def cut_in(task) -> dict[tuple, tuple[int, int]]:
    """(doc_id, request index, repeat) -> (input tokens, tokens removed) of the cut requests of `task`."""
    return {
        (instance.doc_id, instance.idx, repeat): (response.tokens, response.removed)
        for instance in getattr(task, "_instances", None) or []
        for repeat, response in enumerate(instance.resps)
        if is_cut(response)
    }


def install_document_skipping() -> bool:
    """Wrap lm-eval's `Task.doc_iterator` so documents answered by a skip marker are left out of
    the metrics and the logged samples (a no-op for tasks without markers), and the markers are
    counted. Idempotent."""
    from lm_eval.api.task import Task

    return wrap_once(Task, "doc_iterator", _skipping_and_counting, _WRAPPED_MARKER)


def _skipping_and_counting(original):
    def doc_iterator(self, *args, **kwargs):
        documents = original(self, *args, **kwargs)
        name = str(getattr(self, "task_name", None) or getattr(getattr(self, "config", None), "task", None) or "?")
        cut = cut_in(self)
        if cut:
            CUT_REQUESTS.setdefault(name, {}).update(cut)
        skipped = skipped_in(self)
        if not skipped:
            return documents
        SKIPPED_DOCUMENTS.setdefault(name, {}).update(skipped)
        return ((doc_id, doc) for doc_id, doc in documents if doc_id not in skipped)

    return doc_iterator
