"""Kendall's tau between perplexity and a downstream score across a study's methods, as the
study's appendix reports it (Table 6: tau and its p-value, one per downstream column).

tau-b (ties in either ranking corrected for, as PPL values often tie) and its two-sided
p-value come from `scipy.stats.kendalltau` (exact for small samples without ties, else the
normal approximation with the tie-corrected variance); scipy ships with lm-eval's own
dependencies (scikit-learn). Lower perplexity with a higher score gives a negative tau.
"""

from __future__ import annotations

import math

MIN_POINTS = 3  # fewer methods say nothing about a ranking


def kendall_tau(perplexities: list[float], scores: list[float]) -> dict:
    """{tau, p_value, n, why}; tau and p_value None when fewer than MIN_POINTS methods have both,
    or when either ranking is constant (tau undefined), and `why` says which."""
    pairs = [
        (p, s)
        for p, s in zip(perplexities, scores)
        if p is not None and s is not None and math.isfinite(p) and math.isfinite(s)
    ]
    result = {"tau": None, "p_value": None, "n": len(pairs), "why": None}
    if len(pairs) < MIN_POINTS:
        return {**result, "why": f"too few methods ({len(pairs)})"}
    if len({s for _, s in pairs}) == 1 or len({p for p, _ in pairs}) == 1:
        which = "score" if len({s for _, s in pairs}) == 1 else "perplexity"
        return {**result, "why": f"undefined: every method has the same {which}"}
    from scipy.stats import kendalltau

    outcome = kendalltau([p for p, _ in pairs], [s for _, s in pairs], variant="b")
    tau, p_value = float(outcome.statistic), float(outcome.pvalue)
    if math.isfinite(tau):
        result.update(tau=tau, p_value=p_value)
    return result
