"""The one kind of error a user sees as a message, not a traceback.

Every error our code raises for a user's mistake or a missing resource (an unknown method or
argument, an input longer than the model takes, data or a model missing offline, a results
file that is not one) derives from `LongMemError`, and its message already says what was wrong,
the valid choices and the fix. The lm-eval command (through the start-up hook) and
`lm-eval-longmem` print such a message alone and exit non-zero; `LM_EVAL_LONGMEM_DEBUG=1` shows
the traceback too. Anything else (a bug) keeps its traceback.

Imports nothing: the start-up hook loads it in every lm-eval process.
"""

from __future__ import annotations

import os
import sys

DEBUG_ENV = "LM_EVAL_LONGMEM_DEBUG"


class LongMemError(Exception):
    """Base of the errors whose message is all a user needs (mixed into ValueError etc.)."""


class ResultsFileError(LongMemError, ValueError):
    """A results file or folder given to a report command is missing, corrupt or not lm-eval's."""


class UsageError(LongMemError, ValueError):
    """The command line itself is wrong: changing what was typed makes the command run (a
    misspelled task, method or argument; a value malformed or out of range; a path that is not
    there; lengths the model cannot take). Answered as argparse answers its own mistakes: one
    line and exit status 2. Every other error of ours (a model or dataset missing offline, a
    package not installed, a damaged file, out of memory) exits 1."""


USAGE_EXIT_STATUS = 2  # argparse's


def exit_2_for_usage_errors(run, program: str | None = None):
    """`run()`'s result; a `UsageError` it raises (also one a library raised another error
    from) is answered with one line and exit status 2, whenever it is found."""
    try:
        return run()
    except Exception as exc:
        error = user_error_in(exc)
        if not isinstance(error, UsageError) or debugging():
            raise
        exit_for_usage_error(error, program)


def exit_for_usage_error(error: UsageError, program: str | None = None):
    """Print `error` as argparse would and exit 2 (re-raised with LM_EVAL_LONGMEM_DEBUG=1)."""
    if debugging():
        raise error
    sys.stderr.write(f"{program or program_name()}: error: {error}\n")
    raise SystemExit(USAGE_EXIT_STATUS)


def user_error_in(exc: BaseException | None) -> LongMemError | None:
    """The `LongMemError` behind `exc` (itself, or what it was raised from or during), if any."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, LongMemError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def debugging() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def program_name() -> str:
    """The command as the user typed it (`lm_eval`, `lm-eval-longmem`), for the message prefix."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name if name and not name.endswith(".py") and name != "-c" else "lm_eval"


def print_user_error(error: LongMemError, program: str = "lm_eval") -> None:
    sys.stderr.write(f"{program}: error: {error}\n(set {DEBUG_ENV}=1 to see the traceback)\n")


def answered_exit_status(error: LongMemError, program: str) -> int:
    """Print `error` as the exit-status rule says and return that status: a `UsageError` as
    argparse's one line (2), any other as the line and the debugging hint (1)."""
    if isinstance(error, UsageError):
        sys.stderr.write(f"{program}: error: {error}\n")
        return USAGE_EXIT_STATUS
    print_user_error(error, program)
    return 1


INTERRUPTED_HINTS = {
    "lm_eval": "requests already scored are kept in the --use_cache database if you passed one: rerun the same "
    "command to resume",
    "lm-eval-longmem": "rerun the same command to resume (training from its last checkpoint, a sweep from its "
    "finished runs)",
}


def print_interrupted(program: str) -> None:
    """The line comes last: open progress bars are closed first (else they redraw after it)."""
    tqdm = sys.modules.get("tqdm")
    for bar in list(getattr(getattr(tqdm, "tqdm", None), "_instances", None) or ()):
        try:
            bar.close()
        except Exception:  # a bar half torn down by the interrupt: its last redraw does not matter
            pass
    hint = INTERRUPTED_HINTS.get(program, INTERRUPTED_HINTS["lm_eval"])
    sys.stderr.write(f"\n{program}: interrupted; {hint}.\n")


INTERRUPTED_EXIT_STATUS = 130  # 128 + SIGINT: what a shell reports for a command ended by Ctrl-C


def exit_status_if_interrupted(run, program: str = "lm-eval-longmem") -> int:
    """`run()`'s exit status, or 130 after the one interrupted line if Ctrl-C ends it.

    Decided here because, left to Python, Ctrl-C during `lm-eval-longmem train` ends with status 1
    (the interpreter's own ending for an uncaught Ctrl-C, killed by SIGINT, does not happen there),
    which a scheduler or `set -e` script reads as a failure. LM_EVAL_LONGMEM_DEBUG=1 keeps the
    traceback."""
    try:
        return run()
    except KeyboardInterrupt:
        if debugging():
            raise
        print_interrupted(program)
        return INTERRUPTED_EXIT_STATUS


def concise_excepthook(previous):
    """A `sys.excepthook` that prints a `LongMemError` as its message alone, and Ctrl-C as one
    line saying what is kept (not the traceback of wherever the run happened to be)."""

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt) and not debugging():
            print_interrupted(program_name())
            return None
        error = None if debugging() else user_error_in(exc)
        if error is None:
            return previous(exc_type, exc, tb)
        print_user_error(error, program_name())
        return None

    hook.__lm_eval_longmem__ = True
    return hook


def install_concise_excepthook() -> None:
    """Idempotent: wrap the current `sys.excepthook` once."""
    if not getattr(sys.excepthook, "__lm_eval_longmem__", False):
        sys.excepthook = concise_excepthook(sys.excepthook)
