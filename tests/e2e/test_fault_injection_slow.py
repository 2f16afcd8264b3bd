"""Many faults at random points (slow tier): SIGKILLs of `lm_eval --use_cache` runs at random
request counts with caches (and the --use_cache database) damaged between attempts, SIGKILLs
of fake-lm_eval sweeps at random moments, a real sweep killed in the middle of two runs, and
every cache and results file damaged at random offsets. Each test prints its tally (`-s` shows
it): faults injected, recovered, lost. Seed: FAULT_SEED (default 23).

Run: ./scripts/test.sh --slow tests/e2e/test_fault_injection_slow.py -s
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from lm_eval_longmem.sweep.config import build_config
from lm_eval_longmem.sweep.execute import log_path
from lm_eval_longmem.sweep.plan import finished_results, plan_runs
from lm_eval_longmem.sweep.staging import STAGING_DIR
from tests.helpers.cli_runs import BIN
from tests.helpers.fault_injection import DAMAGES, FaultTally, cached_requests, damage, kill_when, none_left_mentioning
from tests.helpers.fault_scenarios import (
    curve_results,
    fake_sweep,
    private_cache_env,
    run_to_end,
    scoring_command,
    trusted_results_are_whole,
)

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("FAULT_SEED", "23"))


@pytest.fixture
def rng(request):
    return np.random.default_rng([SEED, sum(map(ord, request.node.name))])


@pytest.fixture
def tally(request):
    counted = FaultTally()
    yield counted
    print(f"\n[{request.node.name}] seed {SEED}: {counted}")
    assert counted.lost == [], str(counted)


def kill_log(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"attempt_{time.monotonic_ns()}.log"


# --- lm_eval --use_cache, killed at 12 random request counts ---------------------------------------

REQUESTS = 1800  # fc_samples=300 x 3 lengths x (copy, lm)


def test_lm_eval_killed_at_random_request_counts_and_caches_damaged_between(
    tiny_model_dir, corpus_file, tmp_path, rng, tally
):
    env = private_cache_env(tmp_path / "cache")
    run_to_end(scoring_command(tiny_model_dir, corpus_file, tmp_path / "reference", None, samples=300), env)
    use_cache = tmp_path / "requests" / "run"
    command = scoring_command(tiny_model_dir, corpus_file, tmp_path / "resumed", use_cache, samples=300)
    cache_files = {
        "token stream": lambda: list((tmp_path / "cache" / "token_streams").glob("*.npy")),
        "fingerprint": lambda: list(use_cache.parent.glob("*.json")),
        "task index": lambda: list((tmp_path / "cache" / "task_index").glob("*.pickle")),
        "database": lambda: list(use_cache.parent.glob("*_rank0.db")),
    }
    pending: list[tuple[str, Path]] = []  # damaged files the next attempt must warn about once
    # after each kill: damage nothing or one cache, each cache at least once, in random order
    plan = rng.permutation([*cache_files, *rng.choice([*cache_files], 3), *["none"] * 5])
    kills = 0
    while kills < 12:
        database_damaged = any(what.endswith("database") for what, _ in pending)
        before = 0 if database_damaged else cached_requests(use_cache)
        target = before + int(rng.integers(30, 130))  # killed once this many requests are scored
        attempt = kill_when(
            command,
            lambda target=target: cached_requests(use_cache) >= target,
            env=env,
            log=kill_log(tmp_path / "logs"),
        )
        after = cached_requests(use_cache)
        check_damaged_files_were_rebuilt(pending, attempt.output, tally)
        if not attempt.killed:
            assert attempt.returncode == 0, attempt.output[-3000:]
            break
        kills += 1
        counts = re.findall(r"Cached requests: (\d+), Requests remaining: (\d+)", attempt.output)
        resumed = bool(counts) and int(counts[0][0]) >= before and int(counts[0][0]) + int(counts[0][1]) == REQUESTS
        tally.record(
            f"kill after {target} requests", recovered=resumed and after >= target and "Traceback" not in attempt.output
        )
        what = plan[kills - 1]
        if what != "none":
            (path,) = cache_files[what]()
            how = str(
                rng.choice(DAMAGES if what != "database" else ["truncated", "zeroed", "garbage"])
            )  # empty: a valid database
            damage(path, how, rng)
            pending.append((f"{how} {what}", path))
    final = run_to_end(command, env)
    check_damaged_files_were_rebuilt(pending, final.stderr, tally)
    assert curve_results(tmp_path / "resumed") == curve_results(tmp_path / "reference")
    assert kills >= 10, f"only {kills} attempts were killed before the run finished"


def check_damaged_files_were_rebuilt(pending: list[tuple[str, Path]], output: str, tally: FaultTally) -> None:
    for what, path in pending:
        tally.record(what, recovered=output.count(f"{path} is damaged (") == 1 and "Traceback" not in output)
    pending.clear()


# --- sweeps of fake lm_eval runs, killed at 12 random moments ---------------------------------------


def test_sweep_killed_at_random_moments(tmp_path, rng, tally):
    methods = ["vanilla", *({"name": "yarn", "args": {"factor": f}} for f in (2, 4, 8))]
    command, env, runs = fake_sweep(tmp_path, methods)
    env = {**env, "FAKE_LM_EVAL_PAUSE": json.dumps({"*": 0.6})}
    output = tmp_path / "out"
    finished: dict[str, bytes] = {}  # run name -> its results file's bytes once done
    kills = 0
    while kills < 12:
        unfinished = [i for i, run in enumerate(runs, 1) if finished_results(run) is None]
        if not unfinished:  # all done: start the grid over
            for path in output.rglob("results_*.json"):
                path.unlink()
            finished.clear()
            continue
        cell, delay = int(rng.choice(unfinished)), float(rng.uniform(0, 1.2))
        log = kill_log(tmp_path / "logs")
        started: dict[str, float] = {}

        def ready(log=log, started=started, cell=cell, delay=delay):  # this attempt's values
            text = log.read_text()
            if not started and re.search(rf"^\[{cell}/{len(runs)}\] .*: running$", text, re.MULTILINE):
                started["at"] = time.monotonic()
            return bool(started) and time.monotonic() - started["at"] >= delay

        attempt = kill_when(command, ready, env=env, log=log)
        assert attempt.killed, attempt.output
        kills += 1
        no_orphan = none_left_mentioning(str(output / STAGING_DIR))
        tally.record(
            f"sweep killed {delay:.2f} s into run {cell}",
            recovered=no_orphan
            and still_done(finished, runs)
            and trusted_results_are_whole(output, runs)
            and all(len(list(run.folder.glob("results_*.json"))) <= 1 for run in runs),
        )
        for run in runs:
            done = finished_results(run)
            if done is not None:
                finished.setdefault(run.name, done.read_bytes())
    final = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert final.returncode == 0, final.stdout + final.stderr[-3000:]
    assert [len(list(run.folder.glob("results_*.json"))) for run in runs] == [1] * len(runs)
    assert still_done(finished, runs) and trusted_results_are_whole(output, runs)
    assert not (output / STAGING_DIR).exists()


def still_done(finished: dict[str, bytes], runs) -> bool:
    """Every run done before is still done by the same results file, untouched."""
    for run in runs:
        if run.name in finished:
            done = finished_results(run)
            if done is None or done.read_bytes() != finished[run.name]:
                return False
    return True


# --- a real sweep (tiny model, real lm_eval) killed in the middle of its second and third runs --------

SWEEP_REQUESTS = 900  # per run: fc_samples=150 x 3 lengths x (copy, lm)


def test_real_sweep_killed_mid_run_twice(tiny_model_dir, corpus_file, tmp_path, rng, tally):
    """Runs use --use_cache, so each is killed after a random number of its requests is scored
    (and its rerun resumes from them)."""
    out, use_cache = tmp_path / "out", tmp_path / "requests" / "sweep"
    raw = {
        "output_path": str(out),
        "models": [str(tiny_model_dir)],
        "tasks": ["forgetting_curve"],
        "device": "cpu",
        "metadata": {"fc_corpus": str(corpus_file), "fc_max_length": 60, "fc_points": 3, "fc_samples": 150},
        "methods": ["vanilla", {"name": "yarn", "args": {"factor": 2}}, {"name": "yarn", "args": {"factor": 4}}],
        "lm_eval_args": ["--use_cache", str(use_cache)],
    }
    sweep_file = tmp_path / "sweep.json"
    sweep_file.write_text(json.dumps(raw))
    runs = plan_runs(build_config(raw))
    command = [str(BIN / "lm-eval-longmem"), "sweep", str(sweep_file)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    finished: dict[str, bytes] = {}
    for cell in (2, 3):
        target = (cell - 1) * SWEEP_REQUESTS + int(rng.integers(50, SWEEP_REQUESTS - 50))  # the runs before: all scored
        attempt = kill_when(
            command,
            lambda target=target: cached_requests(use_cache) >= target,
            env=env,
            log=kill_log(tmp_path / "logs"),
            timeout=600,
        )
        assert attempt.killed, attempt.output[-3000:]
        no_orphan = none_left_mentioning(str(out / STAGING_DIR))
        done_now = [finished_results(r) is not None for r in runs]
        tally.record(
            f"real sweep killed after {target - (cell - 1) * SWEEP_REQUESTS} requests of run {cell}",
            recovered=no_orphan
            and done_now == [i < cell - 1 for i in range(3)]
            and still_done(finished, runs)
            and trusted_results_are_whole(out, runs),
        )
        for r in runs:
            if finished_results(r) is not None:
                finished.setdefault(r.name, finished_results(r).read_bytes())
    final = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert final.returncode == 0, final.stdout + final.stderr[-3000:]
    assert "sweep: 1 done, 2 skipped (already done), 0 failed of 3 runs" in final.stdout, final.stdout
    resumed = re.findall(r"Cached requests: (\d+), Requests remaining: (\d+)", log_path(runs[2]).read_text())
    assert resumed and int(resumed[0][0]) > 0 and sum(map(int, resumed[0])) == SWEEP_REQUESTS
    assert all(json.loads(finished_results(r).read_text())["results"]["forgetting_curve"] for r in runs)
    assert not (out / STAGING_DIR).exists()


# --- every cache and results file damaged at random offsets ------------------------------------------


def test_every_cache_and_results_file_damaged_at_random(
    tiny_model_dir, corpus_file, tmp_path, monkeypatch, rng, tally, caplog
):
    import logging

    from transformers import AutoTokenizer

    from lm_eval_longmem.data.corpora import load_corpus
    from lm_eval_longmem.data.token_stream import corpus_documents
    from lm_eval_longmem.harness import task_index_cache
    from lm_eval_longmem.lm_eval_model import request_cache
    from lm_eval_longmem_training.data.packing import packed_chunks
    from lm_eval_longmem_training.data.text_sources import open_text_source
    from tests.helpers.results_files import forgetting_metrics, lm_eval_results, table_rows, write

    monkeypatch.setenv("LM_EVAL_LONGMEM_CACHE", str(tmp_path / "cache"))
    caplog.set_level(logging.WARNING)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    corpus, source = load_corpus(str(corpus_file)), open_text_source(str(corpus_file))
    tasks = tmp_path / "tasks"
    (tasks / "t.yaml").parent.mkdir()
    (tasks / "t.yaml").write_text("task: toy\ndataset_path: a\noutput_type: loglikelihood\n")
    monkeypatch.setattr(task_index_cache, "builtin_tasks_dir", lambda: tasks)
    import lm_eval.tasks._index as index_module

    task_index_cache.install(index_module)
    fingerprint_file = tmp_path / "run_longmem__tiny__vanilla__0123456789ab.json"
    fingerprint = {"method": "vanilla", "weights": {"files": [["a", 1]]}}

    def build_all():
        documents = [d.copy() for d in corpus_documents(corpus, tokenizer)]
        chunks = np.array(packed_chunks(source, tokenizer, 16))
        index = sorted(index_module.TaskIndex.build([tasks]))
        request_cache._write_fingerprint(str(fingerprint_file), fingerprint)
        return documents, chunks, index, json.loads(fingerprint_file.read_text())

    def same(a, b):
        return (
            len(a[0]) == len(b[0])
            and all(np.array_equal(x, y) for x, y in zip(a[0], b[0]))
            and np.array_equal(a[1], b[1])
            and a[2:] == b[2:]
        )

    expected = build_all()
    cache_files = [
        *(tmp_path / "cache" / "token_streams").glob("*.npy"),
        *(tmp_path / "cache" / "training_tokens").glob("*.npy"),
        *(tmp_path / "cache" / "task_index").glob("*.pickle"),
        fingerprint_file,
    ]
    assert len(cache_files) == 5
    for path in cache_files:
        for how in DAMAGES:
            for _ in range(3 if how in ("truncated", "garbage") else 1):
                damage(path, how, rng)
                caplog.clear()
                try:
                    rebuilt = build_all()
                except Exception as err:  # noqa: BLE001 - a traceback is a lost fault, counted
                    tally.record(f"{how} {path.name}: {err!r}", recovered=False)
                    continue
                warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
                tally.record(
                    f"{how} {path.name}",
                    recovered=same(rebuilt, expected) and len(warned) == 1 and str(path) in warned[0],
                )

    runs = tmp_path / "results"
    good = write(
        runs / "a" / "results_2026-11-23T10-00-00.json",
        lm_eval_results({"forgetting_curve": forgetting_metrics([64, 512], [1.0, 0.5], fine=64, coarse=512)}),
    )
    write(
        runs / "b" / "results_2026-11-23T11-00-00.json",
        lm_eval_results(
            {"forgetting_curve": forgetting_metrics([64, 512], [1.0, 0.9], fine=512, coarse=512)},
            method="yarn",
            method_args={"factor": 2.0},
            model_args="method=yarn,factor=2",
        ),
    )
    for attempt in range(10):
        cut = runs / "c" / f"results_2026-11-24T10-00-{attempt:02d}.json"
        cut.parent.mkdir(exist_ok=True)
        shutil.copy(good, cut)
        damage(cut, str(rng.choice(["truncated", "truncated", "zeroed", "garbage"])), rng)
        completed = subprocess.run(
            [str(BIN / "lm-eval-longmem"), "leaderboard", str(runs)], capture_output=True, text=True
        )
        warnings = [line for line in completed.stderr.splitlines() if line.startswith("warning: skipped ")]
        rows = table_rows(completed.stdout) if completed.returncode == 0 else []
        tally.record(
            f"results file damaged ({attempt})",
            recovered=completed.returncode == 0
            and len(rows) == 2
            and len(warnings) == 1
            and str(cut) in warnings[0]
            and "Traceback" not in completed.stderr,
        )
        cut.unlink()
