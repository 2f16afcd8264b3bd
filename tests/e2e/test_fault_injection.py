"""Fault injection on the CPU with tiny models: processes killed with SIGKILL at chosen or random
points and files damaged on disk, then the same command run again.

- `lm_eval --model longmem --use_cache X` killed mid-scoring (its caches damaged meanwhile)
  resumes from X and reports exactly an uninterrupted run's numbers (slow tier: 30 s).
- `lm-eval-longmem sweep` killed mid-way (while a run's results file is half-written) skips the
  finished runs, reruns the unfinished one and ends complete; its lm_eval dies with it.
- A truncated results file is one warning naming it in every report command; the rest show.
The slow test repeats these at many random points and prints the tally.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

from lm_eval_longmem.cli import main as report_main
from lm_eval_longmem.sweep.plan import finished_results
from lm_eval_longmem.sweep.staging import STAGING_DIR
from tests.helpers.fault_injection import cached_requests, damage, kill_when, process_gone
from tests.helpers.fault_scenarios import (
    curve_results,
    fake_sweep,
    private_cache_env,
    run_to_end,
    scoring_command,
    trusted_results_are_whole,
)
from tests.helpers.results_files import table_rows

# --- lm_eval --use_cache ---------------------------------------------------------------------------


def cache_counts(stderr: str) -> tuple[int, int]:
    (found,) = re.findall(r"Cached requests: (\d+), Requests remaining: (\d+)", stderr)
    return int(found[0]), int(found[1])


@pytest.mark.slow  # 30 s; the request cache's resume is tested in process by tests/lm_eval_model/test_request_cache.py
def test_killed_lm_eval_resumes_from_its_cache_with_an_uninterrupted_runs_numbers(
    tiny_model_dir, corpus_file, tmp_path
):
    env = private_cache_env(tmp_path / "cache")
    run_to_end(scoring_command(tiny_model_dir, corpus_file, tmp_path / "reference", None), env)
    use_cache = tmp_path / "requests" / "run"
    killed = kill_when(
        scoring_command(tiny_model_dir, corpus_file, tmp_path / "killed", use_cache),
        lambda: cached_requests(use_cache) >= 150,
        env=env,
    )
    assert killed.killed and killed.returncode == -signal.SIGKILL, killed.output[-3000:]
    scored_before_kill = cached_requests(use_cache)
    assert 150 <= scored_before_kill < 900 and not list((tmp_path / "killed").rglob("results_*.json"))
    # meanwhile its caches are damaged: each is rebuilt with one warning, none is trusted (the
    # task index too, in the slow test: rebuilding it is a cold parse of lm-eval's YAMLs, ~10 s)
    damaged = [*(tmp_path / "cache" / "token_streams").glob("*.npy"), *use_cache.parent.glob("*.json")]
    assert len(damaged) == 2
    for path, how in zip(damaged, ("garbage", "truncated")):
        damage(path, how)

    resumed = run_to_end(scoring_command(tiny_model_dir, corpus_file, tmp_path / "resumed", use_cache), env)
    cached, remaining = cache_counts(resumed.stderr)
    assert cached >= scored_before_kill and cached + remaining == 900 and remaining < 900
    assert curve_results(tmp_path / "resumed") == curve_results(tmp_path / "reference")
    assert "Traceback" not in resumed.stderr
    for path in damaged:
        assert resumed.stderr.count(f"{path} is damaged (") == 1, resumed.stderr[-4000:]


# --- sweep -----------------------------------------------------------------------------------------


def test_killed_sweep_keeps_finished_runs_and_reruns_the_half_finished_one(tmp_path):
    command, env, runs = fake_sweep(tmp_path)
    second = runs[1]
    half_written = tmp_path / "out" / STAGING_DIR
    killed = kill_when(
        command,
        lambda: any(half_written.rglob(f"{second.name}/results_*.json")),
        env=_pause_only(env, second.name),
        timeout=120,
    )
    assert killed.killed, killed.output
    child = int((tmp_path / "child.pid").read_text())
    assert process_gone(child), "the sweep's lm_eval outlived it"
    first_results = finished_results(runs[0])
    assert first_results is not None and finished_results(second) is None and finished_results(runs[2]) is None
    assert trusted_results_are_whole(tmp_path / "out", runs)  # the half-written file is not in a run's folder
    first_bytes = first_results.read_bytes()

    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    lines = again.stdout.splitlines()
    assert any(line.startswith("[1/3]") and "skipped, already done" in line for line in lines), again.stdout
    assert any(line.startswith("[2/3]") and " done in " in line for line in lines), again.stdout
    assert "sweep: 2 done, 1 skipped (already done), 0 failed of 3 runs" in again.stdout
    assert [len(list(run.folder.glob("results_*.json"))) for run in runs] == [1, 1, 1]
    assert first_results.read_bytes() == first_bytes and trusted_results_are_whole(tmp_path / "out", runs)
    assert not (tmp_path / "out" / STAGING_DIR).exists()
    assert all(list(run.folder.glob("samples_*.jsonl")) for run in runs)  # moved with their results


def _pause_only(env: dict, name: str) -> dict:
    """The fake lm_eval of run `name` stops for a minute with its results file half-written."""
    return {**env, "FAKE_LM_EVAL_PAUSE": json.dumps({name: 60})}


# --- report commands -------------------------------------------------------------------------------

REPORT_COMMANDS = [
    ("leaderboard", []),
    ("plot", ["--overlay"]),
    ("plot-passkey", []),
    ("plot-perplexity", []),
    ("plot-trec", []),
]


def truncate_copies(root: Path, rng: np.random.Generator) -> list[Path]:
    """Two results files cut short as a killed `lm_eval` leaves them: a newer file of run a (its
    older one must be shown instead) and a run of its own."""
    source = root / "a" / "results_2026-11-23T10-00-00.json"
    cut = []
    for target in (root / "a" / "results_2026-11-24T10-00-00.json", root / "d" / "results_2026-11-24T11-00-00.json"):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
        damage(target, "truncated", rng)
        cut.append(target)
    return cut


@pytest.mark.parametrize("command, options", REPORT_COMMANDS, ids=[c for c, _ in REPORT_COMMANDS])
def test_a_truncated_results_file_is_one_warning_naming_it_in_every_report_command(
    command, options, runs_dir, saved, tmp_path, capsys
):
    cut = truncate_copies(runs_dir, np.random.default_rng(len(command)))
    output = [] if command == "leaderboard" else ["-o", str(tmp_path / "figure.png")]
    assert report_main([command, str(runs_dir), *options, *output]) == 0
    captured = capsys.readouterr()
    warnings = captured.err.splitlines()
    assert len(warnings) == len(cut), captured.err
    for path in cut:
        assert (
            sum(line.startswith(f"warning: skipped {path} is not a readable lm-eval results file") for line in warnings)
            == 1
        )
    if command == "leaderboard":
        assert len(table_rows(captured.out)) == 3  # runs a (its older file), b and c
    else:
        assert (tmp_path / "figure.png").stat().st_size > 0 and len(saved) == 1
    if command == "plot":  # run a's older file is drawn beside run c
        texts = [text.get_text().replace("\n", " ") for text in saved[0].axes[0].get_legend().get_texts()]
        assert "vanilla: copy, fine 64, coarse 512" in texts and any(t.startswith("infini") for t in texts)
