"""From per-window losses to perplexity per length and the loss-by-position curve.

Perplexity at a length is exp(total NLL / total predicted tokens) over its windows (every
window of one length predicts the same number of tokens, so this is also exp of the mean of
the windows' mean NLL). The loss curve L(i), as the FoX paper plots it, is the mean loss of
the token at position i of a window, pooled over the windows of the longest length and
averaged inside equal-width position bins (under sliding-window evaluation, only the scored
positions: a window's last `ppl_stride`).
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from lm_eval_longmem.tasks.summarized_metric import SummarizedMetric


def perplexity(records) -> float:
    nll = sum(r["nll_sum"] for r in records)
    tokens = sum(r["tokens"] for r in records)
    return math.exp(nll / tokens) if tokens else float("nan")


def mean_nll(records) -> float:
    tokens = sum(r["tokens"] for r in records)
    return sum(r["nll_sum"] for r in records) / tokens if tokens else float("nan")


def bin_edges(length: int, bins: int, first: int = 1) -> np.ndarray:
    """Integer edges of `bins` equal-width bins over the predicted positions first .. length-1."""
    edges = np.unique(np.linspace(first, length, num=min(bins, length - first) + 1).round().astype(int))
    return edges


def binned_loss(token_nll: list[np.ndarray], length: int, bins: int, first: int = 1) -> dict:
    """Mean loss per position bin; token_nll[w][j] is the loss of position first + j of window w."""
    losses = np.stack([np.asarray(t, dtype=np.float64) for t in token_nll])  # [windows, length - first]
    by_position = losses.mean(axis=0)
    edges = bin_edges(length, bins, first)
    positions, loss, tokens = [], [], []
    for lo, hi in zip(edges[:-1], edges[1:]):
        # predicted position p sits at column p - first
        positions.append(float((lo + hi - 1) / 2))
        loss.append(float(by_position[lo - first : hi - first].mean()))
        tokens.append(int((hi - lo) * losses.shape[0]))
    return {"positions": positions, "loss": loss, "edges": [int(e) for e in edges], "tokens": tokens}


class LossCurve(SummarizedMetric):
    def summary(self) -> str:
        if not self.field("loss"):
            return "no per-token losses (use --model longmem)"
        return f"{len(self.field('loss'))} bins to position {self.field('length') - 1}; see the results JSON"


class PerplexityCurve(SummarizedMetric):
    def summary(self) -> str:
        return f"{len(self.field('lengths'))} lengths; see the results JSON"


def _by_length(records) -> dict[int, list]:
    groups = defaultdict(list)
    for r in records:
        groups[int(r["length"])].append(r)
    return dict(sorted(groups.items()))


def _scored(records) -> list:
    return [r for r in records if r.get("status", "ok") == "ok"]


def loss_curve(records, bins: int) -> LossCurve:
    """L(i) over the windows of the longest length that has per-token losses (and per length)."""
    groups = _by_length(_scored(records))
    with_losses = {L: g for L, g in groups.items() if all(r.get("token_nll") is not None for r in g)}
    if not with_losses:
        return LossCurve(length=0, windows=0, positions=[], loss=[], edges=[], tokens=[], by_length={})
    by_length = {
        L: binned_loss([r["token_nll"] for r in g], L, bins, first=int(g[0].get("first", 1)))
        for L, g in with_losses.items()
    }
    longest = max(with_losses)
    return LossCurve(
        length=longest,
        windows=len(with_losses[longest]),
        **by_length[longest],
        by_length={str(L): curve for L, curve in by_length.items()},
    )


def perplexity_curve(records) -> PerplexityCurve:
    """Every planned length with its status; perplexity where every window ran (else None)."""
    groups = _by_length(records)
    statuses = []
    for group in groups.values():
        failed = [r["status"] for r in group if r.get("status", "ok") != "ok"]
        statuses.append(failed[0] if failed else "ok")
    ok = [s == "ok" for s in statuses]
    return PerplexityCurve(
        lengths=list(groups),
        ppl=[perplexity(g) if good else None for g, good in zip(groups.values(), ok)],
        nll=[mean_nll(g) if good else None for g, good in zip(groups.values(), ok)],
        windows=[len(_scored(g)) for g in groups.values()],
        status=statuses,
    )
