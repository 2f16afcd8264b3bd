"""Running a study's plan: every trained row first (one training process each), then every
evaluation (one stock lm_eval process each, through the sweep's runner, so a run's files reach
its folder only once it has finished). What is already done is skipped, so the same command
resumes after a kill at any point: a killed training resumes from its newest checkpoint, a
killed evaluation leaves nothing in its results folder and runs again. A failed row does not
stop the others; its cells stay empty in the tables.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from lm_eval_longmem.study.plan import EvalJob, StudyPlan, TrainingJob
from lm_eval_longmem.study.schema import StudyConfigError
from lm_eval_longmem.sweep.execute import (
    failure_reason,
    run_logged,
    run_one,
    sigterm_as_interrupt,
)
from lm_eval_longmem.sweep.plan import display_command

LOG_DIR = ".study_logs"


@dataclasses.dataclass
class StepOutcome:
    label: str
    status: str  # done | skipped | failed | interrupted | not trained
    seconds: float = 0.0
    message: str = ""


class StudyInterrupted(Exception):
    def __init__(self, outcomes: list[StepOutcome]):
        super().__init__("interrupted")
        self.outcomes = outcomes


def check_launchers(plan: StudyPlan) -> None:
    """A launcher whose program is not installed cannot start: say so before anything runs."""
    study = plan.study
    for key, launcher in (("launcher.train", study.train_launcher), ("launcher.eval", study.eval_launcher)):
        if key == "launcher.train" and not plan.training:
            continue
        if launcher and find_program(launcher[0]) is None:
            raise StudyConfigError(
                f"{study.source}: {key} starts with {launcher[0]!r}, which is not installed here (not on PATH nor "
                f"beside this Python). Install it (accelerate: pip install accelerate), fix the launcher, or drop it "
                "to run in this process's Python."
            )


def find_program(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def execute(
    plan: StudyPlan, *, force: bool = False, verbose: bool = False, say: Callable[[str], None] = print
) -> list[StepOutcome]:
    with sigterm_as_interrupt():
        return _execute(plan, force, verbose, say)


def _execute(plan: StudyPlan, force: bool, verbose: bool, say) -> list[StepOutcome]:
    outcomes: list[StepOutcome] = []
    total = len(plan.training) + len(plan.evaluations)
    step = 0
    failed_rows = set()
    for job in plan.training:
        step += 1
        head = f"[{step}/{total}] train {job.row.label} ({job.row.recipe}, {job.steps} steps)"
        if not force and job.done():
            outcomes.append(StepOutcome(job.row.label, "skipped"))
            say(f"{head}: skipped, already trained ({job.export})")
            continue
        say(f"{head}: running")
        try:
            outcome = train_one(job, plan, verbose)
        except KeyboardInterrupt:
            say(f"{head}: interrupted; rerun the same command to resume")
            outcomes.append(StepOutcome(job.row.label, "interrupted"))
            raise StudyInterrupted(outcomes) from None
        outcomes.append(outcome)
        if outcome.status == "failed":
            failed_rows.add(job.row.label)
            say(f"{head}: FAILED after {outcome.seconds:.0f} s: {outcome.message}")
        else:
            say(f"{head}: done in {outcome.seconds:.0f} s -> {job.export}")
    for job in plan.evaluations:
        step += 1
        head = f"[{step}/{total}] evaluate {job.label}"
        if job.row.label in failed_rows:
            outcomes.append(StepOutcome(job.label, "not trained"))
            say(f"{head}: not run, its training failed")
            continue
        done = None if force else job.results_file()
        if done is not None:
            outcomes.append(StepOutcome(job.label, "skipped"))
            say(f"{head}: skipped, already done ({done})")
            continue
        say(f"{head}: running")
        try:
            result = run_one(job.run(), plan.sweep_config, verbose=verbose)
        except KeyboardInterrupt:
            say(f"{head}: interrupted; rerun the same command to resume")
            outcomes.append(StepOutcome(job.label, "interrupted"))
            raise StudyInterrupted(outcomes) from None
        outcomes.append(StepOutcome(job.label, result.status, result.seconds, result.message))
        if result.status == "done":
            say(f"{head}: done in {result.seconds:.0f} s -> {result.results_file}")
        else:
            say(f"{head}: FAILED after {result.seconds:.0f} s: {result.message}  (log: {result.log})")
    return outcomes


def train_one(job: TrainingJob, plan: StudyPlan, verbose: bool) -> StepOutcome:
    """One training process, its output kept in <output_path>/.study_logs/train-<label>.log."""
    command = job.command(plan.study.train_launcher)
    log = plan.study.output_path / LOG_DIR / f"train-{job.row.label}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    code, seconds = run_logged(command, log, {**os.environ, "PYTHONUNBUFFERED": "1"}, verbose)
    if code != 0 or not job.done():
        reason = failure_reason(log.read_text(encoding="utf-8"), code) if code else "no export at the last step"
        return StepOutcome(job.row.label, "failed", seconds, f"{reason}  (log: {log})")
    return StepOutcome(job.row.label, "done", seconds)


def summary(outcomes: list[StepOutcome], planned: int) -> str:
    counts = {s: sum(o.status == s for o in outcomes) for s in ("done", "skipped", "failed", "interrupted")}
    line = (
        f"study: {counts['done']} done, {counts['skipped']} skipped (already done), {counts['failed']} failed"
        + (f", {counts['interrupted']} interrupted" if counts["interrupted"] else "")
        + (f", {planned - len(outcomes)} not started" if len(outcomes) < planned else "")
        + f" of {planned} steps"
    )
    failures = [f"  FAILED {o.label}: {o.message}" for o in outcomes if o.status == "failed"]
    return "\n".join([line, *failures])


def evaluation_command_line(job: EvalJob, plan: StudyPlan) -> str:
    return display_command(plan.command(job))
