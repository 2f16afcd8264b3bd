"""`lm-eval-longmem sweep`: the sweep file is checked (one message per mistake), the grid is
planned with the run-name rule, finished runs are recognised from their results files, and one
real sweep runs through the stock lm_eval (a failing run does not stop it; a resumed sweep skips
what is done)."""

import json
from pathlib import Path

import pytest

from lm_eval_longmem.cli import sweep as sweep_cli
from lm_eval_longmem.models.method_registry import UnknownMethodError
from lm_eval_longmem.sweep import example_files
from lm_eval_longmem.sweep.config import SweepConfigError, build_config, load_sweep_file
from lm_eval_longmem.sweep.execute import failure_reason
from lm_eval_longmem.sweep.plan import finished_results, lm_eval_command, plan_runs, records
from tests.helpers.cli_runs import BIN, run
from tests.helpers.error_messages import assert_one_message


def config(**raw):
    return build_config({"tasks": ["forgetting_curve"], **raw})


def test_grid_expands_models_methods_settings_and_tasks(tmp_path):
    cfg = config(
        models=["default", "HuggingFaceTB/SmolLM2-135M"],
        methods=[
            "vanilla",
            {"name": "yarn", "grid": {"factor": [2, 4]}},
            {"name": "statedclm", "args": [{"max_context_length": 1024}, {"max_context_length": 2048}]},
        ],
        tasks=["forgetting_curve", "longmem_passkey"],
        per_task=True,
        output_path=str(tmp_path),
        metadata={"fc_max_length": 512},
        limit=3,
        device="cpu",
    )
    runs = plan_runs(cfg)
    assert len(runs) == 2 * 5 * 2
    names = sorted({r.name for r in runs})
    assert names[:5] == [
        "HuggingFaceTB__SmolLM2-135M__statedclm__max_context_length-1024",
        "HuggingFaceTB__SmolLM2-135M__statedclm__max_context_length-2048",
        "HuggingFaceTB__SmolLM2-135M__vanilla",
        "HuggingFaceTB__SmolLM2-135M__yarn",  # factor 4, the resolved default
        "HuggingFaceTB__SmolLM2-135M__yarn__factor-2",
    ]
    command = lm_eval_command(runs[2], cfg)
    assert command[1:4] == ["-m", "lm_eval", "run"]
    assert json.loads(command[command.index("--model_args") + 1]) == {"method": "yarn", "factor": 2}
    assert command[command.index("--limit") + 1] == "3" and command[command.index("--device") + 1] == "cpu"
    assert json.loads(command[command.index("--metadata") + 1]) == {"fc_max_length": 512}
    # the same setting twice is one run
    assert len(plan_runs(config(methods=["vanilla", "vanilla"]))) == 1


@pytest.mark.parametrize(
    "raw, expected",
    [
        ({"tasks": ["x"], "method": ["yarn"]}, ["unknown key(s) 'method'", "methods:", "metadata:"]),
        ({"methods": ["vanilla"]}, ["'tasks' is required"]),
        ({"tasks": ["x"], "methods": [{"name": "yarn", "arg": {}}]}, ["unknown key(s) 'arg'", "grid"]),
        ({"tasks": ["x"], "limit": "ten"}, ["limit must be a positive number"]),
        ({"tasks": ["x"], "metadata": [1, 2]}, ["metadata must be a mapping"]),
        ({"tasks": ["x"], "model_args": {"method": "yarn"}}, ["put methods under 'methods'"]),
    ],
)
def test_config_mistakes_are_one_message(raw, expected):
    with pytest.raises(SweepConfigError) as err:
        build_config(raw, "s.yaml")
    for text in expected:
        assert text in str(err.value)


def test_unknown_method_or_argument_is_the_wrappers_error_before_anything_runs():
    with pytest.raises(UnknownMethodError, match="Valid methods"):
        plan_runs(config(methods=["vanila"]))
    with pytest.raises(ValueError, match="beta_fast"):
        plan_runs(config(methods=[{"name": "yarn", "args": {"beta_fast": 1, "beta_slow": 2}}]))


def test_sweep_file_problems(tmp_path):
    with pytest.raises(SweepConfigError, match="No such sweep file"):
        load_sweep_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("tasks: [a\n")
    with pytest.raises(SweepConfigError, match="not valid YAML"):
        load_sweep_file(bad)


def test_shipped_examples_plan(capsys):
    assert {"rope_methods", "bounded_caches"} <= set(example_files())
    for name, path in example_files().items():
        runs = plan_runs(build_config(load_sweep_file(path), str(path)))
        assert runs and all(r.name.startswith("SmolLM2-135M-Instruct__") for r in runs), name
    assert sweep_cli.main(["rope_methods", "--dry-run", "-o", "elsewhere"]) == 0
    out = capsys.readouterr().out
    assert "7 run(s), results under elsewhere/" in out
    assert "SmolLM2-135M-Instruct__yarn [forgetting_curve,longmem_passkey]" in out
    assert "lm_eval run --model longmem" in out


def test_command_line_lists_and_the_unknown_method_message(capsys):
    assert (
        sweep_cli.main(
            [
                "--tasks",
                "forgetting_curve",
                "--methods",
                "vanilla",
                "yarn:factor=2",
                "--metadata",
                "fc_max_length=256",
                "--dry-run",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "2 run(s)" in out and "SmolLM2-135M-Instruct__yarn__factor-2" in out and "fc_max_length" in out
    assert sweep_cli.main(["--tasks", "forgetting_curve", "--methods", "yarm"]) == 2
    err = capsys.readouterr().err
    assert "lm-eval-longmem sweep: error: Unknown method='yarm'" in err and "Traceback" not in err


def results_file(
    folder: Path, model_args, tasks=("forgetting_curve",), limit=None, metadata=None, stamp="2026-01-01T00-00-00"
):
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "results": {t: {} for t in tasks},
        "configs": {t: {"metadata": {"version": 1.0, **(metadata or {})}} for t in tasks},
        "config": {"model": "longmem", "model_args": model_args, "limit": limit},
    }
    path = folder / f"results_{stamp}.json"
    path.write_text(json.dumps(data))
    return path


def test_done_is_read_from_the_recorded_config(tmp_path):
    cfg = config(
        methods=[{"name": "yarn", "args": {"factor": 2}}],
        output_path=str(tmp_path),
        metadata={"fc_lengths": [8, 16]},
        limit=2,
    )
    (run_,) = plan_runs(cfg)
    assert finished_results(run_) is None
    results_file(run_.folder, {"method": "yarn", "factor": 2}, limit=2.0, metadata={"fc_lengths": [8, 32]}, stamp="a")
    results_file(run_.folder, {"method": "yarn", "factor": 3}, limit=2.0, metadata={"fc_lengths": [8, 16]}, stamp="b")
    results_file(run_.folder, {"method": "yarn", "factor": 2}, limit=None, metadata={"fc_lengths": [8, 16]}, stamp="c")
    (run_.folder / "results_d.json").write_text("{corrupt")
    assert finished_results(run_) is None  # other metadata, other args, other limit, corrupt
    done = results_file(
        run_.folder, {"factor": 2, "method": "yarn"}, limit=2.0, metadata={"fc_lengths": [8, 16]}, stamp="e"
    )
    assert finished_results(run_) == done
    data = json.loads(done.read_text())
    data["results"] = {"longmem_passkey": {}}
    data["configs"] = {"longmem_passkey": data["configs"]["forgetting_curve"]}
    assert not records(data, run_)  # another task


def test_failure_reason_and_summary():
    assert (
        failure_reason("noise\nlm_eval: error: Unknown method='x'. Valid methods:\n  a\n", 1)
        == "Unknown method='x'. Valid methods:"
    )
    assert failure_reason("Traceback (most recent call last):\n  File x\nKeyError: 'boom'\n", 1) == "KeyError: 'boom'"
    assert "killed" in failure_reason("", -9)
    bar = "longmem scoring:  40%|████      | 2/5 [00:03<00:04,  1.50s/req]"
    logged = "2026-11-29:05:10:01 ERROR    [evaluator.py:190] No tasks matched: longmem_x\n"
    assert failure_reason(logged + bar + "\r" + bar + "\n", 1) == "No tasks matched: longmem_x"
    assert failure_reason("loading\n" + bar + "\n", 1) == "loading"  # never the progress bar


def test_a_runs_log_keeps_one_line_per_progress_bar_not_one_per_update(tmp_path, monkeypatch):
    import sys

    from lm_eval_longmem.sweep import execute as ex

    assert ex.final_redraw("scoring:  10%\rscoring:  50%\rscoring: 100%\n") == "scoring: 100%\n"
    assert ex.final_redraw("plain line\r\n") == "plain line\n" and ex.final_redraw("\r\n") == "\n"
    bars = "".join(f"\\rscoring: {i}/640" for i in range(641))
    child = f"import sys; sys.stderr.write('start\\n{bars}\\n'); sys.stderr.write('done\\n')"
    monkeypatch.setattr(ex, "lm_eval_command", lambda run, config, **options: [sys.executable, "-c", child])
    config = build_config({"tasks": ["forgetting_curve"], "methods": ["vanilla"], "output_path": str(tmp_path / "out")})
    (run,) = plan_runs(config)
    outcome = ex.run_one(run, config)
    assert outcome.log.read_text().splitlines()[1:] == ["start", "scoring: 640/640", "done"]


def test_console_script_bad_input_is_one_message(tmp_path):
    proc = run([str(BIN / "lm-eval-longmem"), "sweep", str(tmp_path / "missing.yaml")], check=False)
    assert_one_message(proc, "No such sweep file", "--examples")
    bad = tmp_path / "bad.yaml"
    bad.write_text("tasks: [forgetting_curve]\nmodles: [default]\n")
    proc = run([str(BIN / "lm-eval-longmem"), "sweep", str(bad)], check=False)
    assert_one_message(proc, "unknown key(s) 'modles'", "models:")


@pytest.mark.slow  # three lm_eval starts: ~1 min on 2 quiet cores, 6 on a loaded machine
def test_a_real_sweep_skips_done_runs_survives_a_failure_and_resumes(tiny_model_dir, corpus_file, tmp_path):
    out = tmp_path / "out"
    metadata = {"fc_corpus": str(corpus_file), "fc_lengths": [8, 24], "fc_samples": 2}
    # A plain lm_eval run first: its folder is named after model and method by the hook...
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_model_dir},method=vanilla",
            "--tasks",
            "forgetting_curve",
            "--metadata",
            json.dumps(metadata),
            "--device",
            "cpu",
            "--output_path",
            str(out),
        ]
    )
    plain = list(out.glob("*/results_*.json"))
    assert [p.parent.name for p in plain] == [f"{Path(tiny_model_dir).name}__vanilla"]
    # ...and the sweep recognises it as done; a run that fails (max_length below the lengths) does not stop it.
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(
        json.dumps(
            {
                "output_path": str(out),
                "models": [str(tiny_model_dir)],
                "tasks": ["forgetting_curve"],
                "metadata": metadata,
                "device": "cpu",
                "methods": [
                    "vanilla",
                    {"name": "vanilla", "args": {"max_length": 16}},
                    {"name": "yarn", "args": {"factor": 2}},
                ],
            }
        )
    )
    proc = run([str(BIN / "lm-eval-longmem"), "sweep", str(sweep_file)], check=False)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    assert any(line.startswith("[1/3]") and "skipped, already done" in line for line in lines)
    assert any(line.startswith("[2/3]") and "FAILED after" in line and "16" in line for line in lines), proc.stdout
    assert any(line.startswith("[3/3]") and " done in " in line for line in lines), proc.stdout
    assert "sweep: 1 done, 1 skipped (already done), 1 failed of 3 runs" in proc.stdout
    (yarn_results,) = out.glob("*__yarn__factor-2/results_*.json")
    data = json.loads(yarn_results.read_text())
    assert data["config"]["longmem_method_args"]["factor"] == 2 and data["results"]["forgetting_curve"]
    assert sorted(p.name for p in out.iterdir()) == [
        ".sweep_logs",
        f"{Path(tiny_model_dir).name}__vanilla",
        f"{Path(tiny_model_dir).name}__yarn__factor-2",
    ]
    # Resuming: only the failed run is left to do.
    cfg = build_config(json.loads(sweep_file.read_text()))
    assert [finished_results(r) is not None for r in plan_runs(cfg)] == [True, False, True]


def test_sigterm_ends_a_sweep_like_ctrl_c_with_its_summary(tmp_path):
    """A scheduler's SIGTERM (time limit, scancel) stops the running lm_eval, prints the summary
    and exits 130; the runs' commands are replaced by a sleeping child to keep it fast."""
    import signal
    import subprocess
    import sys
    import time

    script = f"""
import sys
from lm_eval_longmem.sweep import execute as ex
from lm_eval_longmem.sweep.config import build_config
from lm_eval_longmem.sweep.plan import plan_runs
ex.lm_eval_command = lambda run, config, **options: [sys.executable, "-c", "import time; time.sleep(120)"]
config = build_config({{"tasks": ["forgetting_curve"], "methods": ["vanilla", "streamingllm"],
                        "output_path": {str(tmp_path / "out")!r}}})
runs = plan_runs(config)
try:
    ex.execute(runs, config, say=lambda line: print(line, flush=True))
except ex.SweepInterrupted as stop:
    print(ex.summary(stop.outcomes, len(runs)), flush=True)
    sys.exit(130)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    first = proc.stdout.readline()
    assert first.startswith("[1/2]") and first.rstrip().endswith("running"), first
    time.sleep(1.0)  # the child is sleeping now
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    rest = proc.communicate(timeout=60)[0]
    assert proc.returncode == 130, rest
    assert time.monotonic() - started < 30  # the sleeping child was killed, not waited for
    assert "[1/2]" in rest and "interrupted; rerun the same command to resume" in rest
    assert "0 done, 0 skipped (already done), 0 failed, 1 interrupted, 1 not started of 2 runs" in rest
    assert "FAILED" not in rest  # an interrupted run is not a failed one


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--tasks", "forgetting_curve", "--methods", "clex:max_factr=4"], "max_factr"),
        (["--tasks", "longmem_pasky", "--methods", "vanilla"], "Unknown task 'longmem_pasky'"),
        (["--tasks", "forgetting_curve", "--models", "/no/such/model"], "No such file or directory: '/no/such/model'"),
        (["--tasks", "forgetting_curve", "--model-args", "device=cpu"], "give it as --device cpu"),
        (["--tasks", "forgetting_curve", "--model-args", "batch_size=4"], "give it as --batch-size 4"),
        (["--tasks", "forgetting_curve", "--model-args", "dtype=float8"], "is not a torch dtype"),
        (["--tasks", "forgetting_curve", "--device", "tpu"], "'tpu' is not a device"),
    ],
    ids=[
        "misspelled-method-argument",
        "misspelled-task",
        "missing-model",
        "device-twice",
        "batch-size-twice",
        "dtype",
        "unknown-device",
    ],
)
def test_the_dry_run_refuses_what_the_runs_would(argv, expected, capsys):
    assert sweep_cli.main([*argv, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lm-eval-longmem sweep: error: ") and expected in err
    assert "Traceback (most recent call last)" not in err
    assert "LM_EVAL_LONGMEM_DEBUG" not in err  # a wrong command line is argparse's one line, no debugging hint


def test_a_model_this_machine_cannot_get_is_exit_1_with_the_hint(capsys, monkeypatch):
    """Not a wrong command line: the same sweep runs where the Hub is reachable."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    argv = ["--tasks", "forgetting_curve", "--models", "nobody-here/no-such-model", "--dry-run"]
    assert sweep_cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("lm-eval-longmem sweep: error: ") and "LM_EVAL_LONGMEM_DEBUG=1" in err
