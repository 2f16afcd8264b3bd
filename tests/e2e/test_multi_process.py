"""`accelerate launch --num_processes 2 -m lm_eval --model longmem` (CPU, gloo) splits the documents
between the two processes and gives the same results as one process: the same per-request
log-likelihoods and generations, the same metrics, one results file written by rank 0."""

import json
import re
import subprocess

import pytest

from tests.helpers.cli_runs import BIN, run, two_cpu_processes

pytestmark = pytest.mark.slow  # two lm_eval runs, one of them two processes: ~1 min on 2 quiet cores

TASKS = ["--tasks", "forgetting_curve,longmem_passkey"]


def metadata(corpus_file):
    return [
        "--metadata",
        json.dumps(
            {
                "fc_corpus": str(corpus_file),
                "fc_lengths": [8, 24, 40],
                "fc_samples": 3,
                "pk_lengths": [64, 96],
                "pk_depths": [0, 50, 100],
                "pk_samples": 1,
            }
        ),
    ]


def outputs(out):
    (results,) = out.glob("*/results_*.json")
    samples = {}
    for path in out.glob("*/samples_*.jsonl"):
        for line in path.read_text().splitlines():
            sample = json.loads(line)
            samples[(path.name.split("_20")[0], sample["doc_id"])] = sample["filtered_resps"]
    return json.loads(results.read_text()), samples


def close(a, b) -> bool:
    """Equal, but numbers (also as lm-eval writes them into samples: strings) to float32 rounding:
    one process and two do not sum in the same order (threads), e.g. -17.8719635 vs -17.8719630."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return a == b
    return x == pytest.approx(y, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("method", ["vanilla", "streamingllm,max_context_length=48,chunk_size=8,sink_length=4"])
def test_two_processes_give_the_results_of_one(tiny_model_dir, corpus_file, tmp_path, method):
    args = [
        "--model",
        "longmem",
        "--model_args",
        f"pretrained={tiny_model_dir},method={method}",
        *TASKS,
        *metadata(corpus_file),
        "--device",
        "cpu",
        "--log_samples",
        "--gen_kwargs",
        "max_gen_toks=4",
    ]
    run([str(BIN / "lm_eval"), *args, "--output_path", str(tmp_path / "one")])
    launch, env = two_cpu_processes(29541, "lm_eval")
    command = [*launch, *args, "--output_path", str(tmp_path / "two")]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    # rank 0 (the only one that shows progress) scored its share: 5 of the forgetting curve's 9
    # documents, 2 requests each, not all 18
    totals = {int(total) for total in re.findall(r"longmem scoring:[^|]*\|[^|]*\| *\d+/(\d+)", proc.stderr)}
    assert totals == {10}, totals
    (one, one_samples), (two, two_samples) = outputs(tmp_path / "one"), outputs(tmp_path / "two")
    assert one_samples.keys() == two_samples.keys() and len(one_samples) == 9 + 6
    for key, resps in one_samples.items():
        assert close(two_samples[key], resps), (key, two_samples[key], resps)  # log-likelihoods, generations
    assert close(two["results"], one["results"])
    assert two["n-samples"] == one["n-samples"]
