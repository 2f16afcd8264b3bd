"""Results files shaped exactly as lm-eval 0.4.13 writes them, and the leaderboard table read back.

`lm_eval_results` builds the JSON a real `lm_eval --model longmem|hf ... --output_path` run
writes (the keys and value types are those of real files: "metric,filter" names, stderr
"N/A" where lm-eval has none, `config` with the wrapper's `longmem_*` fields, `date` as
epoch seconds), so the report tests need no model; the `*_metrics` builders give each task's
entry under "results".
"""

from __future__ import annotations

import json
from pathlib import Path


def forgetting_metrics(lengths, copy, fine, coarse, fine_bound=False, coarse_bound=False) -> dict:
    width = len(str(max(lengths)))
    metrics = {"name": "forgetting_curve", "alias": "forgetting_curve", "sample_len": 2 * len(lengths)}
    points = []
    for length, acc in zip(lengths, copy):
        tag = f"{length:0{width}d}"
        metrics.update(
            {
                f"copy_acc@{tag},none": acc,
                f"copy_acc@{tag}_stderr,none": 0.01,
                f"lm_acc@{tag},none": 0.2,
                f"lm_acc@{tag}_stderr,none": 0.02,
            }
        )
        points.append(
            {"length": length, "copy_mean": acc, "copy_std": 0.05, "lm_mean": 0.2, "lm_std": 0.1, "num_samples": 2}
        )
    metrics.update(
        {
            "fine_memory_length,none": fine,
            "fine_memory_length_stderr,none": "N/A",
            "coarse_memory_length,none": coarse,
            "coarse_memory_length_stderr,none": "N/A",
            "curve,none": {
                "mode": "accuracy",
                "points": points,
                "fine_memory_length": fine,
                "coarse_memory_length": coarse,
                "fine_is_lower_bound": fine_bound,
                "coarse_is_lower_bound": coarse_bound,
            },
            "curve_stderr,none": "N/A",
        }
    )
    return metrics


def reduced_forgetting_metrics(copy_exact: dict[int, float], cut: tuple[int, ...] = ()) -> dict:
    """`forgetting_curve` of a `--model hf` run, keyed and valued as in a real file: the reduced
    metric per length (`copy_exact@L`, ...) and its curve, `cut` lengths without numbers."""
    width = len(str(max([*copy_exact, *cut])))
    metrics = {"name": "forgetting_curve", "alias": "forgetting_curve", "sample_len": 2 * (len(copy_exact) + len(cut))}
    points = []
    for length, exact in copy_exact.items():
        values = {"copy_exact": exact, "lm_exact": 0.0, "copy_nll": 0.5 * (1 - exact), "lm_nll": 4.0}
        for field, value in values.items():
            metrics.update({f"{field}@{length:0{width}d},none": value, f"{field}@{length:0{width}d}_stderr,none": 0.0})
        points.append(
            {
                "length": length,
                **values,
                "num_samples": 2,
                "input_tokens": 2 * length + 1,
                "beyond_training_length": False,
                "beyond_context_length": False,
                "status": "ok",
            }
        )
    failed = [
        {
            "length": length,
            "input_tokens": 2 * length + 1,
            "beyond_training_length": False,
            "beyond_context_length": True,
            "status": "cut_by_model",
            "failed_samples": 2,
        }
        for length in cut
    ]
    metrics["curve,none"] = {
        "mode": "reduced",
        "points": points,
        "lengths": points + failed,
        "failed_lengths": list(cut),
        "fine_memory_length": None,
        "coarse_memory_length": None,
        "fine_is_lower_bound": False,
        "coarse_is_lower_bound": False,
    }
    metrics["curve_stderr,none"] = "N/A"
    return metrics


def passkey_metrics(by_length: dict[int, float]) -> dict:
    width = len(str(max(by_length)))
    overall = sum(by_length.values()) / len(by_length)
    metrics = {
        "name": "longmem_passkey",
        "alias": "longmem_passkey",
        "acc,none": overall,
        "acc_stderr,none": 0.1,
        "acc@depth000,none": overall,
        "acc@depth000_stderr,none": 0.1,
    }
    for length, acc in by_length.items():
        metrics[f"acc@len{length:0{width}d},none"] = acc
        metrics[f"acc@len{length:0{width}d}_stderr,none"] = 0.1
    metrics["grid,none"] = {
        "lengths": list(by_length),
        "depths": [0],
        "length_unit": "tokens",
        "accuracy": [list(by_length.values())],
        "num_samples": [[2] * len(by_length)],
        "overall": overall,
    }
    metrics["grid_stderr,none"] = "N/A"
    return metrics


def trec_metrics(by_shots: dict[int, float]) -> dict:
    metrics = {
        "name": "longmem_trec_manyshot",
        "alias": "longmem_trec_manyshot",
        "acc,none": sum(by_shots.values()) / len(by_shots),
        "acc_stderr,none": 0.05,
    }
    for shots, acc in by_shots.items():
        metrics[f"acc@{shots:04d}shots,none"] = acc
        metrics[f"acc@{shots:04d}shots_stderr,none"] = "N/A" if shots == 1 else 0.08
    return metrics


def topicret_metrics(first, second, third) -> dict:
    metrics = {
        "name": "longmem_topicret",
        "alias": "longmem_topicret",
        "skipped_documents,none": 0,
        "skipped_documents_stderr,none": "N/A",
        "truncated_documents,none": 0,
        "truncated_documents_stderr,none": "N/A",
        "mean_acc,none": (first + second + third) / 3,
        "mean_acc_stderr,none": "N/A",
    }
    for which, acc in (("first", first), ("second", second), ("third", third)):
        metrics[f"{which}_topic_acc,none"] = acc
        metrics[f"{which}_topic_acc_stderr,none"] = 0.1
    return metrics


def perplexity_metrics(by_length: dict[int, float], with_curve: bool = True) -> dict:
    width = len(str(max(by_length)))
    metrics = {"name": "longmem_perplexity", "alias": "longmem_perplexity"}
    for length, ppl in by_length.items():
        metrics[f"ppl@{length:0{width}d},none"] = ppl
        metrics[f"ppl@{length:0{width}d}_stderr,none"] = "N/A"
    if with_curve:
        positions = [1, 2, 4, 8, 16, 32, 64, 128]
        metrics["loss_curve,none"] = {"positions": positions, "loss": [4.0 / (1 + p) ** 0.2 for p in positions]}
        metrics["loss_curve_stderr,none"] = "N/A"
    return metrics


def booksum_metrics(overall_by_budget: dict[int, float], cut: dict[int, int] | None = None) -> dict:
    """longmem_booksum's metrics as lm-eval writes them: R1/R2/RL/overall (x 100) and cut books per budget."""
    width = len(str(max(overall_by_budget)))
    metrics = {"name": "longmem_booksum", "alias": "longmem_booksum"}
    for budget, value in overall_by_budget.items():
        tag = f"len{budget:0{width}d}"
        scores = {"rouge1": 2 * value, "rouge2": value / 2, "rougeL": value, "overall": value}
        scores["cut_books"] = (cut or {}).get(budget, 0)
        for name, number in scores.items():
            metrics[f"{name}@{tag},none"] = number
            metrics[f"{name}@{tag}_stderr,none"] = "N/A"
    return metrics


def lm_eval_results(
    tasks: dict[str, dict],
    method="vanilla",
    method_args=None,
    model_args=None,
    pretrained="SmolLM2-135M-Instruct",
    model="longmem",
    date=1795458565.0,
) -> dict:
    """A results file as lm-eval 0.4.13 writes it (the keys a real file has)."""
    method_args = method_args or {}
    if model_args is None:
        model_args = {"method": method, **{k: str(v) for k, v in method_args.items()}}
    config = {
        "model": model,
        "model_args": model_args,
        "model_num_parameters": 134515008,
        "model_dtype": "torch.float32",
        "model_revision": "main",
        "model_sha": "",
        "batch_size": 1,
        "batch_sizes": [],
        "device": "cpu",
        "use_cache": None,
        "limit": None,
        "bootstrap_iters": 100000,
        "gen_kwargs": {},
        "random_seed": 0,
        "numpy_seed": 1234,
        "torch_seed": 1234,
        "fewshot_seed": 1234,
    }
    if model == "longmem":
        config.update(
            {
                "longmem_method": method,
                "longmem_method_args": method_args,
                "longmem_pretrained": pretrained,
                "longmem_training_length": 8192,
                "longmem_context_length": 8192,
                "longmem_scoring": "split",
                "longmem_reuse_prefix": True,
            }
        )
    return {
        "results": tasks,
        "group_subtasks": {},
        "configs": {task: {"task": task, "metadata": {"version": 1.0}} for task in tasks},
        "versions": {task: 1.0 for task in tasks},
        "n-shot": {task: 0 for task in tasks},
        "higher_is_better": {task: {} for task in tasks},
        "n-samples": {task: {"original": 8, "effective": 8} for task in tasks},
        "config": config,
        "git_hash": "a001feb",
        "date": date,
        "model_source": model,
        "model_name": pretrained if model != "longmem" else "qdpv68r5",
        "model_name_sanitized": "qdpv68r5",
        "total_evaluation_time_seconds": "12.5",
    }


def write(path: Path, data: dict | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def table_rows(markdown: str) -> list[dict[str, str]]:
    lines = [line for line in markdown.strip().splitlines()]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert set(lines[1].replace("|", "").replace(":", "")) == {"-"}
    return [dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")))) for line in lines[2:]]
