"""`lm-eval-longmem study`: the controlled study of context extension in one command.

One base model, one training budget, one evaluation suite, every method side by side (the
protocol of "A Controlled Study on Long Context Extension and Generalization in LLMs"):

    schema.py     the study file, checked (base, budget, methods, suite, evaluation, launcher)
    budget.py     the one place the budget and the base become training-recipe overrides
    suite.py      the columns (PPL, Needle, Mshots, LongBench, RULER) as lm_eval runs, and
                  what LongBench and RULER need before they can start
    plan.py       the training commands and the evaluation runs, and which are already done
    estimates.py  how long each step should take on this machine
    execute.py    runs the plan: training first, then the evaluations, skipping what is done
    scores.py     one row's scores (with intervals) read back from its results files
    kendall.py    Kendall's tau-b and its p-value, as the study's appendix reports them
    tables.py     Table 1, Table 2 and RULER by length as Markdown, CSV and JSON
    figure.py     Figure 2: perplexity against each downstream score, one point per method

examples/ holds `tiny` (CPU-sized) and `lceg` (the study's own settings).
"""

from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"


def example_files() -> dict[str, Path]:
    """Shipped study files by name (file name without .yaml)."""
    return {path.stem: path for path in sorted(EXAMPLES_DIR.glob("*.yaml"))}
