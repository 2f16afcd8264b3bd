"""From a `Study` to its steps: one training command per trained row, then one lm_eval run per
row and suite part, each with its folder, its command and whether it is already done.

A trained row is done when its export records the planned number of steps and the same recipe
(the training module writes that record last); an interrupted one resumes from its own newest checkpoint
when its command runs again. An evaluation is done when its folder holds a results file that
records it, as `sweep` decides (sweep/plan.py): same model args, tasks, limit and options.
Layout under the study's output_path:

    train/<label>/             the training run (checkpoints/, export/, metrics.jsonl)
    eval/<label>/<run name>/   lm-eval's results files for that row
    tables/                    Table 1, Table 2, RULER by length, Figure 2
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from lm_eval_longmem.study.budget import check_trained_row, override_words, training_folder, training_overrides
from lm_eval_longmem.study.schema import Row, Study, StudyConfigError
from lm_eval_longmem.study.suite import EvalPart, check_task_options, eval_parts
from lm_eval_longmem.sweep.config import SweepConfig
from lm_eval_longmem.sweep.plan import Run, finished_results, lm_eval_command

TRAINING_MODULE = "lm_eval_longmem_training"
EXPORT = "export"


@dataclasses.dataclass(frozen=True)
class TrainingJob:
    row: Row
    overrides: dict[str, Any]
    method: str  # the recipe's method, recorded in the export
    method_args: dict[str, Any]
    approach: str
    folder: Path
    fingerprint: dict[str, Any]  # the recipe keys that decide what is trained (as JSON reads them)

    @property
    def export(self) -> Path:
        return self.folder / EXPORT

    @property
    def steps(self) -> int:
        return int(self.overrides["max_steps"])

    def done(self) -> bool:
        """Exported at the planned step by this very recipe (a changed recipe key trains again;
        the training module then says how to start over if its checkpoints cannot resume)."""
        from lm_eval_longmem_training.approaches.base import TRAINING_RECORD_KEY
        from lm_eval_longmem_training.recipes.recipe import RUN_CONTROL_KEYS

        try:
            record = json.loads((self.export / "config.json").read_text("utf-8"))[TRAINING_RECORD_KEY]
            recorded = {k: v for k, v in record["recipe_values"].items() if k not in RUN_CONTROL_KEYS}
            return record["steps"] == self.steps and recorded == self.fingerprint
        except (OSError, ValueError, KeyError, TypeError):
            return False

    def command(self, launcher: tuple[str, ...]) -> list[str]:
        prefix = [*launcher, "-m", TRAINING_MODULE] if launcher else [sys.executable, "-m", TRAINING_MODULE]
        return [*prefix, self.row.recipe, *override_words(self.overrides)]

    def display(self, launcher: tuple[str, ...]) -> str:
        """The command as one would type it (`lm-eval-longmem train RECIPE ...` for this Python's module)."""
        command = self.command(launcher)
        if command[:3] == [sys.executable, "-m", TRAINING_MODULE]:
            command = ["lm-eval-longmem", "train", *command[3:]]
        return shlex.join(command)


@dataclasses.dataclass(frozen=True)
class EvalJob:
    row: Row
    part: EvalPart
    model_args: dict[str, Any]
    output_path: Path
    limit: float | None = None

    @property
    def label(self) -> str:
        return f"{self.row.label} [{','.join(self.part.columns)}]"

    def run(self) -> Run:
        """The sweep run (its folder name is lm-eval's, read from the model: a trained row's only
        once its export exists)."""
        from lm_eval_longmem.harness.run_name import run_folder_name

        name = run_folder_name(self.model_args)
        return Run(name, self.model_args, self.part.tasks, self.part.metadata, self.limit, self.output_path)

    def results_file(self) -> Path | None:
        if self.trained and not Path(self.model_args["pretrained"]).exists():
            return None  # not trained yet
        return finished_results(self.run())

    @property
    def trained(self) -> bool:
        return self.row.trained


@dataclasses.dataclass(frozen=True)
class StudyPlan:
    study: Study
    parts: list[EvalPart]
    training: list[TrainingJob]
    evaluations: list[EvalJob]
    sweep_config: SweepConfig  # how lm_eval is called: launcher, device, batch size, limit

    def command(self, job: EvalJob) -> list[str]:
        placeholder = Run("<run>", job.model_args, job.part.tasks, job.part.metadata, job.limit, job.output_path)
        return lm_eval_command(placeholder, self.sweep_config)


def plan_study(study: Study, without: tuple[str, ...] = ()) -> StudyPlan:
    """Every step, checked before anything runs: recipes with the budget applied (by the training
    module), training-free methods and their arguments (by the wrapper), the suite's options (by
    the tasks). `without`: suite columns left out."""
    unknown = sorted(set(without) - set(study.suite))
    if unknown:
        raise StudyConfigError(
            f"--without {','.join(unknown)}: not in this study's suite ({', '.join(study.suite) or 'empty'})"
        )
    study = dataclasses.replace(study, suite={k: v for k, v in study.suite.items() if k not in without})
    parts = eval_parts(study)
    if not parts:
        raise StudyConfigError(f"{study.source}: no suite column left to evaluate")
    check_task_options(study, parts)
    training = [_training_job(study, row) for row in study.rows if row.trained]
    _check_same_data(study, training)
    by_label = {job.row.label: job for job in training}
    evaluations = []
    for row in study.rows:
        for part in parts:
            model_args = _model_args(study, row, by_label.get(row.label), part)
            folder = study.output_path / "eval" / row.label
            evaluations.append(EvalJob(row, part, model_args, folder, study.evaluation.limit))
    for job in evaluations:
        if not job.trained:
            _check_method(study, job)
    evaluation = study.evaluation
    config = SweepConfig(
        tasks=[],
        output_path=str(study.output_path / "eval"),
        limit=evaluation.limit,
        batch_size=evaluation.batch_size,
        device=evaluation.device,
        lm_eval_args=list(evaluation.lm_eval_args),
        launcher=list(study.eval_launcher),
    )
    return StudyPlan(study, parts, training, evaluations, config)


def _training_job(study: Study, row: Row) -> TrainingJob:
    recipe = check_trained_row(study, row)
    overrides = training_overrides(study, row)
    fingerprint = json.loads(json.dumps(recipe.fingerprint()))
    return TrainingJob(
        row,
        overrides,
        recipe.method,
        dict(recipe.method_args),
        recipe.approach,
        training_folder(study, row),
        fingerprint,
    )


def _check_same_data(study: Study, jobs: list[TrainingJob]) -> None:
    """Without budget.data every recipe keeps its own data: they must all name the same."""
    if study.budget is None or study.budget.data is not None or not jobs:
        return
    from lm_eval_longmem_training.recipes.loading import load_recipe

    sources = {job.row.label: load_recipe(job.row.recipe).data for job in jobs}
    if len(set(sources.values())) > 1:
        listed = ", ".join(f"{label}: {data}" for label, data in sources.items())
        raise StudyConfigError(
            f"{study.source}: the trained rows' recipes read different data ({listed}); set budget.data so every "
            "row trains on the same text"
        )


def _model_args(study: Study, row: Row, training: TrainingJob | None, part: EvalPart) -> dict[str, Any]:
    shared = {**study.evaluation.model_args, **part.model_args}
    if training is not None:
        base = {k: v for k, v in study.base.items() if k != "pretrained"}
        return {**base, "pretrained": str(training.export), **shared, **row.args}
    return {**study.base, **shared, "method": row.method, **row.args}


def _check_method(study: Study, job: EvalJob) -> None:
    """The wrapper's own checks of the method, its arguments and any other model argument (what
    `--model longmem` says at start-up), the suite part's own (LongBench's `max_length` and
    `overlength=middle`) included."""
    from lm_eval_longmem.errors import LongMemError
    from lm_eval_longmem.harness.preflight import check_method_arguments
    from lm_eval_longmem.harness.run_name import run_folder_name

    try:
        check_method_arguments(job.model_args)
        run_folder_name(job.model_args)
    except LongMemError as err:
        raise StudyConfigError(f"{study.source}: row {job.row.label}: {err}") from None
