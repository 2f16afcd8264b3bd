"""Every command the README and docs quote has a declared fate in FATES, and holds to it.

* RUNS: it runs offline on the default model as written; the slow tier runs each page's RUNS
  commands in the page's order, in one fresh folder (a `plot out` after the run that made `out`).
* PARSES / needs(...): not run here (it needs a GPU, the Hub, data not cached, an extra, or a
  folder of the user's own); needs() says what.
* SYNOPSIS: a usage line with placeholders, not a command.

The fast tier parses every command but the synopses with the real parsers (lm-eval's for
`lm_eval`, each subcommand's own for `lm-eval-longmem`, the training module's, each benchmark's)
and resolves what a typo breaks: method names and arguments, task names and task options; a sweep
is dry-run. A quoted command not in FATES fails, telling the writer to add it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import runpy
import shlex
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pytest

from tests.project.quoted_commands import ROOT, Quoted, quoted_commands

RUNS = "runs offline"
PARSES = "parses"
SYNOPSIS = "a usage line, not a command"


def needs(reason: str) -> str:
    return f"needs {reason}"


HUB = needs("the Hub: a model or dataset that is not cached here")
GPU = needs("a GPU (a 7-8B model, or the study-scale fine-tune)")
BENCHMARK = needs("minutes to hours: a benchmark (tests/benchmarks run each pipeline at its smallest size)")
BOOKSUM = needs("the BookSum dataset (fetch-data booksum), not cached here")
TREC = needs("the TREC dataset (fetch-data trec), not cached here")
TOPICRET = needs("the L-Eval topic_retrieval dataset (fetch-data leval-topicret), not cached here")
LONGBENCH = needs("LongBench from the Hub, not cached here")
OWN_RESULTS = needs("result folders of the user's own (no quoted command on the page makes them)")
CHECKPOINT = needs("a trained checkpoint folder of the user's own")
CPU_HOURS = needs(
    "a GPU for time: the forgetting curve's default protocol (32 lengths up to the model's length, "
    "10 samples each) takes hours on a CPU"
)
KVPRESS = needs("the kvpress extra (installed in .venv-kvpress, not .venv)")

FATES = {
    # README.md
    "lm_eval --model longmem --model_args method=vanilla --tasks forgetting_curve --metadata fc_max_length=1024 "
    "fc_samples=2 --output_path out": RUNS,
    "lm_eval --model longmem --model_args pretrained=meta-llama/Llama-3.1-8B,method=vanilla,dtype=bfloat16 --tasks "
    "forgetting_curve --metadata fc_max_length=16000 fc_granularity=log --output_path out": GPU,
    "lm_eval --model longmem --model_args pretrained=HuggingFaceTB/SmolLM2-135M,method=yarn,factor=4 --tasks "
    "niah_single_1 --metadata max_seq_lengths=[8192,16384]": HUB,
    "lm_eval --model hf --model_args pretrained=$(lm-eval-longmem default-model) --tasks forgetting_curve --metadata "
    "fc_lengths=[64,256] fc_samples=2": RUNS,
    "lm-eval-longmem plot out -o curve.png": RUNS,
    "lm-eval-longmem plot out_vanilla out_other -o compare.png --training-length 8192": OWN_RESULTS,
    "lm-eval-longmem methods": RUNS,
    "lm-eval-longmem methods yarn": RUNS,
    "lm-eval-longmem tasks forgetting_curve": RUNS,
    "lm_eval --model longmem --model_args method=statedclm,max_context_length=512,chunk_size=64 --tasks "
    "forgetting_curve --metadata fc_lengths=[256,1024,2047] fc_samples=3": RUNS,
    "lm-eval-longmem sweep --tasks forgetting_curve --methods vanilla yarn:factor=2 streamingllm --metadata "
    "fc_max_length=1024 fc_points=3 fc_samples=2 -o out": RUNS,
    "lm-eval-longmem leaderboard out": RUNS,
    "lm_eval --model longmem --model_args method=streamingllm,max_context_length=1024,chunk_size=128 --tasks "
    "longmem_booksum --metadata bs_lengths=[1024,4096] bs_books=2 bs_greedy=true --gen_kwargs max_gen_toks=256 "
    "--apply_chat_template --output_path out_booksum": BOOKSUM,
    "lm-eval-longmem plot-booksum out_booksum -o booksum.png": BOOKSUM,
    # docs/benchmarks.md
    "python benchmarks/forgetting_curve_scoring.py": BENCHMARK,
    "python benchmarks/trec_manyshot_fixture.py": BENCHMARK,
    "python benchmarks/shared_prefix_generation.py": BENCHMARK,
    "python benchmarks/rope_extension.py": BENCHMARK,
    "python benchmarks/bounded_cache_memory.py": BENCHMARK,
    "python benchmarks/infini_memory.py": BENCHMARK,
    "python benchmarks/infini_memory.py --cli": BENCHMARK,
    "python benchmarks/forgetting_attention.py": needs("CUDA: the FoX kernel against SDPA and fla"),
    "python benchmarks/kernel_resources.py": BENCHMARK,
    "python benchmarks/perplexity_scoring.py": BENCHMARK,
    "python benchmarks/booksum_overhead.py": BENCHMARK,
    "python benchmarks/booksum_fixture.py --run": BENCHMARK,
    "python benchmarks/train_throughput.py": BENCHMARK,
    "python benchmarks/train_step_gpu.py --tiny --device cpu": BENCHMARK,
    "python benchmarks/fox_vs_transformer_loss.py": BENCHMARK,
    "python benchmarks/yarn_finetune_claim.py": BENCHMARK,
    "python benchmarks/clex_extrapolation_claim.py": BENCHMARK,
    "python benchmarks/infini_passkey_claim.py --passkey-steps 400": BENCHMARK,
    "python benchmarks/landmark_passkey_claim.py": BENCHMARK,
    "python benchmarks/method_scoring.py --tiny --device cpu": BENCHMARK,
    "python benchmarks/warm_test_commands.py": BENCHMARK,
    "python benchmarks/layer_major_scoring.py": BENCHMARK,
    "python benchmarks/recall_top_keys.py --device cuda": needs("CUDA: the Triton top-keys kernel vs PyTorch"),
    "python benchmarks/landmark_retrieval.py --device cpu": BENCHMARK,
    "python benchmarks/fisher_merge.py": BENCHMARK,
    # docs/by-length.md
    "lm_eval --model longmem --model_args method=yarn,factor=4 --tasks longbench --output_path out/yarn "
    "--log_samples": LONGBENCH,
    "lm_eval --model hf --model_args pretrained=HuggingFaceTB/SmolLM2-135M --tasks longbench --output_path out/hf "
    "--log_samples": LONGBENCH,
    "lm-eval-longmem by-length out/yarn out/hf --bins 0,4k,8k --plot by-length.png --csv by-length.csv": LONGBENCH,
    "lm_eval --model longmem --model_args method=yarn,factor=4,by_length=on --tasks longbench --output_path out/yarn": (
        LONGBENCH
    ),
    "lm-eval-longmem by-length RESULTS... [--bins EDGES | --quantiles N] [--metrics NAMES] "
    "[--tokenizer NAME]": SYNOPSIS,
    "lm_eval --model longmem --model_args method=vanilla --tasks longmem_passkey --metadata $META --output_path out "
    "--log_samples": RUNS,
    "lm_eval --model longmem --model_args method=streamingllm,max_context_length=256,sink_length=4,chunk_size=128 "
    "--tasks longmem_passkey --metadata $META --output_path out --log_samples": RUNS,
    "lm-eval-longmem by-length out/SmolLM2-135M-Instruct__vanilla out/SmolLM2-135M-Instruct__streamingllm* --bins "
    "0,384,768,1536 --min-samples 5 --metrics acc --plot by-length.png": RUNS,
    # docs/comparing-runs.md
    "lm-eval-longmem leaderboard RESULTS... [--format markdown|csv|json] [--sort COLUMN [--ascending]] [--all] "
    "[-o FILE]": SYNOPSIS,
    "lm_eval --model longmem --model_args $margs --tasks forgetting_curve,longmem_passkey --metadata "
    "fc_lengths=[32,64,128,256] fc_samples=2 fc_corpus=shakespeare pk_lengths=[128,256,512] pk_depths=[0,50,100] "
    "pk_samples=1 --output_path out": RUNS,
    "lm-eval-longmem leaderboard out --sort passkey_all": RUNS,
    "lm-eval-longmem plot out --overlay -o forgetting.pdf": RUNS,
    "lm-eval-longmem plot-passkey out -o passkey.png": RUNS,
    'lm-eval-longmem plot-trec out_vanilla out_yarn -o trec.png --title "Many-shot TREC, SmolLM2-135M"': OWN_RESULTS,
    "lm-eval-longmem plot-perplexity out -o perplexity.png": OWN_RESULTS,
    "lm-eval-longmem plot-booksum out_vanilla out_infini -o booksum.png": OWN_RESULTS,
    # docs/gpu.md
    "./scripts/gpu-wheels.sh": needs("PyPI: it downloads the wheels a GPU machine lacks"),
    "./scripts/gpu-check.sh [--quick] [--out DIR] [--only PART,...]": SYNOPSIS,
    "./scripts/gpu-check.sh --dry-run": RUNS,
    # docs/methods/ (the statedclm example is the README's, above)
    "lm_eval --model longmem --model_args method=statedclm --tasks forgetting_curve": CPU_HOURS,
    "lm_eval --model longmem --model_args method=streamingllm,max_context_length=2048 --tasks "
    "forgetting_curve": CPU_HOURS,
    "lm_eval --model longmem --model_args pretrained=meta-llama/Llama-3.1-8B-Instruct,method=longcache,"
    "top_k_prime=96 ...": GPU,
    "lm_eval --model longmem --model_args pretrained=zhixuan-lin/fox-pro-760m-longcrawl64-48b,dtype=bfloat16 --tasks "
    "forgetting_curve --metadata fc_max_length=8191 --output_path out": HUB,
    "lm_eval --model longmem --model_args pretrained=zhixuan-lin/transformer-pro-760m-longcrawl64-48b,dtype=bfloat16 "
    "--tasks forgetting_curve --metadata fc_max_length=8191 --output_path out": HUB,
    "lm_eval --model longmem --model_args pretrained=path/to/fox,method=fox --tasks longmem_passkey": CHECKPOINT,
    "lm_eval --model longmem --model_args method=infini --tasks longmem_passkey": RUNS,
    "lm_eval --model longmem --model_args method=infini,segment_length=1024,update=delta --tasks forgetting_curve "
    "--metadata fc_lengths=[1024,4096,16384] fc_samples=3": RUNS,
    "lm_eval --model longmem --model_args pretrained=runs/infini-export --tasks longmem": CHECKPOINT,
    "lm-eval-longmem methods kvpress": RUNS,
    "lm_eval --model longmem --model_args method=kvpress,press=snapkv,compression_ratio=0.75,window_size=64 --tasks "
    "forgetting_curve,longmem_passkey": KVPRESS,
    "lm_eval --model longmem --model_args method=kvpress,press=adakv,inner=snapkv,compression_ratio=0.75 ...": KVPRESS,
    "lm_eval --model longmem --model_args pretrained=runs/landmark/export --tasks longmem_passkey": CHECKPOINT,
    "lm_eval --model longmem --model_args pretrained=runs/landmark/export,method=landmark,top_k=3 --tasks "
    "forgetting_curve": CHECKPOINT,
    "lm_eval --model longmem --model_args pretrained=runs/landmark/export,retrieval=false --tasks longmem_passkey": (
        CHECKPOINT
    ),
    "lm-eval-longmem train landmark": GPU,
    "lm_eval --model longmem --model_args method=yarn,factor=2 --tasks forgetting_curve --metadata "
    "fc_max_length=8000": CPU_HOURS,
    "lm_eval --model longmem --model_args pretrained=meta-llama/Llama-2-7b-hf,method=dynamic_ntk,s=4,"
    "training_length=32768 --tasks ruler": GPU,
    "lm_eval --model longmem --model_args method=self_extend,window=2048,group=32,attn_implementation=eager --tasks "
    "forgetting_curve": CPU_HOURS,
    "lm_eval --model longmem --model_args method=lm_infinite,global_tokens=10,local_window=4096 --tasks "
    "forgetting_curve": CPU_HOURS,
    "lm_eval --model longmem --model_args pretrained=DAMO-NLP-SG/CLEX-7B-16K --tasks forgetting_curve": GPU,
    "lm_eval --model longmem --model_args pretrained=meta-llama/Llama-2-7b-hf,method=clex,max_factor=8 --tasks "
    "ruler": GPU,
    # docs/model.md
    "lm_eval --model hf --model_args pretrained=$(lm-eval-longmem default-model) --tasks forgetting_curve": CPU_HOURS,
    "lm_eval --model longmem --model_args method=yarn,factor=4,overlength=middle --tasks longbench_qasper": LONGBENCH,
    # docs/study.md
    "lm-eval-longmem study --examples": RUNS,
    "lm-eval-longmem study tiny --dry-run": RUNS,
    "lm-eval-longmem study tiny": needs(
        "time and disk: 17 steps, 8 min on 2 quiet cores and 13 GB; tests/study runs a smaller study end to end"
    ),
    "lm-eval-longmem study my_study.yaml --without longbench,ruler": needs("a study file of the user's own"),
    "lm-eval-longmem study my_study.yaml --tables-only": needs("a study file of the user's own"),
    # docs/sweeps.md
    "lm-eval-longmem sweep --examples": RUNS,
    "lm-eval-longmem sweep bounded_caches --dry-run": RUNS,
    "lm-eval-longmem sweep bounded_caches": RUNS,
    "lm-eval-longmem leaderboard sweep_bounded": RUNS,
    # docs/tasks/
    "lm_eval --model longmem --model_args method=vanilla --tasks longmem --output_path out": needs(
        "the BookSum, TREC and L-Eval datasets the group's tasks read, not cached here"
    ),
    "lm_eval --model longmem --tasks longmem_passkey --metadata pk_lengths=[1024,4096,8000] pk_samples=5": needs(
        "a GPU for time: 75 prompts up to 8,000 tokens, 9x the default's tokens; unfinished after 29 min on 2 "
        "shared cores (load about 10, 10 min of CPU)"
    ),
    "lm_eval --model longmem --model_args method=yarn,factor=4 --tasks longmem_perplexity": needs(
        "a GPU for time: the default grid tops at YaRN's 4x length (32k tokens); over 15 minutes on 2 CPU cores"
    ),
    "lm_eval --model longmem --model_args method=streamingllm --tasks longmem_perplexity --metadata "
    "ppl_lengths=[2048,8192,16384]": RUNS,
    "lm_eval --model longmem --model_args method=vanilla --tasks longmem_topicret --metadata "
    "topicret_overlong=skip": TOPICRET,
    "lm_eval --model longmem --model_args method=vanilla --tasks longmem_trec_manyshot --metadata "
    "trec_shots=[1,10,50,100] trec_questions=100": TREC,
    "lm_eval --model longmem --model_args method=vanilla --tasks longmem_trec_manyshot --metadata "
    "trec_source=sample trec_shots=[1,8] trec_questions=5": RUNS,
    # docs/training.md
    "lm-eval-longmem train --help": RUNS,
    "lm-eval-longmem train tiny-yarn": RUNS,
    "lm-eval-longmem train yarn output_dir=runs/yarn lr=1e-5 method_args.factor=8": GPU,
    "accelerate launch --config_file fsdp.yaml -m lm_eval_longmem_training yarn grad_accum_steps=4": needs(
        "8 GPUs and an accelerate FSDP config file of the user's own"
    ),
    "lm_eval --model longmem --model_args pretrained=runs/yarn/export --tasks longmem_passkey": needs(
        "the export of the GPU fine-tune above"
    ),
}

QUOTED = quoted_commands()


def test_every_quoted_command_has_a_declared_fate():
    assert len(QUOTED) >= 80, "the scan found too few quoted commands: the pattern no longer matches"
    new = sorted({f"{q.page}:{q.line}: {q.command}" for q in QUOTED if q.command not in FATES})
    assert not new, (
        "commands the docs quote without a fate: add each to FATES in tests/project/test_quoted_commands.py "
        "(RUNS if it runs offline on the default model, else needs(why)):\n" + "\n".join(new)
    )
    quoted = {q.command for q in QUOTED}
    stale = [command for command in FATES if command not in quoted]
    assert not stale, "FATES entries no page quotes any more (remove them):\n" + "\n".join(stale)


class Parsed(Exception):
    def __init__(self, namespace):
        self.namespace = namespace


@contextmanager
def parse_only():
    """Every argparse parser works as it does, but the outermost parse raises `Parsed` with its
    namespace instead of returning: the command is parsed by its own parser and nothing runs."""
    real_args, real_known = argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args
    depth = 0

    def wrap(real):
        def parse(self, *args, **kwargs):
            nonlocal depth
            depth += 1
            try:
                result = real(self, *args, **kwargs)
            finally:
                depth -= 1
            if depth == 0:
                raise Parsed(result[0] if isinstance(result, tuple) else result)
            return result

        return parse

    with (
        mock.patch.object(argparse.ArgumentParser, "parse_args", wrap(real_args)),
        mock.patch.object(argparse.ArgumentParser, "parse_known_args", wrap(real_known)),
    ):
        yield


def parsed_by(main, argv: list[str]) -> argparse.Namespace:
    with parse_only():
        try:
            main(argv)
        except Parsed as parsed:
            return parsed.namespace
        except SystemExit as exit:
            if exit.code == 0:  # --help, answered by the real parser
                return argparse.Namespace()
            pytest.fail(f"its parser refused {shlex.join(argv)} (exit {exit.code})")
    pytest.fail(f"{shlex.join(argv)} parsed nothing")


def check_lm_eval(words: list[str], lm_eval_tasks: set[str]) -> None:
    """lm-eval's own parser, then what `lm_eval`'s start-up check resolves: our tasks' options,
    every method name and argument; lm-eval's own task names are collected to check at once."""
    from lm_eval._cli import HarnessCLI

    from lm_eval_longmem.harness.preflight import check_method_arguments, check_task_options, local_config_folder
    from lm_eval_longmem.tasks import registry

    cli = HarnessCLI()
    args = words[1:] if words[1] in cli._subparsers.choices else ["run", *words[1:]]
    parsed = cli._parser.parse_args(args)
    model_args = dict(parsed.model_args or {})
    options = {**model_args, **(parsed.metadata or {})}
    tasks = parsed.tasks or []
    check_task_options(tasks, options)
    lm_eval_tasks.update(t for t in tasks if registry.find(t) is None and not registry.group_entries(t))
    if parsed.model != "longmem" or "method" not in model_args:
        return  # no method, or the checkpoint's own (read when it loads)
    if model_args["method"] == "kvpress" and importlib.util.find_spec("kvpress") is None:
        return  # checked where the kvpress extra is installed (.venv-kvpress)
    if local_config_folder(model_args.get("pretrained")) is None:
        model_args.pop("pretrained", None)  # a Hub model or a folder of the user's: checked on the default model
    check_method_arguments(model_args)


def check_longmem(words: list[str]) -> None:
    from lm_eval_longmem.cli import find_subcommand

    name, argv = words[1], words[2:]
    command = find_subcommand(name)
    assert command is not None, f"no subcommand {name!r}"
    parsed = parsed_by(command.main, argv)
    if name == "methods" and parsed.name:
        from lm_eval_longmem.models.method_registry import method_names

        assert parsed.name in method_names(), f"no method {parsed.name!r}"
    if name == "train":
        check_training(argv)
    if name == "tasks" and parsed.name:
        from lm_eval_longmem.tasks import registry

        assert registry.find(parsed.name) or registry.group_entries(parsed.name), f"no task {parsed.name!r}"
    if name == "sweep" and "--examples" not in argv and "--dry-run" not in argv:
        argv = [*argv, "--dry-run"]
    if name == "sweep" and "--examples" not in argv:
        assert command.main(argv) == 0, "its dry run refuses it"


def check_benchmark(words: list[str]) -> None:
    script = ROOT / words[1]
    assert script.is_file(), f"no {words[1]}"
    with (
        mock.patch.object(sys, "argv", [str(script), *words[2:]]),
        mock.patch.object(sys, "path", [str(script.parent), *sys.path]),
    ):
        parsed_by(lambda _: runpy.run_path(str(script), run_name="__main__"), words[2:])


def check_training(argv: list[str]) -> None:
    """The training module's parser, then the recipe with its overrides, every key checked (as the
    command does before torch loads; paths are the user's, not checked here)."""
    from lm_eval_longmem_training.cli import main
    from lm_eval_longmem_training.recipes.loading import load_recipe

    parsed = parsed_by(main, argv)
    if getattr(parsed, "recipe", None):
        load_recipe(parsed.recipe, parsed.overrides)


def unknown_lm_eval_tasks(names: set[str]) -> str:
    """lm-eval's message naming each unknown task (with the closest names), or ''."""
    from lm_eval_longmem.harness.cli_mistakes import unknown_tasks_message
    from lm_eval_longmem.harness.lm_eval_patches import install, triggered_by

    install(triggered_by("lm_eval.tasks.manager"))  # our task folder and lm-eval's cached index, as lm_eval has them
    return (unknown_tasks_message(sorted(names)) or "") if names else ""


def test_every_quoted_command_parses_and_names_real_methods_and_tasks(capsys):
    failures, lm_eval_tasks = [], set()
    for quoted in QUOTED:
        if FATES.get(quoted.command) in (SYNOPSIS, None):
            continue
        for words in quoted.word_lists():
            words = [w for w in words if w != "..."]  # "and the rest as above"
            try:
                if words[0] == "lm_eval":
                    check_lm_eval(words, lm_eval_tasks)
                elif words[0] == "lm-eval-longmem":
                    check_longmem(words)
                elif words[0] == "python":
                    check_benchmark(words)
                elif words[0] == "accelerate":
                    check_training(words[words.index("lm_eval_longmem_training") + 1 :])
                else:
                    assert (ROOT / words[0]).is_file(), f"no {words[0]}"
            except (Exception, SystemExit, pytest.fail.Exception) as error:  # noqa: BLE001 - each failure is reported
                failures.append(f"{quoted.page}:{quoted.line}: {quoted.command}\n    {error}")
    if message := unknown_lm_eval_tasks(lm_eval_tasks):
        failures.append(message)
    capsys.readouterr()
    assert not failures, "quoted commands that would fail as written:\n" + "\n".join(failures)


def test_the_check_catches_a_typo_in_a_method_argument_and_a_task_name():
    from lm_eval_longmem.errors import LongMemError

    with pytest.raises(LongMemError, match="facter"):
        check_lm_eval(shlex.split("lm_eval --model longmem --model_args method=ntk,facter=4 --tasks x"), set())
    with pytest.raises(LongMemError):
        check_lm_eval(shlex.split("lm_eval --model longmem --tasks forgetting_curve --metadata fc_samplez=2"), set())
    with pytest.raises(pytest.fail.Exception, match="refused"):
        check_longmem(shlex.split("lm-eval-longmem leaderboard out --sortt x"))
    with pytest.raises(LongMemError, match="nosuch"):
        check_lm_eval(shlex.split("lm_eval --model longmem --model_args method=nosuch --tasks forgetting_curve"), set())
    with pytest.raises(Exception, match="factr"):
        check_longmem(shlex.split("lm-eval-longmem train tiny-yarn method_args.factr=8"))
    with pytest.raises(AssertionError, match="no method"):
        check_longmem(shlex.split("lm-eval-longmem methods yarnn"))
    lm_eval_tasks = set()
    check_lm_eval(shlex.split("lm_eval --model longmem --tasks longmem_pasky,niah_single_1"), lm_eval_tasks)
    assert lm_eval_tasks == {"longmem_pasky", "niah_single_1"}  # not ours: lm-eval's index decides, below
    unknown = unknown_lm_eval_tasks(lm_eval_tasks)
    assert "longmem_pasky" in unknown and "niah_single_1" not in unknown, unknown


def pages_that_run() -> list[str]:
    return sorted({q.page for q in QUOTED if FATES.get(q.command) == RUNS})


@pytest.mark.slow
@pytest.mark.timeout(3 * 3600)  # a page's commands as written: the README's and the study's take long on a CPU
@pytest.mark.parametrize("page", pages_that_run())
def test_the_page_s_offline_commands_run_as_written(page, tmp_path):
    """Each RUNS command of the page, in the page's order, in one folder, through bash (as a user
    pastes it: the block's shell variables set first), with this venv's commands on PATH."""
    environment = {
        **os.environ,
        "PATH": f"{Path(sys.executable).absolute().parent}{os.pathsep}{os.environ['PATH']}",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    for quoted in (q for q in QUOTED if q.page == page and FATES[q.command] == RUNS):
        run_quoted(quoted, tmp_path, environment)


def run_quoted(quoted: Quoted, folder: Path, environment: dict) -> None:
    command = quoted.command
    if command.startswith("./scripts/"):
        command = f"{ROOT}/{command[2:]}"
    used = {name: values for name, values in quoted.variables.items() if f"${name}" in command}
    loops = {name: values for name, values in used.items() if len(values) > 1}  # `for margs in A B; do`
    script = "set -e\n" + "".join(
        f"{name}={shlex.quote(values[0])}\n" for name, values in used.items() if name not in loops
    )
    script += "".join(f"for {name} in {shlex.join(values)}; do\n" for name, values in loops.items())
    script += command + "\n" + "done\n" * len(loops)
    done = subprocess.run(["bash", "-c", script], cwd=folder, env=environment, capture_output=True, text=True)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "Traceback" not in output, (
        f"{quoted.page}:{quoted.line}: {command}\n{output[-3000:]}"
    )
