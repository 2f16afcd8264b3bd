"""A very small study run for real (the tiny Llama, the word corpus, a local TREC copy): one
trained row and two training-free rows, killed once after its first finished evaluation and
resumed without redoing what was done; the tables and Figure 2 read back."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.helpers.cli_runs import BIN, run
from tests.helpers.data_fixtures import PLAUSIBLE_TREC_QUESTIONS, write_trec_fixture


def small_study(tmp_path: Path, model_dir, corpus_file, trained: bool) -> Path:
    trec = write_trec_fixture(tmp_path / "trec", PLAUSIBLE_TREC_QUESTIONS[:56], PLAUSIBLE_TREC_QUESTIONS[56:])
    methods = [{"label": "base", "method": "vanilla"}, {"label": "NTK-F", "method": "ntk", "args": {"factor": 4}}]
    if trained:
        methods.append({"label": "PI", "recipe": "tiny-pi"})
    study = {
        "output_path": str(tmp_path / "out"),
        "base": str(model_dir),
        "budget": {
            "tokens": 64,
            "seq_len": 32,
            "micro_batch_size": 2,
            "data": str(corpus_file),
            "recipe_keys": {"warmup_steps": 1, "lr": 1e-3, "save_every": 1},
        },
        "methods": methods,
        "suite": {
            "ppl": {"lengths": [32, 64], "windows": 2, "stride": 16, "corpus": str(corpus_file)},
            "needle": {"lengths": [64, 100], "depths": [0, 100], "samples": 1},
            "mshots": {"shots": [1, 2], "questions": 4, "data_dir": str(trec)},
        },
        "evaluation": {"device": "cpu", "batch_size": 1},
    }
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    return path


def study_command(path: Path) -> list[str]:
    return [str(BIN / "lm-eval-longmem"), "study", str(path)]


def mtimes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("results_*.json")}


@pytest.mark.parametrize(
    "trained",
    [
        False,  # two lm_eval starts: ~30 s on 2 quiet cores
        pytest.param(True, marks=pytest.mark.slow),  # one training and three lm_eval starts: ~1.5 min
    ],
    ids=["training-free", "with-a-trained-row"],
)
def test_a_study_runs_is_killed_resumes_and_tabulates(trained, tiny_model_dir, corpus_file, tmp_path):
    path = small_study(tmp_path, tiny_model_dir, corpus_file, trained=trained)
    out = tmp_path / "out"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    process = subprocess.Popen(
        study_command(path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    seen = []
    for line in process.stdout:  # kill the study (SIGKILL: no clean-up) once its first evaluation is done
        seen.append(line)
        if "evaluate base" in line and " done in " in line:
            process.kill()
            break
    process.wait(timeout=60)
    first = mtimes(out / "eval")
    assert list(first) and all(name.startswith("base/") for name in first), "".join(seen)
    export_config = out / "train" / "PI" / "export" / "config.json"
    if trained:
        assert any("train PI" in line and " done in " in line for line in seen), "".join(seen)
        trained_at = export_config.stat().st_mtime_ns

    proc = run(study_command(path), env_extra=env)
    lines = proc.stdout.splitlines()
    assert any("evaluate base" in line and "skipped, already done" in line for line in lines), proc.stdout
    steps = 4 if trained else 2
    skipped = 2 if trained else 1
    assert f"study: {steps - skipped} done, {skipped} skipped (already done), 0 failed of {steps} steps" in proc.stdout
    if trained:
        assert any("train PI" in line and "skipped, already trained" in line for line in lines), proc.stdout
        assert export_config.stat().st_mtime_ns == trained_at
    after = mtimes(out / "eval")
    assert {k: v for k, v in after.items() if k in first} == first and len(after) == steps - skipped + 1

    labels = ["base", "NTK-F", "PI"] if trained else ["base", "NTK-F"]
    table = list(csv.reader((out / "tables" / "table1.csv").open()))
    assert table[0] == ["Method", "Kind", "Train len", "Eval len", "Exact", "PPL", "Needle", "Mshots"]
    rows = {r[0]: r for r in table[1:]}
    assert list(rows) == labels and rows["base"][1:5] == ["training-free", "128", "100", "yes"]
    if trained:
        assert rows["PI"][1] == "trained (tiny-pi)" and rows["PI"][2] == "32"
    data = json.loads((out / "tables" / "study.json").read_text())
    for row in data["rows"]:
        results = json.loads(Path(row["results_files"][0]).read_text())["results"]
        assert row["ppl_by_length"]["64"] == pytest.approx(results["longmem_perplexity"]["ppl@64,none"])
        assert row["ppl"]["value"] == row["ppl_by_length"]["64"]
        assert row["needle"]["value"] == pytest.approx(100 * results["longmem_passkey"]["acc,none"])
    assert set(data["kendall"]) == {"needle", "mshots"} and data["kendall"]["needle"]["n"] == len(labels)
    table2 = list(csv.reader((out / "tables" / "table2.csv").open()))
    assert table2[0] == ["Method", "Train len", "Exact", "32", "64"]
    assert (out / "tables" / "figure2.png").stat().st_size > 10_000


def test_sigterm_during_a_study_stops_it_and_says_how_to_resume(tmp_path):
    """A scheduler's SIGTERM ends the running step and prints the summary (exit 130); the step's
    command is replaced by a sleeping child to keep it fast."""
    script = f"""
import sys
from lm_eval_longmem.study.schema import build_study
from lm_eval_longmem.study.plan import plan_study
from lm_eval_longmem.study import execute as ex
import lm_eval_longmem.sweep.execute as sweep_ex
sweep_ex.lm_eval_command = lambda run, config, **options: [sys.executable, "-c", "import time; time.sleep(120)"]
study = build_study({{"methods": ["vanilla", "streamingllm"], "suite": {{"ppl": {{"lengths": [64]}}}},
                     "output_path": {str(tmp_path / "out")!r}}}, "test")
plan = plan_study(study)
try:
    ex.execute(plan, say=lambda line: print(line, flush=True))
except ex.StudyInterrupted as stop:
    print(ex.summary(stop.outcomes, 2), flush=True)
    sys.exit(130)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    first = proc.stdout.readline()
    assert first.startswith("[1/2] evaluate vanilla") and first.rstrip().endswith("running"), first
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    rest = proc.communicate(timeout=60)[0]
    assert proc.returncode == 130, rest
    assert "interrupted; rerun the same command to resume" in rest
    assert "0 done, 0 skipped (already done), 0 failed, 1 interrupted, 1 not started of 2 steps" in rest
