"""Running the real commands (`lm_eval`, `lm-eval-longmem`) as a user would, offline, and reading
what they wrote: the console scripts sit beside this interpreter.

`run` runs `lm_eval` as a fork of a process that has already imported torch, transformers and
lm-eval (tests/helpers/warm_commands.py), unless the run sets variables a process may read at
import (`env_extra` beyond warm_commands.RUN_TIME_VARIABLES: a server of their own would serve one
run, no cheaper than a fresh process) or asks for `fresh=True` (the tests of start-up itself)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import warm_commands

BIN = Path(sys.executable).absolute().parent


def run(args, env_extra=None, check=True, fresh=False, cwd=None):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", **(env_extra or {})}
    if not fresh and set(env_extra or ()) <= set(warm_commands.RUN_TIME_VARIABLES) and warm_commands.wanted(args):
        proc = warm_commands.run(args, env=env, timeout=600, cwd=cwd)
    else:
        proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600, cwd=cwd)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args[0]} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc


def small_protocol(corpus_file):
    return ["--metadata", f"fc_corpus={corpus_file}", "fc_max_length=40", "fc_points=3", "fc_samples=2", "fc_seed=3"]


def results_of(output_path: Path) -> dict:
    (path,) = output_path.rglob("results_*.json")
    return json.loads(path.read_text())


def two_cpu_processes(port: int, module: str) -> tuple[list[str], dict[str, str]]:
    """(command prefix, environment) for `accelerate launch` of `python -m module` as two CPU
    processes (gloo) on this machine; each test passes its own port so parallel tests never meet."""
    env = {**os.environ, "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1"}
    env.update({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    flags = ["--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no"]
    flags += ["--dynamo_backend", "no", "--main_process_port", str(port)]
    return [str(BIN / "accelerate"), "launch", *flags, "-m", module], env


def two_cpu_processes_from_config(port: int, module: str, config_file) -> tuple[list[str], dict[str, str]]:
    """As `two_cpu_processes`, with the distributed type and its settings read from an accelerate
    config file (FSDP, DeepSpeed): `--multi_gpu` would make accelerate ignore the file's type."""
    _, env = two_cpu_processes(port, module)
    flags = ["--config_file", str(config_file), "--num_processes", "2", "--num_machines", "1"]
    flags += ["--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(port)]
    return [str(BIN / "accelerate"), "launch", *flags, "-m", module], env
