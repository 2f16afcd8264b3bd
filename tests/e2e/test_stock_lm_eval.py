"""Through the real `lm_eval` command: plugin discovery, results file contents, --model hf."""

from pathlib import Path

import pytest

from tests.helpers.cli_runs import BIN, results_of, run, small_protocol


def test_stock_lm_eval_finds_longmem_and_forgetting_curve(tiny_model_dir, corpus_file, tmp_path):
    out = tmp_path / "out"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_model_dir},method=vanilla",
            "--tasks",
            "forgetting_curve",
            *small_protocol(corpus_file),
            "--output_path",
            str(out),
            "--log_samples",
        ],
        fresh=True,  # a new process: the .pth start-up hook itself, as a user's first run meets it
    )
    results = results_of(out)
    metrics = results["results"]["forgetting_curve"]
    curve = metrics["curve,none"]
    assert [p["length"] for p in curve["points"]] == [8, 24, 40]
    assert all(p["num_samples"] == 2 and 0 <= p["copy_mean"] <= 1 for p in curve["points"])
    assert metrics["fine_memory_length,none"] == curve["fine_memory_length"]
    assert metrics["coarse_memory_length,none"] == curve["coarse_memory_length"]
    for length in ("08", "24", "40"):
        assert {
            f"copy_acc@{length},none",
            f"lm_acc@{length},none",
            f"copy_acc_std@{length},none",
            f"lm_acc_std@{length},none",
        } <= set(metrics)
    assert metrics["copy_acc@24,none"] == pytest.approx(curve["points"][1]["copy_mean"])
    config = results["config"]
    assert config["longmem_method"] == "vanilla" and config["longmem_method_args"] == {}
    assert config["longmem_context_length"] == 128 and config["longmem_scoring"] == "split"
    protocol = results["configs"]["forgetting_curve"]["metadata"]["protocol"]
    assert protocol["lengths"] == [8, 24, 40] and protocol["seed"] == 3
    samples = list(out.rglob("samples_forgetting_curve_*.jsonl"))
    assert samples and len(samples[0].read_text().splitlines()) == 6  # 3 lengths x 2 samples


def test_model_hf_gets_the_reduced_metric_with_a_warning(tiny_model_dir, corpus_file, tmp_path):
    out = tmp_path / "out"
    proc = run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny_model_dir}",
            "--device",
            "cpu",
            "--tasks",
            "forgetting_curve",
            *small_protocol(corpus_file),
            "--output_path",
            str(out),
        ]
    )
    assert "reduced metric" in proc.stderr
    metrics = results_of(out)["results"]["forgetting_curve"]
    assert metrics["curve,none"]["mode"] == "reduced"
    assert "copy_exact@40,none" in metrics and "lm_nll@40,none" in metrics and "fine_memory_length,none" not in metrics
    board = run([str(BIN / "lm-eval-longmem"), "leaderboard", str(out)])  # on the board with what it measured
    assert "| fc_exact_copy |" in board.stdout and board.stderr == ""
    assert f"| {Path(tiny_model_dir).name} | hf |" in board.stdout  # a local model by its folder name


@pytest.mark.slow  # 17 s: lm-eval lists ~14k tasks; ours are found fast by the other tests here
def test_ls_tasks_lists_ours_and_the_builtins():
    out = run([str(BIN / "lm_eval"), "ls", "tasks"]).stdout
    assert "forgetting_curve" in out and "hellaswag" in out


def test_console_script_works_when_the_hook_is_off(tiny_model_dir, corpus_file, tmp_path):
    off = {"LM_EVAL_LONGMEM_AUTOLOAD": "0"}
    args = [
        "--model",
        "longmem",
        "--model_args",
        f"pretrained={tiny_model_dir}",
        "--tasks",
        "forgetting_curve",
        *small_protocol(corpus_file),
        "--limit",
        "2",
    ]
    # (that the opt-out switches the hook off is tests/harness/test_registration.py's)
    ours = run([str(BIN / "lm-eval-longmem"), *args, "--output_path", str(tmp_path / "o")], env_extra=off)
    assert "forgetting_curve" in ours.stdout


def test_python_api(tiny_model_dir, corpus_file):
    import lm_eval

    import lm_eval_longmem

    lm_eval_longmem.register()
    results = lm_eval.simple_evaluate(
        model="longmem",
        model_args={"pretrained": str(tiny_model_dir), "method": "vanilla", "device": "cpu"},
        tasks=["forgetting_curve"],
        metadata={"fc_corpus": str(corpus_file), "fc_lengths": [16], "fc_samples": 2},
    )
    curve = results["results"]["forgetting_curve"]["curve,none"]
    assert [p["length"] for p in curve["points"]] == [16]
