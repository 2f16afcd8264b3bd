"""lm-eval-longmem: lm-evaluation-harness plugins for long-context memory.

This module is imported by the start-up hook in every lm-eval process, so it must stay
tiny: a version string and `register()`, which imports the heavy parts only when called.
"""

__version__ = "0.1.0"


def register() -> None:
    """Make `longmem` and our tasks visible to lm-eval in this process (idempotent).

    Needed for the Python API, e.g. before `lm_eval.simple_evaluate(model="longmem")`;
    the `lm_eval` command line is covered by the start-up hook.
    """
    from lm_eval_longmem.harness.registration import register_all

    register_all()


__all__ = ["__version__", "register"]
