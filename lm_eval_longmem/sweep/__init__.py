"""`lm-eval-longmem sweep`: a grid of models x methods x method arguments x tasks, one stock
`lm_eval` run each, every run in its own results folder named after model and method.

config.py reads and checks a sweep file, plan.py expands it into runs (and tells which are
already done from the results files), execute.py runs them, staging.py moves a run's files into
its folder only once it has finished. examples/ holds sweep files
that run on a CPU with the embedded default model.
"""

from pathlib import Path

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"


def example_files() -> dict[str, Path]:
    """Shipped sweep files by name (file name without .yaml)."""
    return {path.stem: path for path in sorted(EXAMPLES_DIR.glob("*.yaml"))}
