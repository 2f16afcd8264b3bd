"""BookSum's aggregations: Rouge per input budget, and the whole curve as one metric.

Each document (one book at one budget) gives a record: its budget, the (R1, R2, RL) of its
summary against each reference of the book, and how its book was cut. A book with several
references counts once per reference, as in Bertsch et al., whose rows are (book, summary)
pairs. Per budget, R1/R2/RL are means over those pairs (x 100) and "overall" is their
geometric mean (rouge.py). `rouge_by_length` holds every budget's numbers and cut counts,
for the plot (report/booksum_plot.py) and the results JSON, and the same per book: each book's
scores against its own references (`by_book`), and the scores with every book counted once
(`per_book`: a book's references averaged first), since a book with many references otherwise
weighs more than one with few.
"""

from __future__ import annotations

import math
from collections import defaultdict

from lm_eval_longmem.tasks.booksum.rouge import mean_scores, overall
from lm_eval_longmem.tasks.summarized_metric import SummarizedMetric

SCORES = ("rouge1", "rouge2", "rougeL", "overall")


def scores_of(records) -> dict[str, float]:
    """R1, R2, RL and overall (x 100) over the (summary, reference) pairs of `records`."""
    r1, r2, rl = mean_scores(pair for record in records for pair in record["pairs"])
    return {"rouge1": r1, "rouge2": r2, "rougeL": rl, "overall": math.nan if math.isnan(r1) else overall(r1, r2, rl)}


def scores_per_book(records) -> dict[str, float]:
    """R1, R2, RL (x 100) with each book counted once: the mean over books of each book's mean over
    its references; overall is their geometric mean, as for the rows."""
    books = [mean_scores(record["pairs"]) for record in records if record["pairs"]]
    if not books:
        return {score: math.nan for score in SCORES}
    r1, r2, rl = (sum(book[i] for book in books) / len(books) for i in range(3))
    return {"rouge1": r1, "rouge2": r2, "rougeL": rl, "overall": overall(r1, r2, rl)}


def aggregate(score: str):
    """lm-eval's aggregation for one of SCORES over the records of one budget."""

    def aggregation(records) -> float:
        return scores_of(records)[score]

    aggregation.__name__ = f"booksum_{score}"
    return aggregation


def cut_books(records) -> int:
    """How many books the model's context cut shorter than the budget."""
    return sum(bool(record["cut_by_context"]) for record in records)


class RougeByLength(SummarizedMetric):
    """Rouge per input budget; the printed table shows one line."""

    def summary(self) -> str:
        points = self.field("points")
        if not points:
            return "no books"
        scores = " / ".join(f"{point['overall']:.1f}" for point in points)
        budgets = " / ".join(str(point["budget"]) for point in points)
        return f"overall {scores} at {budgets} book tokens; see the results JSON"


def rouge_by_length(records) -> RougeByLength:
    by_budget = defaultdict(list)
    for record in records:
        by_budget[int(record["budget"])].append(record)
    points = []
    for budget, group in sorted(by_budget.items()):
        points.append(
            {
                "budget": budget,
                **scores_of(group),
                "books": len(group),
                "references": sum(len(r["pairs"]) for r in group),
                "cut_by_context": cut_books(group),
                "shorter_than_budget": sum(int(r["book_tokens"]) < budget for r in group),
                "mean_tokens_read": sum(int(r["kept_tokens"]) for r in group) / len(group),
                "per_book": scores_per_book(group),
                "by_book": [{"title": r.get("title"), "references": len(r["pairs"]), **scores_of([r])} for r in group],
            }
        )
    return RougeByLength(points=points, unit="book tokens", scale="x100")
