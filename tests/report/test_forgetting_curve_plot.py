"""Reading lm-eval results files and drawing forgetting curves, on a synthetic results file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lm_eval_longmem.report.forgetting_curve_plot import (
    memory_regions,
    memory_summary,
    plot_forgetting_curves,
)
from lm_eval_longmem.report.results_files import (
    CurveRun,
    find_results_file,
    load_curve_run,
)

PNG_MAGIC = b"\x89PNG"
# Copy is perfect up to 64, then decays to LM level by 1024; LM stays at 0.3.
COPY_BY_LENGTH = {16: 1.0, 32: 1.0, 64: 1.0, 128: 0.8, 256: 0.5, 1024: 0.3}


def accuracy_results(model_args: dict | str = "pretrained=foo,method=yarn,factor=4") -> dict:
    points = [
        {
            "length": length,
            "copy_mean": copy,
            "copy_std": 0.0 if copy == 1.0 else 0.05,
            "lm_mean": 0.3,
            "lm_std": 0.1,
            "num_samples": 10,
        }
        for length, copy in COPY_BY_LENGTH.items()
    ]
    return {
        "results": {
            "forgetting_curve": {
                "alias": "forgetting_curve",
                "fine_memory_length,none": 64,
                "coarse_memory_length,none": 256,
                "copy_acc@0064,none": 1.0,
                "curve,none": {
                    "mode": "accuracy",
                    "points": points,
                    "fine_memory_length": 64,
                    "coarse_memory_length": 256,
                    "fine_is_lower_bound": False,
                    "coarse_is_lower_bound": False,
                },
            }
        },
        "configs": {
            "forgetting_curve": {
                "metadata": {
                    "protocol": {
                        "training_length": 512,
                        "context_length": 8192,
                        "lengths": list(COPY_BY_LENGTH),
                    }
                }
            }
        },
        "config": {
            "model": "longmem",
            "model_args": model_args,
            "longmem_method": "yarn",
            "longmem_method_args": {"factor": 4},
            "longmem_pretrained": "SmolLM2-135M-Instruct",
            "longmem_training_length": 8192,
        },
    }


def reduced_results() -> dict:
    points = [
        {
            "length": length,
            "copy_exact": 1.0 if copy == 1.0 else 0.0,
            "lm_exact": 0.0,
            "copy_nll": 0.1,
            "lm_nll": 3.0,
            "num_samples": 10,
        }
        for length, copy in COPY_BY_LENGTH.items()
    ]
    curve = {
        "mode": "reduced",
        "points": points,
        "fine_memory_length": None,
        "coarse_memory_length": None,
        "fine_is_lower_bound": False,
        "coarse_is_lower_bound": False,
    }
    return {
        "results": {"forgetting_curve": {"alias": "forgetting_curve", "curve,none": curve}},
        "configs": {"forgetting_curve": {"metadata": {"protocol": {"training_length": 512}}}},
        "config": {"model": "hf", "model_args": "pretrained=gpt2"},
    }


def write_json(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def make_run(lengths: list[int], fine: int | None, coarse: int | None, mode: str = "accuracy") -> CurveRun:
    return CurveRun(
        label="hand-made",
        mode=mode,
        points=tuple({"length": length} for length in lengths),
        fine_memory_length=fine,
        coarse_memory_length=coarse,
        fine_is_lower_bound=False,
        coarse_is_lower_bound=False,
        training_length=None,
        source="",
    )


def test_find_results_file_picks_newest_in_directory(tmp_path: Path) -> None:
    older = write_json(tmp_path / "model_a" / "results_2024-01-01.json", accuracy_results())
    newer = write_json(tmp_path / "model_b" / "results_2024-01-02.json", accuracy_results())
    os.utime(older, (1_000_000, 1_000_000))
    os.utime(newer, (2_000_000, 2_000_000))

    assert find_results_file(tmp_path) == newer
    assert find_results_file(older) == older


def test_find_results_file_without_results_raises(tmp_path: Path) -> None:
    (tmp_path / "samples_forgetting_curve.jsonl").write_text("")
    with pytest.raises(FileNotFoundError, match="results_"):
        find_results_file(tmp_path)


def test_load_curve_run_round_trips(tmp_path: Path) -> None:
    path = write_json(tmp_path / "results_1.json", accuracy_results())
    run = load_curve_run(path)

    assert run.label == "SmolLM2-135M-Instruct · yarn (factor=4)"
    assert run.mode == "accuracy"
    assert [point["length"] for point in run.points] == list(COPY_BY_LENGTH)
    assert [point["copy_mean"] for point in run.points] == list(COPY_BY_LENGTH.values())
    assert run.fine_memory_length == 64
    assert run.coarse_memory_length == 256
    assert not run.fine_is_lower_bound and not run.coarse_is_lower_bound
    assert run.training_length == 8192
    assert run.source == str(path)


def test_load_curve_run_falls_back_to_model_args_and_protocol(tmp_path: Path) -> None:
    data = reduced_results()
    run = load_curve_run(write_json(tmp_path / "results_1.json", data))
    assert run.label == "gpt2 · hf"
    assert run.training_length == 512
    assert run.mode == "reduced"
    assert run.fine_memory_length is None

    data["config"]["model_args"] = {}
    assert load_curve_run(write_json(tmp_path / "results_2.json", data)).label == "hf · hf"


def test_load_curve_run_missing_task_names_tasks_present(tmp_path: Path) -> None:
    data = accuracy_results()
    data["results"] = {"lambada": {"acc,none": 0.5}, "piqa": {"acc,none": 0.6}}
    path = write_json(tmp_path / "results_1.json", data)
    with pytest.raises(ValueError, match="forgetting_curve.*lambada, piqa"):
        load_curve_run(path)


def test_load_curve_run_missing_curve_metric_raises(tmp_path: Path) -> None:
    data = accuracy_results()
    del data["results"]["forgetting_curve"]["curve,none"]
    path = write_json(tmp_path / "results_1.json", data)
    with pytest.raises(ValueError, match="curve,none"):
        load_curve_run(path)


@pytest.mark.parametrize(
    ("fine", "coarse", "expected"),
    [
        (
            64,
            256,
            [("fine-grained", 16, 64), ("coarse-grained", 64, 256), ("amnesia", 256, 1024)],
        ),
        (0, 256, [("coarse-grained", 16, 256), ("amnesia", 256, 1024)]),
        (0, 0, [("amnesia", 16, 1024)]),
        (64, 1024, [("fine-grained", 16, 64), ("coarse-grained", 64, 1024)]),
        (1024, 1024, [("fine-grained", 16, 1024)]),
    ],
)
def test_memory_regions(fine: int, coarse: int, expected: list) -> None:
    run = make_run(list(COPY_BY_LENGTH), fine, coarse)
    assert memory_regions(run) == expected


def test_memory_regions_reduced_mode_has_none() -> None:
    assert memory_regions(make_run([16, 1024], None, None, mode="reduced")) == []


def test_memory_summary_marks_lower_bounds(tmp_path: Path) -> None:
    data = accuracy_results()
    data["results"]["forgetting_curve"]["curve,none"]["coarse_is_lower_bound"] = True
    run = load_curve_run(write_json(tmp_path / "results_1.json", data))
    assert memory_summary(run) == "fine 64, coarse >256"


def test_plot_one_run(tmp_path: Path) -> None:
    run = load_curve_run(write_json(tmp_path / "results_1.json", accuracy_results()))
    output = plot_forgetting_curves([run], tmp_path / "plots" / "one.png", training_length=512)
    assert output.read_bytes().startswith(PNG_MAGIC)


def test_plot_two_runs(tmp_path: Path) -> None:
    first = load_curve_run(write_json(tmp_path / "a" / "results_1.json", accuracy_results()))
    second_data = accuracy_results(model_args={"method": "vanilla"})
    second_data["config"].update(longmem_method="vanilla", longmem_method_args={})
    second = load_curve_run(write_json(tmp_path / "b" / "results_1.json", second_data))
    output = plot_forgetting_curves([first, second], tmp_path / "two.png", title="compare")
    assert output.read_bytes().startswith(PNG_MAGIC)


def test_plot_reduced_run(tmp_path: Path) -> None:
    run = load_curve_run(write_json(tmp_path / "results_1.json", reduced_results()))
    assert memory_summary(run) == "reduced metric: exact copy 64, no memory lengths"  # as fc_exact_copy
    output = plot_forgetting_curves([run], tmp_path / "reduced.png", log_x=False)
    assert output.read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize("value", ["0", "-5", "abc", "1.5"])
def test_a_training_length_that_is_no_length_is_a_wrong_command_line(value, tmp_path, capsys):
    """0 and -5 were drawn as no mark at all, without a word."""
    from lm_eval_longmem.cli import main

    with pytest.raises(SystemExit) as ended:
        main(["plot", str(tmp_path), "--training-length", value, "-o", str(tmp_path / "a.png")])
    err = capsys.readouterr().err
    assert ended.value.code == 2 and f"argument --training-length: '{value}' is not a training length" in err


def test_log_and_linear_axis_together_is_a_wrong_command_line(tmp_path, capsys):
    """argparse kept the last of the two without a word."""
    from lm_eval_longmem.cli import main

    with pytest.raises(SystemExit) as ended:
        main(["plot", str(tmp_path), "--log-x", "--linear-x", "-o", str(tmp_path / "a.png")])
    assert ended.value.code == 2
    assert "argument --linear-x: not allowed with argument --log-x" in capsys.readouterr().err
