"""`lm-eval-longmem sweep`: run a grid of models x methods x arguments x tasks through lm_eval."""

from __future__ import annotations

import argparse
import sys

HELP = "run a grid of models x methods x method arguments x tasks through lm_eval, resumable"

EPILOG = """\
A sweep file is YAML, e.g.

  output_path: sweep_out
  models: [default]                 # the embedded SmolLM2-135M-Instruct; or Hub ids / folders
  methods:
    - vanilla
    - {name: yarn, grid: {factor: [2, 4]}}
    - {name: statedclm, args: {max_context_length: 512, chunk_size: 64}}
  tasks: [forgetting_curve]
  metadata: {fc_max_length: 1024, fc_samples: 2}
  limit: null

Each run is one `lm_eval --model longmem ... --output_path OUTPUT_PATH` process; its results
go to OUTPUT_PATH/<model>__<method>[__<non-default args>]/results_<time>.json (written under
OUTPUT_PATH/.sweep_partial/ and moved there once lm_eval has finished). Runs whose results
file already records the same model_args, tasks, limit and metadata are skipped, so an
interrupted or killed sweep resumes. Command-line values replace the file's. Shipped
examples: --examples.
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-eval-longmem sweep",
        description=HELP[0].upper() + HELP[1:] + ".",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("config", nargs="?", help="sweep YAML file (or the name of a shipped example)")
    parser.add_argument(
        "--models", nargs="+", metavar="MODEL", help="Hub ids or folders; 'default' = the embedded model"
    )
    parser.add_argument(
        "--methods", nargs="+", metavar="METHOD", help="NAME or NAME:key=value,key=value (one run each)"
    )
    parser.add_argument("--tasks", nargs="+", metavar="TASK", help="tasks evaluated together in each run")
    parser.add_argument("--per-task", action="store_true", default=None, help="one run per task")
    parser.add_argument("--metadata", nargs="+", metavar="KEY=VALUE", help="task options, as lm_eval --metadata")
    parser.add_argument("--model-args", metavar="K=V,K=V", help="added to every run's --model_args")
    parser.add_argument("--limit", type=float, help="lm_eval --limit for every run")
    parser.add_argument("--batch-size", help="lm_eval --batch_size")
    parser.add_argument("--device", help="lm_eval --device")
    parser.add_argument(
        "--output-path", "-o", help="results root (default: the file's output_path, else sweep_results)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the runs and their commands, run nothing")
    parser.add_argument("--force", action="store_true", help="run again even when a matching results file exists")
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="show lm_eval's output (always kept in OUTPUT_PATH/.sweep_logs/)"
    )
    parser.add_argument("--examples", action="store_true", help="list the shipped example sweep files and exit")
    args = parser.parse_args(argv)

    from lm_eval_longmem.errors import LongMemError, answered_exit_status, debugging

    try:
        return _sweep(args)
    except LongMemError as err:
        if debugging():
            raise
        return answered_exit_status(err, "lm-eval-longmem sweep")


def _sweep(args) -> int:
    from lm_eval_longmem.sweep import example_files

    if args.examples:
        for name, path in example_files().items():
            print(f"{name}: {path}")
        return 0

    from lm_eval_longmem.errors import INTERRUPTED_EXIT_STATUS
    from lm_eval_longmem.sweep.config import (
        SweepConfigError,
        build_config,
        load_sweep_file,
        parse_key_values,
        parse_method_token,
    )
    from lm_eval_longmem.sweep.execute import SweepInterrupted, execute, summary
    from lm_eval_longmem.sweep.plan import check_runs, display_command, finished_results, lm_eval_command, plan_runs

    raw, source = {}, "the command line"
    if args.config is not None:
        path = args.config
        examples = example_files()
        if args.config in examples and not _exists(args.config):
            path = examples[args.config]
        raw, source = load_sweep_file(path), str(path)
    elif not args.tasks:
        raise SweepConfigError(
            "Give a sweep file (lm-eval-longmem sweep FILE.yaml; --examples lists shipped ones) or at least --tasks."
        )
    if args.models:
        raw["models"] = [None if m in ("default", "none", "null") else m for m in args.models]
    if args.methods:
        raw["methods"] = [
            {"name": spec.name, "args": list(spec.settings)} for spec in map(parse_method_token, args.methods)
        ]
    for key in ("tasks", "limit", "batch_size", "device", "output_path", "per_task"):
        value = getattr(args, key)
        if value is not None:
            raw[key] = int(value) if key == "batch_size" and value.isdigit() else value
    if args.metadata:
        raw["metadata"] = {**(raw.get("metadata") or {}), **parse_key_values(args.metadata, "--metadata")}
    if args.model_args:
        raw["model_args"] = {**(raw.get("model_args") or {}), **parse_key_values(args.model_args, "--model-args")}

    config = build_config(raw, source)
    runs = plan_runs(config)
    check_runs(runs, config)  # what each run's lm_eval would refuse at start-up, refused once now
    if args.dry_run:
        print(f"{len(runs)} run(s), results under {config.output_path}/:")
        for i, run in enumerate(runs, 1):
            state = "" if args.force or finished_results(run) is None else "  (done, would be skipped)"
            print(f"[{i}/{len(runs)}] {run.label}{state}\n    {display_command(lm_eval_command(run, config))}")
        return 0

    print(f"sweep: {len(runs)} run(s), results under {config.output_path}/", flush=True)
    say = lambda line: print(line, flush=True)  # noqa: E731
    try:
        outcomes = execute(runs, config, force=args.force, verbose=args.verbose, say=say)
    except SweepInterrupted as stop:
        print(summary(stop.outcomes, len(runs)))
        return INTERRUPTED_EXIT_STATUS
    print(summary(outcomes, len(runs)))
    return 1 if any(o.status == "failed" for o in outcomes) else 0


def _exists(path: str) -> bool:
    from pathlib import Path

    return Path(path).exists()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
