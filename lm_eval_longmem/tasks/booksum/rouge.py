"""Rouge-1, Rouge-2, Rouge-L F-measure through `rouge-score`, and the "overall" Rouge.

Scored as SCROLLS' summarization metric (Shaham et al. 2022), which Bertsch et al. (2024,
Unlimiformer) report BookSum with: `rouge-score` (Google's reimplementation of Lin's ROUGE,
an lm-eval dependency) lower-cases and keeps letters and digits, without stemming
(`use_stemmer=False`, as SCROLLS passes it); Rouge-L is the summary-level LCS over the whole
text (`rougeL`, not the per-sentence `rougeLsum`).

"Overall" is the geometric mean of the three corpus-level F-measures (SCROLLS'
`rouge/geometric_mean`; Bertsch et al. 2024, Table 4; the Infini-attention paper's Table 4
copies their rows): overall = (R1 * R2 * RL) ** (1/3), over the averaged R1, R2, RL, not an
average of per-book geometric means. E.g. BART's 36.4 / 7.6 / 15.3 gives 16.2.

Scores are reported x 100, as the papers print them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


@functools.lru_cache(maxsize=1)
def _scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=False)


def rouge_f(prediction: str, reference: str) -> tuple[float, float, float]:
    """(R1, R2, RL) F-measures of `prediction` against one `reference`, each in [0, 1]."""
    scores = _scorer().score(reference, prediction)  # rouge-score takes (target, prediction)
    return tuple(float(scores[kind].fmeasure) for kind in ROUGE_TYPES)


def overall(r1: float, r2: float, rl: float) -> float:
    """The geometric mean of Rouge-1, Rouge-2 and Rouge-L (0 when any of them is 0)."""
    if min(r1, r2, rl) < 0:
        raise ValueError(f"Rouge scores are non-negative, got {(r1, r2, rl)}")
    return math.prod((r1, r2, rl)) ** (1 / 3)


def mean_scores(pairs: Iterable[Sequence[float]]) -> tuple[float, float, float]:
    """The mean (R1, R2, RL) over (prediction, reference) pairs, x 100; NaN without pairs."""
    pairs = list(pairs)
    if not pairs:
        return (math.nan, math.nan, math.nan)
    return tuple(100.0 * sum(p[i] for p in pairs) / len(pairs) for i in range(3))
