"""scripts/gpu-check.sh kept alive on the CPU: its plan, the flags it passes, its report.

A GPU is lent rarely and briefly; a renamed flag or benchmark must fail here, not there. (Each
benchmark it calls also runs at a tiny size on the CPU in its own test.)
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", REPO / "scripts" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


gpu_check = _gpu_check()


def test_dry_run_lists_every_part_and_installs_nothing(tmp_path):
    env = dict(os.environ, GPU_WHEELS=str(tmp_path / "no-wheels"), PYTHON=sys.executable)
    result = subprocess.run(
        ["bash", "scripts/gpu-check.sh", "--dry-run"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    listed = [line.split(" ")[0] for line in result.stdout.splitlines()]
    assert listed == [
        "cuda-tests",
        "kernel-resources",
        "kernel-speed",
        "method-speed",
        "landmark-paths",
        "recall-speed",
        "retrieval-speed",
        "train-step",
    ]
    assert "benchmarks/forgetting_attention.py --head-dims 64 128 --lengths 4096 16384 65536" in result.stdout


def test_unknown_part_is_one_message():
    result = subprocess.run(
        [sys.executable, "scripts/gpu_check.py", "--dry-run", "--only", "kernel-speed,bogus"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("error: unknown part(s) bogus; valid: cuda-tests, kernel-resources, kernel-speed")
    )


def test_without_wheels_says_which_script_fetches_them(tmp_path):
    env = dict(os.environ, GPU_WHEELS=str(tmp_path / "no-wheels"), PYTHON=sys.executable)
    result = subprocess.run(
        ["bash", "scripts/gpu-check.sh", "--quick"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "run ./scripts/gpu-wheels.sh" in result.stderr


@pytest.mark.parametrize(
    "part", [p for p in gpu_check.PARTS if p.command[0].startswith("benchmarks/")], ids=lambda p: p.name
)
def test_every_flag_the_check_passes_is_one_its_benchmark_takes(part):
    script = REPO / part.command[0]
    assert script.exists(), f"{part.name}: {part.command[0]} is gone"
    help_text = subprocess.run(
        [sys.executable, str(script), "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    ).stdout
    for command in (part.command, part.quick):
        for flag in (a for a in command if a.startswith("--")):
            assert flag in help_text, f"{part.name}: {script.name} has no {flag}"


@pytest.mark.slow  # 9 s: pytest collects the whole suite once more
def test_the_cuda_test_selection_holds_the_compiled_kernel_tests():
    part = next(p for p in gpu_check.PARTS if p.name == "cuda-tests")
    args = [a for a in part.command if not a.startswith("--junitxml") and "{out}" not in a]
    workers = args.index("-n")
    args = ["-q" if a == "-v" else a for i, a in enumerate(args) if i not in (workers, workers + 1)]
    collected = subprocess.run(
        [sys.executable, *args, "--collect-only", "-q"], cwd=REPO, capture_output=True, text=True
    ).stdout
    counts = dict(line.rsplit(": ", 1) for line in collected.splitlines() if ": " in line)  # -qq: per-file counts
    assert int(counts.get("tests/kernels/test_forgetting_attention_cuda.py", 0)) >= 20  # the compiled kernels
    assert int(counts.get("tests/methods/test_self_extend_and_lm_infinite.py", 0)) >= 10  # device-parametrized tests
    assert int(counts.get("tests/models/test_bounded_cache.py", 0)) >= 5


def test_parts_run_in_turn_and_one_failure_or_time_out_does_not_stop_the_report(tmp_path, monkeypatch):
    ok = gpu_check.Part(
        "ok",
        "prints and writes its JSON",
        ("-c", "import json,sys; print('hello'); json.dump({'x': 1}, open(sys.argv[1], 'w'))", "{out}/ok.json"),
        (),
        30,
        30,
        json_name="ok.json",
    )
    failing = gpu_check.Part("failing", "exits 3", ("-c", "print('boom'); raise SystemExit(3)"), (), 30, 30)
    slow = gpu_check.Part(
        "slow", "outlives its cap", ("-c", "import time; print('started', flush=True); time.sleep(60)"), (), 1, 1
    )
    monkeypatch.setattr(gpu_check, "PARTS", (ok, failing, slow))
    monkeypatch.setattr(gpu_check, "environment", lambda: {"device": "test", "date": "today"})
    code = gpu_check.main(["--out", str(tmp_path)])
    assert code == 1
    report = json.loads((tmp_path / "gpu-report.json").read_text())
    assert [(p["part"], p["status"]) for p in report["parts"]] == [
        ("ok", "ok"),
        ("failing", "failed (exit 3)"),
        ("slow", "timed out"),
    ]
    assert report["parts"][0]["data"] == {"x": 1}
    assert report["parts"][2]["seconds"] < 30
    markdown = (tmp_path / "gpu-report.md").read_text()
    assert "| failing | failed (exit 3) |" in markdown and "boom" in markdown
    assert "started" in (tmp_path / "gpu-logs.txt").read_text()


def test_junit_counts_name_the_failed_tests(tmp_path):
    (tmp_path / "j.xml").write_text(
        '<testsuites><testsuite tests="3" failures="1" errors="0" skipped="1">'
        '<testcase classname="tests.a" name="t1"><properties><property name="error" value="3e-3"/></properties>'
        '</testcase><testcase classname="tests.a" name="t2"><failure/></testcase>'
        '<testcase classname="tests.a" name="t3"><skipped/></testcase></testsuite></testsuites>'
    )
    counts = gpu_check.junit_counts(tmp_path / "j.xml")
    assert counts == {
        "tests": 3,
        "failures": 1,
        "errors": 0,
        "skipped": 1,
        "failed": ["tests.a::t2"],
        "measured": {"tests.a::t1": {"error": "3e-3"}},  # record_property figures reach the report
    }


@pytest.mark.slow  # a benchmark's smoke run (9 s); the kernels are tested in tests/kernels
def test_kernel_benchmark_runs_on_the_cpu_at_a_tiny_size():
    result = subprocess.run(
        [sys.executable, "benchmarks/forgetting_attention.py", "--cpu-length", "256", "--heads", "2"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "triton (interpreter) vs reference, max abs error:" in result.stdout
    assert "CPU forward+backward, B=1 H=2 D=64 T=256 fp32: blocked" in result.stdout
