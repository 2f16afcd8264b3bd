"""benchmarks/kvpress_vs_bounded.py: its pure parts (kept-entries arithmetic, budgets, intervals,
tables) in any environment, and its smallest configuration end to end (two presses, one bounded
cache and vanilla through the real tasks) where kvpress is installed."""

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.markers import requires_kvpress

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "kvpress_vs_bounded.py"


@pytest.fixture(scope="module")
def bench():
    if str(SCRIPT.parent) not in sys.path:  # as when run as a script: its helpers sit beside it
        sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("kvpress_vs_bounded", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


# --- pure parts ------------------------------------------------------------------------------
def test_kept_entries_follow_kvpress_int_truncation(bench):
    assert bench.kept_entries(386, 0.75) == 96  # 96.5 truncated, as kvpress's compute_n_kept
    assert bench.kept_entries(385, 0.75) == 96
    assert bench.kept_entries(769, 0.75) == 192
    assert bench.kept_entries(1023, 0.75) == 255
    assert bench.kept_entries(3, 0.75) == 1  # never empties a layer below ratio 1
    assert bench.kept_entries(100, 1.0) == 0
    assert bench.kept_entries(100, 0.5) == 50


def test_press_prefill_is_the_context_less_its_last_token(bench):
    # forgetting curve context [bos] S [bos] S[:floor(L/2)]: 2L + 2 - ceil(L/2) tokens; ceil(L/2) scored
    assert [bench.fc_prefill_tokens(L) for L in (64, 256, 512, 7)] == [97, 385, 769, 11]
    assert [bench.fc_scored_tokens(L) for L in (64, 256, 7)] == [32, 128, 4]
    assert bench.pk_prefill_tokens(509) == 508


@pytest.mark.parametrize("budget", [24, 63, 96, 127, 192, 255, 1024])
@pytest.mark.parametrize("method", ["statedclm", "streamingllm", "longcache"])
def test_bounded_settings_are_accepted_by_the_methods(bench, method, budget):
    from lm_eval_longmem.models.method_registry import build_method

    settings = bench.bounded_settings(method, budget)
    assert settings["max_context_length"] == budget
    assert settings["chunk_size"] == min(32, budget // 4) and settings["sink_length"] == 4
    built = build_method(method, {k: v for k, v in settings.items() if k != "method"})
    assert built.args.max_context_length == budget
    if method == "longcache":
        assert settings["span_size"] == min(32, budget // 8)
        assert built.args.local_window >= 1


def test_pyramidkv_uniform_fallback_matches_kvpress_condition(bench):
    assert bench.pyramid_is_uniform(386, 0.75)  # budget 96.5: min_num 4.8 < window 64
    assert bench.pyramid_is_uniform(1023, 0.75)
    assert not bench.pyramid_is_uniform(8192, 0.75)  # budget 2048: min_num 102 >= 64
    assert not bench.pyramid_is_uniform(386, 0.75, window_size=16, beta=4)


def test_wilson_interval_by_hand(bench):
    low, high = bench.wilson_interval(0, 6)
    assert low == 0.0 and high == pytest.approx(0.3903, abs=1e-4)
    low, high = bench.wilson_interval(6, 6)
    assert high == pytest.approx(1.0) and low == pytest.approx(0.6097, abs=1e-4)
    assert bench.wilson_interval(5, 10) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    assert all(math.isnan(x) for x in bench.wilson_interval(0, 0))


def test_bootstrap_interval(bench):
    values = [0.1, 0.4, 0.5, 0.9, 0.6]
    low, high = bench.bootstrap_interval(values)
    assert low < sum(values) / len(values) < high and 0.1 <= low and high <= 0.9
    assert bench.bootstrap_interval(values) == (low, high)  # seeded
    assert bench.bootstrap_interval([0.3, 0.3]) == (0.3, 0.3)
    assert bench.bootstrap_interval([0.7]) == (0.7, 0.7)
    assert all(math.isnan(x) for x in bench.bootstrap_interval([]))


def _fake_report(bench):
    def fc(kept, copies):
        return {
            "kept": kept,
            "mean": sum(copies) / len(copies),
            "interval": list(bench.bootstrap_interval(copies)),
            "samples": [{"length": 64, "sample": i, "copy": c} for i, c in enumerate(copies)],
        }

    def pk(kept, correct):
        return {
            "kept": kept,
            "mean": sum(correct) / len(correct),
            "interval": list(bench.wilson_interval(sum(correct), len(correct))),
            "samples": [{"length": 256, "depth": 50, "sample": i, "correct": c} for i, c in enumerate(correct)],
        }

    failed = {"kept": 24, "mean": None, "interval": None, "error": "RuntimeError: boom"}
    return {
        "fc_lengths": [64],
        "pk_lengths": [256],
        "rows": [
            {
                "label": "vanilla (full cache)",
                "kind": "reference",
                "name": "vanilla",
                "fields": {},
                "cells": {"fc@64": fc(98, [1.0, 0.8]), "pk@256": pk([251, 252], [1.0, 1.0])},
            },
            {
                "label": "kvpress snapkv",
                "kind": "press",
                "name": "snapkv",
                "fields": {},
                "cells": {"fc@64": fc(24, [0.5, 0.4]), "pk@256": pk([62, 62], [1.0, 0.0])},
            },
            {
                "label": "kvpress observed_attention",
                "kind": "press",
                "name": "observed_attention",
                "fields": {},
                "error": "RuntimeError: boom",
                "cells": {"fc@64": failed, "pk@256": dict(failed, kept=[62, 62])},
            },
            {
                "label": "streamingllm (ours, bounded)",
                "kind": "bounded",
                "name": "streamingllm",
                "fields": {},
                "error": "RuntimeError: boom",
                "cells": {"fc@64": fc(24, [0.25, 0.2]), "pk@256": dict(failed, kept=62)},
            },
        ],
    }


def test_tables_render_every_row_and_failures_in_one_line(bench):
    report = _fake_report(bench)
    bench.paired_differences(report)
    table = bench.render_table(report).splitlines()
    assert table[0] == "| method | kept fc L=64 | kept pk 256 | fc copy acc L=64 | passkey acc 256 |"
    assert table[1] == "|---|---:|---:|---:|---:|"
    assert table[2].startswith("| vanilla (full cache) | 98 | 251-252 | 0.90 [")
    assert table[3].startswith("| kvpress snapkv | 24 | 62 | 0.45 [") and "0.50 [0.09, 0.91]" in table[3]
    assert table[4] == "| kvpress observed_attention | failed: RuntimeError: boom | | | |"
    assert table[5].startswith("| streamingllm (ours, bounded) | 24 | 62 | 0.23 [") and table[5].endswith("| failed |")
    assert all(line.count("|") == table[0].count("|") for line in table)
    report["rows"][2]["error"] = "ValueError: a|b"
    assert (
        bench.render_table(report).splitlines()[4] == "| kvpress observed_attention | failed: ValueError: a\\|b | | | |"
    )

    snap = report["rows"][1]["vs_vanilla"]
    assert snap["fc@64"]["difference"] == pytest.approx(-0.45) and snap["fc@64"]["pairs"] == 2
    assert snap["pk@256"]["difference"] == pytest.approx(-0.5)
    assert snap["fc_ratio"] == pytest.approx(0.5) and snap["pk_ratio"] == pytest.approx(0.5)
    diffs = bench.render_differences(report).splitlines()
    assert diffs[0] == "| method | Δ fc L=64 | Δ passkey 256 | fc ratio | passkey ratio |"
    assert diffs[2].startswith("| kvpress snapkv | -0.45 [") and diffs[2].endswith("| 0.50x | 0.50x |")
    assert diffs[3] == "| kvpress observed_attention | n/a | n/a | n/a | n/a |"
    assert [line.split(" | ")[0] for line in diffs[2:]] == [
        "| kvpress snapkv",
        "| kvpress observed_attention",
        "| streamingllm (ours, bounded)",
    ]


def test_from_json_prints_a_finished_run_again(bench, tmp_path, capsys):
    report = _fake_report(bench)
    for row in report["rows"]:
        for key, cell in row["cells"].items():
            if key.startswith("fc") and cell.get("mean") is not None:
                cell["lm_mean"] = 0.3
    report.update(
        compression_ratio=0.75,
        total_minutes=1.5,
        versions={"torch": "x", "transformers": "y", "kvpress": "z"},
        settings={
            "corpus": "shakespeare",
            "seed": 0,
            "fc_samples": 2,
            "pk_depths": [50],
            "pk_samples": 2,
            "sink_length": 4,
        },
        contexts={
            "fc": {
                "64": {
                    "context_tokens": 98,
                    "prefill_tokens": 97,
                    "scored_tokens": 32,
                    "input_tokens": 129,
                    "press_kept": 24,
                    "bounded_budget": 24,
                }
            },
            "pk": {
                "256": {
                    "prompt_tokens": [252, 253],
                    "prefill_tokens": [251, 252],
                    "press_kept": [62, 63],
                    "bounded_budget": 63,
                }
            },
        },
    )
    path = tmp_path / "run.json"
    path.write_text(json.dumps(report))
    again = bench.main(["--from-json", str(path)])
    printed = capsys.readouterr().out
    assert again["table_markdown"] in printed and again["differences_markdown"] in printed
    assert "- forgetting curve L=64: input 129 tokens, context 98" in printed
    assert "press kept 24 -> bounded B=24, chunk 6" in printed
    assert (
        "- passkey 256: prompts 252-253 tokens, press prefill 251-252" in printed
        and "bounded B=63, chunk 15" in printed
    )
    assert "across rows: L=64 0.30-0.30" in printed
    assert "- kvpress observed_attention: RuntimeError: boom" in printed


def test_press_specs_carry_typed_fields(bench):
    row = bench.parse_press("pyramidkv:window_size=16,beta=4")
    assert (row.name, row.fields, row.kind) == ("pyramidkv", {"window_size": 16, "beta": 4}, "press")
    assert bench.press_model_args(row, 0.75) == {
        "method": "kvpress",
        "press": "pyramidkv",
        "compression_ratio": 0.75,
        "window_size": 16,
        "beta": 4,
    }
    assert [r.kind for r in bench.plan_rows(["snapkv"], ["statedclm"])] == ["reference", "press", "bounded"]


@pytest.mark.skipif(importlib.util.find_spec("kvpress") is not None, reason="kvpress is installed here")
def test_without_kvpress_it_says_how_to_get_it_in_one_line():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'lm-eval-longmem[kvpress]'" in lines[0]
    assert "VENV=.venv-kvpress SETUP_EXTRAS=dev,kvpress ./scripts/setup.sh" in lines[0] and "--no-kvpress" in lines[0]


# --- end to end ------------------------------------------------------------------------------
@requires_kvpress
@pytest.mark.slow  # the real SmolLM2-135M through seven runs: the slow tier, in .venv-kvpress
def test_quick_run_end_to_end(tmp_path):
    from kvpress.utils import compute_n_kept

    out = tmp_path / "kvb.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--presses",
            "snapkv",
            "knorm",
            "--bounded",
            "streamingllm",
            "--out-json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["versions"]["kvpress"] and report["versions"]["transformers"] and report["versions"]["torch"]
    assert [r["label"] for r in report["rows"]] == [
        "vanilla (full cache)",
        "kvpress snapkv",
        "kvpress knorm",
        "streamingllm (ours, bounded)",
    ]
    fc_context = report["contexts"]["fc"]["64"]
    assert (fc_context["context_tokens"], fc_context["prefill_tokens"]) == (98, 97)
    assert fc_context["press_kept"] == compute_n_kept(97, 0.75) == 24
    pk_context = report["contexts"]["pk"]["256"]
    assert pk_context["prefill_tokens"][1] == pk_context["prompt_tokens"][1] - 1
    assert pk_context["press_kept"][1] == compute_n_kept(pk_context["prefill_tokens"][1], 0.75)
    for row in report["rows"]:
        assert row["error"] is None, row["error"]
        for key, cell in row["cells"].items():
            assert 0.0 <= cell["mean"] <= 1.0 and cell["interval"][0] <= cell["mean"] <= cell["interval"][1], (
                key,
                cell,
            )
            assert len(cell["samples"]) == 1
        if row["kind"] == "press":
            assert row["cells"]["fc@64"]["measured_kept"] == [24] * 30  # every layer of SmolLM2-135M
        if row["kind"] != "reference":
            assert row["cells"]["fc@64"]["kept"] == 24
            assert -1.0 <= row["vs_vanilla"]["fc@64"]["difference"] <= 1.0
    bounded = report["rows"][3]["cells"]
    assert bounded["fc@64"]["model_args"] == {
        "method": "streamingllm",
        "max_context_length": 24,
        "chunk_size": 6,
        "sink_length": 4,
    }
    assert bounded["pk@256"]["model_args"]["max_context_length"] == pk_context["bounded_budget"]

    lines = proc.stdout.splitlines()
    header = lines.index("| method | kept fc L=64 | kept pk 256 | fc copy acc L=64 | passkey acc 256 |")
    assert [line.split(" | ")[0] for line in lines[header + 2 : header + 6]] == [
        "| vanilla (full cache)",
        "| kvpress snapkv",
        "| kvpress knorm",
        "| streamingllm (ours, bounded)",
    ]
    assert lines[header + 3].startswith("| kvpress snapkv | 24 | ")
    assert report["table_markdown"] in proc.stdout and report["differences_markdown"] in proc.stdout
