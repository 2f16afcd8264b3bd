"""Running a planned sweep: one stock `lm_eval` process per run, so results files are exactly
those of a normal `lm_eval --output_path` run, a crash or out-of-memory in one run cannot take
the sweep down, and memory is returned between runs. Each run's output goes to
`<output_path>/.sweep_logs/`; a failed run's one-line reason comes from there. A run's files
reach its results folder only once its lm_eval has exited successfully (staging.py), and its
lm_eval dies with the sweep, so a killed sweep leaves no half-written or late results.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from lm_eval_longmem.sweep.config import SweepConfig
from lm_eval_longmem.sweep.plan import Run, display_command, finished_results, lm_eval_command
from lm_eval_longmem.sweep.staging import discard, publish, staging_folder

LOG_DIR = ".sweep_logs"
# "interrupted": stopped by Ctrl-C or SIGTERM, not a failure of the run (rerunning resumes it).
STATUSES = ("done", "skipped", "failed", "interrupted")


@dataclasses.dataclass
class Outcome:
    run: Run
    status: str  # one of STATUSES
    seconds: float = 0.0
    message: str = ""
    results_file: Path | None = None
    log: Path | None = None


def cell_name(run: Run) -> str:
    """The run's folder name and its tasks (cut to 60 characters): names its log and staging folder."""
    tasks = "-".join(run.tasks)
    if len(tasks) > 60:
        tasks = tasks[:60]
    return f"{run.name}__{tasks}"


def log_path(run: Run) -> Path:
    return run.output_path / LOG_DIR / f"{cell_name(run)}.log"


def execute(
    runs: list[Run],
    config: SweepConfig,
    *,
    force: bool = False,
    verbose: bool = False,
    say: Callable[[str], None] = print,
) -> list[Outcome]:
    """Run (or skip) each run in turn, saying one line per run; stops early only on Ctrl-C or
    SIGTERM (a batch scheduler's time limit or `scancel`), which end it the same way."""
    with sigterm_as_interrupt():
        return _execute(runs, config, force, verbose, say)


@contextlib.contextmanager
def sigterm_as_interrupt():
    """While a sweep runs, SIGTERM acts as Ctrl-C: the running lm_eval is stopped, the summary
    is printed and rerunning the same command resumes. Only the main thread can own signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _execute(runs, config, force, verbose, say) -> list[Outcome]:
    outcomes: list[Outcome] = []
    total = len(runs)
    for i, run in enumerate(runs, 1):
        head = f"[{i}/{total}] {run.label}"
        done = None if force else finished_results(run)
        if done is not None:
            outcomes.append(Outcome(run, "skipped", results_file=done))
            say(f"{head}: skipped, already done ({done})")
            continue
        say(f"{head}: running")
        try:
            outcome = run_one(run, config, verbose=verbose)
        except KeyboardInterrupt:
            say(f"{head}: interrupted; rerun the same command to resume")
            outcomes.append(Outcome(run, "interrupted", message="interrupted"))
            raise SweepInterrupted(outcomes) from None
        outcomes.append(outcome)
        if outcome.status == "done":
            say(f"{head}: done in {_duration(outcome.seconds)} -> {outcome.results_file}")
        else:
            say(f"{head}: FAILED after {_duration(outcome.seconds)}: {outcome.message}  (log: {outcome.log})")
    return outcomes


class SweepInterrupted(Exception):
    """Ctrl-C (or SIGTERM) during a run; carries what was done so far for the summary."""

    def __init__(self, outcomes: list[Outcome]):
        super().__init__("interrupted")
        self.outcomes = outcomes


def final_redraw(line: str) -> str:
    """What a terminal would show of `line`: a progress bar redraws itself after "\r" hundreds of
    times per run, and the log keeps only its last state (one line, not one per update)."""
    ending = "\n" if line.endswith("\n") else ""
    shown = [part for part in line[: len(line) - len(ending)].rstrip("\r").split("\r") if part.strip()]
    return (shown[-1] if shown else "") + ending


def run_logged(command: list[str], log: Path, env: dict, verbose: bool) -> tuple[int, float]:
    """Run one child process with its output in `log` (and on stdout when `verbose`); a kill of
    this process ends the child too. Returns its exit code and the seconds it took."""
    start = time.monotonic()
    with open(log, "w", encoding="utf-8") as sink:
        sink.write(f"$ {display_command(command)}\n")
        sink.flush()
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, preexec_fn=ends_with_this_process()
        )
        # Lines end at "\n" only: a progress bar's "\r" redraws stay on one line (see final_redraw).
        output = io.TextIOWrapper(process.stdout, encoding="utf-8", errors="replace", newline="\n")
        try:
            for line in output:
                sink.write(final_redraw(line))
                if verbose:
                    sys.stdout.write(line)
            code = process.wait()
        except BaseException:
            process.kill()
            process.wait()
            raise
    return code, time.monotonic() - start


def run_one(run: Run, config: SweepConfig, verbose: bool = False) -> Outcome:
    staging = staging_folder(run.output_path, cell_name(run))
    try:
        outcome = _run_lm_eval(run, config, staging, verbose)
    finally:
        discard(staging)  # what publish() left: a failed or interrupted run's partial files
    return outcome


def _run_lm_eval(run: Run, config: SweepConfig, staging: Path, verbose: bool) -> Outcome:
    command = lm_eval_command(run, config, output_path=staging)
    log = log_path(run)
    log.parent.mkdir(parents=True, exist_ok=True)
    # The stock CLI finds `longmem` through the start-up hook: make sure it is on in the child.
    # Unbuffered, so the log shows where a long run is while it runs.
    env = {**os.environ, "LM_EVAL_LONGMEM_AUTOLOAD": "1", "PYTHONUNBUFFERED": "1"}
    code, seconds = run_logged(command, log, env, verbose)
    if code != 0:
        return Outcome(run, "failed", seconds, failure_reason(log.read_text(encoding="utf-8"), code), log=log)
    publish(staging, run.output_path)
    results = finished_results(run)
    if results is None:
        return Outcome(
            run,
            "failed",
            seconds,
            f"lm_eval exited normally but wrote no matching results file in {run.folder}",
            log=log,
        )
    return Outcome(run, "done", seconds, results_file=results, log=log)


def ends_with_this_process():
    """A `preexec_fn` that has the kernel kill the child when the sweep dies, even by SIGKILL
    (Linux; elsewhere None): else a killed sweep leaves its lm_eval running unseen, competing
    with the rerun for the machine and the --use_cache database."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the child only calls it
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def die_with_parent():
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the sweep died before the line above
            os._exit(1)

    return die_with_parent


_PR_SET_PDEATHSIG = 1
_OUR_MESSAGE = re.compile(r"^\S*(lm_eval|lm-eval-longmem): error: (.*)$")
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*)$")
_LOGGED_ERROR = re.compile(r"\b(?:ERROR|CRITICAL)\b:?\s*(?:\[[^\]]*\]\s*)?(.+)$")  # lm-eval's logging format
_PROGRESS_BAR = re.compile(r"\d+%\|.*\|")  # tqdm's: the last thing printed, never the reason


def failure_reason(output: str, code: int) -> str:
    """One line saying why a run failed: our error message, else the exception that ended it,
    else the last error lm-eval logged, else its last line that is not a progress bar."""
    lines = [line.rstrip() for line in output.splitlines() if line.strip() and not _PROGRESS_BAR.search(line)]
    for line in reversed(lines):
        match = _OUR_MESSAGE.match(line)
        if match:
            return _clip(match.group(2))
    for line in reversed(lines):
        if _EXCEPTION_LINE.match(line):
            return _clip(line)
    for line in reversed(lines):
        match = _LOGGED_ERROR.search(line)
        if match:
            return _clip(match.group(1))
    if code < 0 or code in (137, 139):
        return f"lm_eval was killed (exit status {code}; out of memory?)"
    return _clip(lines[-1]) if lines else f"lm_eval exited with status {code} and printed nothing"


def summary(outcomes: list[Outcome], planned: int) -> str:
    counts = {status: sum(o.status == status for o in outcomes) for status in STATUSES}
    lines = [
        f"sweep: {counts['done']} done, {counts['skipped']} skipped (already done), {counts['failed']} failed"
        + (f", {counts['interrupted']} interrupted" if counts["interrupted"] else "")
        + (f", {planned - len(outcomes)} not started" if len(outcomes) < planned else "")
        + f" of {planned} runs"
    ]
    for outcome in outcomes:
        if outcome.status == "failed":
            lines.append(
                f"  FAILED {outcome.run.label}: {outcome.message}" + (f"  (log: {outcome.log})" if outcome.log else "")
            )
    return "\n".join(lines)


def _clip(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"
