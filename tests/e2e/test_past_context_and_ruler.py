"""Inputs past the model's context, through the real `lm_eval` command (two runs, ~20 s each on
the tiny model):

* a bounded-memory method (streamingllm) on forgetting-curve lengths whose input is past the
  model's whole trained context, with no `max_length=`; per-length sizes and statuses in the
  results;
* lm-eval's own RULER generator (variable tracking, `lm_eval.tasks.ruler.vt_utils`) through
  `--model longmem` with a context-extending method: RULER's `max_seq_lengths` reaches the
  task through `--metadata`, the method raises `max_length`, and the prompts run at their full
  length. The YAML is a local copy of `ruler_vt` without its `include:` of the NIAH file, whose
  import needs the `wonderwords`/`nltk` extras (absent offline: lm-eval then stops at once with
  the command that installs them).
"""

import json

import pytest

from tests.helpers.cli_runs import BIN, results_of, run

RULER_VT_LOCAL = """\
task: ruler_vt_local
dataset_path: ""
dataset_name: ""
output_type: generate_until
test_split: test
custom_dataset: !function lm_eval.tasks.ruler.vt_utils.get_vt_dataset
doc_to_text: "{{input}}"
doc_to_target: "{{outputs}}"
gen_prefix: "{{gen_prefix}}"
target_delimiter: " "
process_results: !function lm_eval.tasks.ruler.common_utils.process_results
metric_list:
  - metric: "1024"
    aggregation: !function lm_eval.tasks.ruler.common_utils.aggregate_metrics
    higher_is_better: true
generation_kwargs:
  do_sample: false
  temperature: 0.0
  max_gen_toks: 30
  until: []
metadata:
  version: 1.0
"""


def lm_eval(*args):
    return run([str(BIN / "lm_eval"), *args])


def test_streamingllm_reads_forgetting_curve_inputs_past_the_trained_context(tiny_model_dir, corpus_file, tmp_path):
    out = tmp_path / "out"
    lm_eval(
        "--model",
        "longmem",
        "--model_args",
        f"pretrained={tiny_model_dir},method=streamingllm,max_context_length=24,chunk_size=8,sink_length=4",
        "--device",
        "cpu",
        "--tasks",
        "forgetting_curve",
        "--metadata",
        f"fc_corpus={corpus_file}",
        "fc_lengths=[40,100]",
        "fc_samples=2",
        "--output_path",
        str(out),
    )
    results = results_of(out)
    assert results["config"]["longmem_bounded_memory"] is True
    protocol = results["configs"]["forgetting_curve"]["metadata"]["protocol"]
    plan = {p["length"]: p for p in protocol["length_plan"]}
    assert protocol["training_length"] == 128 and protocol["bounded_memory"] is True
    assert (
        plan[100]["input_tokens"] == 201
        and plan[100]["beyond_training_length"]
        and not plan[40]["beyond_training_length"]
    )
    curve = results["results"]["forgetting_curve"]["curve,none"]
    assert [(p["length"], p["status"], p["num_samples"]) for p in curve["points"]] == [(40, "ok", 2), (100, "ok", 2)]
    assert curve["failed_lengths"] == [] and "copy_acc@100,none" in results["results"]["forgetting_curve"]


def test_ruler_generator_runs_at_its_full_length_through_longmem(tiny_model_dir, tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "ruler_vt_local.yaml").write_text(RULER_VT_LOCAL)
    out = tmp_path / "out"
    # yarn x16 raises the tiny model's 128 to 2048: a 1024-token RULER prompt + 30 generated fits
    # (RULER's variable tracking needs lengths past its 500-token in-context example)
    lm_eval(
        "--model",
        "longmem",
        "--model_args",
        f"pretrained={tiny_model_dir},method=yarn,factor=16",
        "--device",
        "cpu",
        "--include_path",
        str(tasks),
        "--tasks",
        "ruler_vt_local",
        "--metadata",
        "max_seq_lengths=[1024]",
        "--limit",
        "2",
        "--log_samples",
        "--output_path",
        str(out),
    )
    results = results_of(out)
    assert results["config"]["longmem_context_length"] == 2048
    assert results["results"]["ruler_vt_local"]["1024,none"] >= 0  # -1 would mean no document at 1024
    (samples,) = out.rglob("samples_ruler_vt_local_*.jsonl")
    docs = [json.loads(line) for line in samples.read_text().splitlines()]
    assert len(docs) == 2 and all(d["doc"]["max_length"] == 1024 for d in docs)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    sizes = [len(tokenizer(d["arguments"]["gen_args_0"]["arg_0"])["input_ids"]) for d in docs]
    assert all(5 * 128 < n <= 1024 - 30 for n in sizes), sizes  # whole prompts, far past the base 128, never cut

    # the same folder read by length: RULER's per-sample metric is keyed by its length ("1024"),
    # and by-length puts both prompts in the bin their re-tokenized prompts fall in
    from lm_eval_longmem.cli import main

    table = tmp_path / "bins.json"
    assert main(["by-length", str(out), "--bins", "0,512,1024", "--min-samples", "1", "--json", str(table)]) == 0
    rows = [
        r for r in json.loads(table.read_text())["rows"] if r["task"] == "ruler_vt_local" and r["metric"] == "1024,none"
    ]
    assert [(r["bin"], r["count"]) for r in rows] == [("512-1k", 2)], rows
    assert 0 <= rows[0]["mean"] <= 1


@pytest.mark.parametrize(
    "method, args, expected", [("vanilla", "", 128), ("yarn", ",factor=4", 512), ("streamingllm", "", 1 << 20)]
)
def test_max_length_that_builtin_tasks_see_per_method(tiny_model_dir, method, args, expected):
    """What lm-eval's own tasks are held to (`max_length`): a context-extending method raises it,
    a bounded-memory method takes any length; longer prompts are refused, never cut."""
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    extra = dict(pair.split("=") for pair in args.strip(",").split(",") if pair)
    lm = LongMemLM(pretrained=str(tiny_model_dir), method=method, device="cpu", **extra)
    assert lm.max_length == expected
