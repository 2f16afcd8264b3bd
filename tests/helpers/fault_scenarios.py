"""The runs the fault-injection tests kill and check: a scoring run long enough to be killed in
the middle, with a private cache; a sweep whose runs are fake_lm_eval.py processes; and what a
run that ended (or died) left behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from lm_eval_longmem.sweep.config import build_config
from lm_eval_longmem.sweep.plan import plan_runs, records
from lm_eval_longmem.sweep.staging import STAGING_DIR
from tests.helpers.cli_runs import BIN

FAKE_LM_EVAL = Path(__file__).with_name("fake_lm_eval.py")

# --- lm_eval --use_cache ---------------------------------------------------------------------------


def private_cache_env(root: Path) -> dict:
    """An environment whose lm-eval-longmem cache is `root`, seeded with the real task index
    cache when there is one (a cold parse of lm-eval's 14,000 YAMLs costs ~10 s)."""
    from lm_eval_longmem.harness import task_index_cache

    real = task_index_cache.open_store().cache_file  # this lm-eval install's, in the real cache
    (root / "task_index").mkdir(parents=True, exist_ok=True)
    if real.is_file():
        shutil.copy(real, root / "task_index" / real.name)
    return {**os.environ, "LM_EVAL_LONGMEM_CACHE": str(root), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def scoring_command(model_dir, corpus_file, output: Path, use_cache: Path | None, samples: int = 150) -> list[str]:
    """900 scoring requests with samples=150: long enough (~2 s) to be killed in the middle."""
    command = [
        str(BIN / "lm_eval"),
        "--model",
        "longmem",
        "--model_args",
        f"pretrained={model_dir},method=vanilla",
        "--tasks",
        "forgetting_curve",
        "--device",
        "cpu",
        "--metadata",
        f"fc_corpus={corpus_file}",
        "fc_max_length=60",
        "fc_points=3",
        f"fc_samples={samples}",
        "fc_seed=3",
        "--output_path",
        str(output),
    ]
    return command + (["--use_cache", str(use_cache)] if use_cache else [])


def run_to_end(command: list[str], env: dict) -> subprocess.CompletedProcess:
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def curve_results(output: Path) -> dict:
    """The forgetting curve's metrics of the newest results file under `output`."""
    newest = max(output.rglob("results_*.json"), key=lambda p: p.stat().st_mtime)
    return json.loads(newest.read_text())["results"]["forgetting_curve"]


# --- sweep -----------------------------------------------------------------------------------------

SWEEP_DRIVER = """
import sys
from lm_eval_longmem.cli import sweep
from lm_eval_longmem.sweep import execute, plan
real = plan.lm_eval_command
execute.lm_eval_command = lambda run, config, **options: [sys.executable, {fake!r}, *real(run, config, **options)[3:]]
sys.exit(sweep.main([{sweep_file!r}]))
"""

SWEEP_METHODS = ["vanilla", {"name": "yarn", "args": {"factor": 2}}, {"name": "yarn", "args": {"factor": 4}}]


def fake_sweep(tmp_path: Path, methods=SWEEP_METHODS):
    """(command, env, runs) of a sweep whose runs are fake_lm_eval.py processes."""
    raw = {
        "output_path": str(tmp_path / "out"),
        "tasks": ["forgetting_curve"],
        "methods": methods,
        "metadata": {"fc_max_length": 64},
    }
    sweep_file = tmp_path / "sweep.json"
    sweep_file.write_text(json.dumps(raw))
    runs = plan_runs(build_config(raw))
    names = {json.dumps(run.model_args, sort_keys=True): run.name for run in runs}
    env = {**os.environ, "FAKE_LM_EVAL_NAMES": json.dumps(names), "FAKE_LM_EVAL_PID_FILE": str(tmp_path / "child.pid")}
    command = [sys.executable, "-c", SWEEP_DRIVER.format(fake=str(FAKE_LM_EVAL), sweep_file=str(sweep_file))]
    return command, env, runs


def results_files(output: Path) -> list[Path]:
    return sorted(p for p in output.rglob("results_*.json") if STAGING_DIR not in p.parts)


def trusted_results_are_whole(output: Path, runs) -> bool:
    """Every results file outside staging parses and records one of the runs."""
    for path in results_files(output):
        try:
            data = json.loads(path.read_text())
        except ValueError:
            return False
        if not any(records(data, run) for run in runs if run.folder == path.parent):
            return False
    return True
