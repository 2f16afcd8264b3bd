"""One row of the study read back from its lm-eval results files: perplexity by length, the
downstream scores with their intervals, the training and evaluation lengths, exact attention.

Scores are on the study's scales: Needle, Mshots and RULER as accuracy in percent, LongBench
as lm-eval reports it, PPL at the longest evaluation length. A score that is a mean over
samples carries a 95% interval: Wilson's for an accuracy over a recorded number of samples,
else the one lm-eval's standard error gives (mean +- 1.96 stderr); perplexity is exp of a mean
over tokens, reported without one.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

from lm_eval_longmem.study.plan import StudyPlan

Z95 = 1.96
PPL_KEY = re.compile(r"^ppl@0*(\d+),none$")
# Methods the study's Table 1 lists under modified or approximate attention although their memory
# is not bounded (bounded-memory methods never attend to every token, so they are not exact either).
MODIFIED_ATTENTION = frozenset({"self_extend", "lm_infinite"})
APPROXIMATE_TRAINING = frozenset({"longlora"})  # LoRA with shifted sparse attention in training


@dataclasses.dataclass
class Score:
    value: float | None = None
    low: float | None = None
    high: float | None = None
    samples: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class RowScores:
    label: str
    kind: str  # "trained (recipe)" or "training-free (method)"
    method: str
    train_length: int | None
    eval_length: int | None
    exact: bool | None
    ppl_by_length: dict[int, float] = dataclasses.field(default_factory=dict)
    ppl_corpus: str | None = None  # as the perplexity task's protocol names it
    # corpus -> length -> perplexity, for the corpora after the first (suite.ppl.corpus as a list)
    ppl_other_corpora: dict[str, dict[int, float]] = dataclasses.field(default_factory=dict)
    ppl: Score = dataclasses.field(default_factory=Score)
    needle: Score = dataclasses.field(default_factory=Score)
    mshots: Score = dataclasses.field(default_factory=Score)
    longbench: Score = dataclasses.field(default_factory=Score)
    ruler: Score = dataclasses.field(default_factory=Score)
    ruler_by_length: dict[int, float] = dataclasses.field(default_factory=dict)
    # the study's Needle by length and by depth, and Mshots by number of shots (percent, 95% Wilson)
    needle_by_length: dict[int, Score] = dataclasses.field(default_factory=dict)
    needle_by_depth: dict[int, Score] = dataclasses.field(default_factory=dict)
    mshots_by_shots: dict[int, Score] = dataclasses.field(default_factory=dict)
    results_files: list[str] = dataclasses.field(default_factory=list)


def read_rows(plan: StudyPlan) -> list[RowScores]:
    training = {job.row.label: job for job in plan.training}
    rows = []
    for row in plan.study.rows:
        job = training.get(row.label)
        method = job.method if job is not None else row.method
        scores = RowScores(
            label=row.label,
            kind=f"trained ({row.recipe})" if job else "training-free",
            method=method or "",
            train_length=int(job.overrides["seq_len"]) if job else None,
            eval_length=_eval_length(plan.study.suite),
            exact=row.exact if row.exact is not None else _exact(method, job),
        )
        for evaluation in plan.evaluations:
            if evaluation.row.label != row.label:
                continue
            path = evaluation.results_file()
            if path is None:
                continue
            scores.results_files.append(str(path))
            data = json.loads(Path(path).read_text("utf-8"))
            if evaluation.part.second_corpus is not None:
                scores.ppl_other_corpora[evaluation.part.second_corpus] = _perplexity_by_length(data)
            else:
                _read_into(scores, data)
        rows.append(scores)
    return rows


def _eval_length(suite: dict) -> int | None:
    lengths = []
    for column, key in (("ppl", "lengths"), ("needle", "lengths"), ("ruler", "lengths")):
        lengths += list((suite.get(column) or {}).get(key) or [])
    if "longbench" in suite:
        lengths.append(suite["longbench"].get("length") or 0)
    return max(lengths) if lengths else None


def _exact(method: str | None, job) -> bool | None:
    if job is not None and getattr(job, "approach", None) in APPROXIMATE_TRAINING:
        return False
    if method in MODIFIED_ATTENTION:
        return False
    from lm_eval_longmem.errors import LongMemError
    from lm_eval_longmem.models.method_registry import get_method

    try:
        return not get_method(method or "vanilla").bounded_memory
    except LongMemError:  # a method this installation lacks: say nothing rather than guess
        return None


def _perplexity_by_length(data: dict[str, Any]) -> dict[int, float]:
    perplexity = (data.get("results") or {}).get("longmem_perplexity") or {}
    found = {}
    for key, value in perplexity.items():
        match = PPL_KEY.match(key)
        if match and isinstance(value, (int, float)) and math.isfinite(value):
            found[int(match.group(1))] = float(value)
    return found


def _read_into(scores: RowScores, data: dict[str, Any]) -> None:
    results = data.get("results") or {}
    if results.get("longmem_perplexity"):
        scores.ppl_by_length.update(_perplexity_by_length(data))
        protocol = (((data.get("configs") or {}).get("longmem_perplexity") or {}).get("metadata") or {}).get("protocol")
        if protocol:
            scores.ppl_corpus = protocol.get("corpus")
            if scores.train_length is None:
                scores.train_length = protocol.get("training_length")
        if scores.ppl_by_length:
            scores.ppl = Score(scores.ppl_by_length[max(scores.ppl_by_length)])
    samples = data.get("n-samples") or {}
    for task, field in (("longmem_passkey", "needle"), ("longmem_trec_manyshot", "mshots")):
        if task in results:
            count = (samples.get(task) or {}).get("effective")
            setattr(scores, field, _accuracy(results[task], "acc", count))
    if "longmem_passkey" in results:
        scores.needle_by_length, scores.needle_by_depth = _needle_breakdown(results["longmem_passkey"])
    if "longmem_trec_manyshot" in results:
        protocol = _protocol(data, "longmem_trec_manyshot")
        scores.mshots_by_shots = _mshots_by_shots(results["longmem_trec_manyshot"], protocol)
    if "longbench" in results or any(name.startswith("longbench_") for name in results):
        scores.longbench = _longbench(results)
    ruler_tasks = (data.get("group_subtasks") or {}).get("ruler") or []
    if ruler_tasks:
        scores.ruler_by_length = _ruler_by_length(results, ruler_tasks)
        if scores.ruler_by_length:
            scores.ruler = Score(sum(scores.ruler_by_length.values()) / len(scores.ruler_by_length))


def _protocol(data: dict[str, Any], task: str) -> dict[str, Any]:
    return (((data.get("configs") or {}).get(task) or {}).get("metadata") or {}).get("protocol") or {}


def _proportion(correct: float, samples: int) -> Score:
    """`correct` of `samples` in percent, with Wilson's 95% interval."""
    if samples < 1:
        return Score()
    accuracy = correct / samples
    low, high = wilson_interval(accuracy, samples)
    return Score(100 * accuracy, 100 * low, 100 * high, samples)


def _needle_breakdown(metrics: dict) -> tuple[dict[int, Score], dict[int, Score]]:
    """Accuracy by length and by depth from the passkey task's grid (accuracy[depth][length] over
    num_samples[depth][length] prompts): each cell's correct answers pooled across the other axis."""
    grid = metrics.get("grid,none")
    if not isinstance(grid, dict):
        return {}, {}
    lengths, depths = grid.get("lengths") or [], grid.get("depths") or []
    accuracy, counts = grid.get("accuracy") or [], grid.get("num_samples") or []
    cells = [  # (length, depth, correct, prompts)
        (length, depth, accuracy[row][column] * counts[row][column], counts[row][column])
        for row, depth in enumerate(depths)
        for column, length in enumerate(lengths)
        if _number(accuracy[row][column]) is not None and counts[row][column]
    ]

    def pooled(axis: int) -> dict[int, Score]:
        keys = lengths if axis == 0 else depths
        return {
            key: _proportion(sum(c[2] for c in cells if c[axis] == key), sum(c[3] for c in cells if c[axis] == key))
            for key in keys
        }

    return pooled(0), pooled(1)


def _mshots_by_shots(metrics: dict, protocol: dict) -> dict[int, Score]:
    """Accuracy per shot count (`acc@0008shots`) over that count's questions (the protocol's)."""
    found = {}
    for shots, questions in zip(protocol.get("shots") or [], protocol.get("questions_per_shot_count") or []):
        value = _number(metrics.get(f"acc@{shots:04d}shots,none"))
        if value is not None and questions:
            found[int(shots)] = _proportion(value * questions, int(questions))
    return found


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def wilson_interval(accuracy: float, samples: int) -> tuple[float, float]:
    """95% Wilson score interval of a proportion: unlike mean +- 1.96 stderr it stays inside
    [0, 1] and does not shrink to a point at 0% or 100% on a handful of samples."""
    z2 = Z95 * Z95
    centre = (accuracy + z2 / (2 * samples)) / (1 + z2 / samples)
    half = Z95 * math.sqrt(accuracy * (1 - accuracy) / samples + z2 / (4 * samples * samples)) / (1 + z2 / samples)
    return max(0.0, centre - half), min(1.0, centre + half)


def _accuracy(metrics: dict, name: str, samples: int | None) -> Score:
    """Accuracy in percent with a 95% interval: Wilson's over the samples (each right or wrong)
    when their count is recorded, else lm-eval's standard error."""
    value = _number(metrics.get(f"{name},none"))
    if value is None:
        return Score()
    if samples:
        low, high = wilson_interval(value, samples)
        return Score(100 * value, 100 * low, 100 * high, samples)
    stderr = _number(metrics.get(f"{name}_stderr,none"))
    if stderr is None:
        return Score(100 * value, samples=samples)
    low, high = max(0.0, value - Z95 * stderr), min(1.0, value + Z95 * stderr)
    return Score(100 * value, 100 * low, 100 * high, samples)


def _longbench(results: dict) -> Score:
    group = results.get("longbench") or {}
    value = _number(group.get("score,none"))
    if value is not None:
        stderr = _number(group.get("score_stderr,none"))
        return Score(value, *((value - Z95 * stderr, value + Z95 * stderr) if stderr is not None else (None, None)))
    subtask_scores = [
        v for name, m in results.items() if name.startswith("longbench_") for v in [_first_score(m)] if v is not None
    ]
    return Score(sum(subtask_scores) / len(subtask_scores)) if subtask_scores else Score()


def _first_score(metrics: dict) -> float | None:
    for key, value in metrics.items():
        if key.endswith(",none") and "_stderr" not in key and key != "alias,none":
            number = _number(value)
            if number is not None:
                return number
    return None


def _ruler_by_length(results: dict, tasks: list[str]) -> dict[int, float]:
    """Mean over RULER's tasks at each length (the study's per-length score), in percent."""
    by_length: dict[int, list[float]] = {}
    for task in tasks:
        for key, value in (results.get(task) or {}).items():
            match = re.fullmatch(r"(\d+),none", key)
            number = _number(value)
            if match and number is not None:
                by_length.setdefault(int(match.group(1)), []).append(number)
    return {length: 100 * sum(v) / len(v) for length, v in sorted(by_length.items())}
