"""`lm-eval-longmem study`: train every method under one budget, evaluate one suite, write the
controlled study's tables and figure."""

from __future__ import annotations

import argparse
import sys

HELP = "the controlled study in one command: train every method under one budget, evaluate one suite, tabulate"

EPILOG = """\
A study file is YAML, e.g.

  base: default                      # the embedded SmolLM2-135M; or a Hub id / folder
  budget: {tokens: 4096, seq_len: 256, data: shakespeare, seed: 42}
  methods:
    - {label: base, method: vanilla}                 # training-free rows: a method and its args
    - {label: NTK-F, method: ntk, args: {factor: 4}}
    - {label: PI, recipe: tiny-pi}                   # trained rows: a training recipe
  suite:
    ppl: {lengths: [512, 1024], stride: 256, corpus: shakespeare}
    needle: {lengths: [512, 1024], depths: [0, 50, 100]}
  evaluation: {device: cpu}

Every trained row runs its recipe with the budget's base, data, length, batch, seed and steps
(so all see the same tokens in the same order), through `lm-eval-longmem train`; every row is
evaluated by stock `lm_eval` runs. Finished training and evaluations are skipped, so running
the same command again resumes. Tables and Figure 2 go to OUTPUT_PATH/tables/.
Shipped studies: --examples (run one by its name).
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-eval-longmem study",
        description=HELP[0].upper() + HELP[1:] + ".",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("config", nargs="?", help="study YAML file (or the name of a shipped study)")
    parser.add_argument("--examples", action="store_true", help="list the shipped studies and exit")
    parser.add_argument(
        "--dry-run", action="store_true", help="print every command and its estimated time here, run nothing"
    )
    parser.add_argument(
        "--without", metavar="COLUMNS", help="leave suite columns out, e.g. longbench,ruler (comma-separated)"
    )
    parser.add_argument("--output-path", "-o", help="where everything goes (default: the file's output_path)")
    parser.add_argument("--tables-only", action="store_true", help="write the tables from the results there are")
    parser.add_argument("--force", action="store_true", help="train and evaluate again even when done")
    parser.add_argument("--verbose", "-v", action="store_true", help="show the training and lm_eval output")
    args = parser.parse_args(argv)

    from lm_eval_longmem.errors import LongMemError, answered_exit_status, debugging

    try:
        return _study(args)
    except LongMemError as err:
        if debugging():
            raise
        return answered_exit_status(err, "lm-eval-longmem study")


def _study(args) -> int:
    from pathlib import Path

    from lm_eval_longmem.study import example_files
    from lm_eval_longmem.study.schema import StudyConfigError, build_study, load_study_file

    examples = example_files()
    if args.examples:
        for name, path in examples.items():
            print(f"{name}: {path}")
        return 0
    if args.config is None:
        raise StudyConfigError("Give a study file: lm-eval-longmem study FILE.yaml (--examples lists the shipped ones)")
    path = Path(args.config)
    if not path.is_file() and args.config in examples:
        path = examples[args.config]
    raw = load_study_file(path)
    if args.output_path:
        raw["output_path"] = args.output_path
    study = build_study(raw, str(path), default_name=path.stem)
    without = tuple(c.strip() for c in (args.without or "").split(",") if c.strip())

    from lm_eval_longmem.study.execute import check_launchers
    from lm_eval_longmem.study.plan import plan_study
    from lm_eval_longmem.study.suite import COLUMNS, missing_data, missing_extras, unavailable_message

    plan = plan_study(study, without)
    check_launchers(plan)
    columns = list(plan.study.suite)
    if args.tables_only:
        return _write_outputs(plan, columns)
    missing = {**missing_data(plan.study, plan.parts), **missing_extras(columns)}
    downloads = [f"{c} ({COLUMNS[c].data})" for c in columns if COLUMNS[c].lm_eval_extra]
    if args.dry_run:
        _print_plan(plan)
        if missing:  # the plan is still shown whole; the run itself refuses to start (exit 2)
            print("\nstudy: the run itself would stop before starting (exit 2): " + unavailable_message(missing))
        return 0
    if missing:
        raise StudyConfigError(unavailable_message(missing))
    if downloads:
        print(
            "study: "
            + ", ".join(downloads)
            + " download their data at first use (a machine without the Hub needs them cached first; "
            "--without " + ",".join(c for c in columns if COLUMNS[c].lm_eval_extra) + " runs the study without them)",
            flush=True,
        )
    return _run(plan, args, columns)


def _run(plan, args, columns) -> int:
    from lm_eval_longmem.errors import INTERRUPTED_EXIT_STATUS
    from lm_eval_longmem.study.execute import StudyInterrupted, execute, summary

    planned = len(plan.training) + len(plan.evaluations)
    print(
        f"study: {len(plan.study.rows)} methods ({len(plan.training)} trained), {planned} steps, "
        f"under {plan.study.output_path}/",
        flush=True,
    )
    say = lambda line: print(line, flush=True)  # noqa: E731
    try:
        outcomes = execute(plan, force=args.force, verbose=args.verbose, say=say)
    except StudyInterrupted as stop:
        print(summary(stop.outcomes, planned))
        return INTERRUPTED_EXIT_STATUS
    print(summary(outcomes, planned))
    _write_outputs(plan, columns)
    return 1 if any(o.status == "failed" for o in outcomes) else 0


def _write_outputs(plan, columns) -> int:
    from lm_eval_longmem.study.figure import draw_figure2
    from lm_eval_longmem.study.scores import read_rows
    from lm_eval_longmem.study.tables import correlations, write_tables

    rows = read_rows(plan)
    folder = plan.study.output_path / "tables"
    written = write_tables(rows, columns, folder)
    figure = draw_figure2(rows, correlations(rows, columns), folder / "figure2.png")
    print(written["markdown"].read_text(encoding="utf-8"))
    print(f"tables: {folder}/ (tables.md, {', '.join(p.name for k, p in written.items() if k != 'markdown')})")
    if figure is not None:
        print(f"figure 2: {figure}")
    return 0


def _print_plan(plan) -> None:
    from lm_eval_longmem.study import estimates
    from lm_eval_longmem.study.budget import budget_tokens
    from lm_eval_longmem.study.execute import evaluation_command_line

    study = plan.study
    device = study.evaluation.device or "cpu"
    rate, timed = estimates.matmul_rate(device)
    size = estimates.model_size(study.base, study.base_parameters)
    processes = study.budget.processes if study.budget else 1
    total = len(plan.training) + len(plan.evaluations)
    print(
        f"study {study.source}: {len(study.rows)} methods, {len(plan.training)} trained, {total} steps, "
        f"under {study.output_path}/"
    )
    print(
        f"estimates: lower bounds from the model's size ({_size(size)}) at {rate / 1e9:,.0f} GFLOP/s "
        f"({timed}, timed here){f', over {processes} processes' if processes > 1 else ''}"
    )
    step = 0
    for job in plan.training:
        step += 1
        done = "  (done, would be skipped)" if job.done() else ""
        tokens = budget_tokens(study.budget)
        flops = estimates.training_flops(size, tokens, job.overrides["seq_len"]) if size else None
        print(
            f"[{step}/{total}] train {job.row.label}: recipe {job.row.recipe}, {job.steps} steps at "
            f"{job.overrides['seq_len']} tokens, est. {estimates.duration(flops, rate, processes)}{done}"
        )
        print(f"    {job.display(study.train_launcher)}")
    for job in plan.evaluations:
        step += 1
        done = "  (done, would be skipped)" if job.results_file() is not None else ""
        reads = estimates.suite_reads(job.part.name, job.part.metadata, job.model_args, study.suite)
        flops = estimates.reading_flops(size, reads) if size else None
        print(
            f"[{step}/{total}] evaluate {job.label}: est. "
            f"{estimates.duration(flops, rate, processes if study.eval_launcher else 1)}{done}"
        )
        print(f"    {evaluation_command_line(job, plan)}")


def _size(size) -> str:
    if size is None:
        return "unknown"
    return f"{size.parameters / 1e9:.2f}B parameters" if size.parameters >= 1e9 else f"{size.parameters / 1e6:.0f}M"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
