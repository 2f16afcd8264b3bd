"""lm-eval's side of `overlength=` (models/runtime/overlength.py has the policies): what the
policy did, for the results file, and leaving skipped documents out of the metrics.

lm-eval computes a task's metrics over every document `Task.doc_iterator` yields, after the
model has answered. `install_document_skipping` wraps it so a document whose responses hold a
skip marker is not yielded then (nor logged with --log_samples); before the model answers there
are no markers and every document is yielded as before. The skipped documents are counted
there, so those answered from --use_cache count too. Counts are per task and per power-of-two
bin of the original input length.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field

from lm_eval_longmem.models.runtime.overlength import CUTTING_POLICIES, is_skipped, length_bin

_WRAPPED_MARKER = "__lm_eval_longmem_skips_documents__"


@dataclass
class OverlengthLedger:
    """What the policy did, per task: requests cut and tokens removed (middle, left). Skipped
    documents are counted when lm-eval leaves them out (`skipped_documents`), which also covers
    those answered from --use_cache."""

    cut_requests: Counter = field(default_factory=Counter)
    cut_tokens: Counter = field(default_factory=Counter)
    cut_by_length: dict[str, Counter] = field(default_factory=dict)
    # the latest snapshot of every other process (data-parallel runs), kept on the gathering rank:
    # each process sees only its share of the documents, and only rank 0 writes the results
    other_ranks: list[dict] = field(default_factory=list)

    def record_cut(self, task: str, original: int, removed: int) -> None:
        self.cut_requests[task] += 1
        self.cut_tokens[task] += removed
        self.cut_by_length.setdefault(task, Counter())[length_bin(original)] += 1

    def snapshot(self) -> dict:
        """This process's counts, picklable, for the gathering rank."""
        return {
            "skipped": {task: dict(docs) for task, docs in SKIPPED_DOCUMENTS.items()},
            "cut_requests": dict(self.cut_requests),
            "cut_tokens": dict(self.cut_tokens),
            "cut_by_length": {task: dict(bins) for task, bins in self.cut_by_length.items()},
        }

    def _all_ranks(self) -> dict:
        """This process's counts with every other process's latest snapshot added. Snapshots
        replace each other, so gathering several times during a run never counts twice."""
        total = {"skipped": {}, "cut_requests": Counter(), "cut_tokens": Counter(), "cut_by_length": {}}
        for part in [self.snapshot(), *self.other_ranks]:
            for task, docs in part["skipped"].items():
                total["skipped"].setdefault(task, {}).update(docs)
            total["cut_requests"].update(part["cut_requests"])
            total["cut_tokens"].update(part["cut_tokens"])
            for task, bins in part["cut_by_length"].items():
                total["cut_by_length"].setdefault(task, Counter()).update(bins)
        return total

    def as_dict(self, policy: str, context_length: int) -> dict:
        record: dict = {"policy": policy, "context_length": context_length}
        counts = self._all_ranks()
        if policy == "skip":
            record["skipped"] = {
                task: {
                    "documents": len(docs),
                    "by_length": dict(sorted(Counter(length_bin(n) for n in docs.values()).items(), key=_bin_order)),
                }
                for task, docs in sorted(counts["skipped"].items())
            }
        if policy in CUTTING_POLICIES:
            record["cut"] = {
                task: {
                    "requests": counts["cut_requests"][task],
                    "tokens_cut": counts["cut_tokens"][task],
                    "by_length": dict(sorted(counts["cut_by_length"][task].items(), key=_bin_order)),
                }
                for task in sorted(counts["cut_requests"])
            }
        return record


def _bin_order(item) -> int:
    return int(item[0].split("-")[0])


# task name -> {doc_id: input tokens} of the documents left out by `overlength=skip` in this process
SKIPPED_DOCUMENTS: dict[str, dict[int, int]] = {}


def skipped_in(task) -> dict[int, int]:
    """doc_id -> input tokens of the documents of `task` whose responses hold a skip marker."""
    skipped = {}
    for instance in getattr(task, "_instances", None) or []:
        for response in instance.resps:
            if is_skipped(response):
                skipped[instance.doc_id] = max(skipped.get(instance.doc_id, 0), response.tokens)
    return skipped


def install_document_skipping() -> bool:
    """Wrap lm-eval's `Task.doc_iterator` so documents answered by a skip marker are left out of
    the metrics and the logged samples (a no-op for tasks without markers). Idempotent."""
    from lm_eval.api.task import Task

    original = Task.doc_iterator
    if getattr(original, _WRAPPED_MARKER, False):
        return False

    @functools.wraps(original)
    def doc_iterator(self, *args, **kwargs):
        documents = original(self, *args, **kwargs)
        skipped = skipped_in(self)
        if not skipped:
            return documents
        name = getattr(self, "task_name", None) or getattr(getattr(self, "config", None), "task", None) or "?"
        SKIPPED_DOCUMENTS.setdefault(str(name), {}).update(skipped)
        return ((doc_id, doc) for doc_id, doc in documents if doc_id not in skipped)

    setattr(doc_iterator, _WRAPPED_MARKER, True)
    Task.doc_iterator = doc_iterator
    return True
