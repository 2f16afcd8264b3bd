"""`lm-eval-longmem by-length`: every per-sample metric of lm-eval runs, by input-length bin."""

from __future__ import annotations

import argparse

HELP = "score every task of --log_samples runs by input-length bin, with bootstrap intervals (table and plot)"

EPILOG = """\
Reads the folders lm_eval wrote with --output_path and --log_samples (any --model: longmem,
hf, vllm), counts each sample's input tokens with the run's tokenizer (its tokenizer= or
pretrained=, the embedded default model for a longmem run without one; --tokenizer overrides),
and prints one Markdown table per task and metric, the runs side by side. A group's rows pool
its tasks' samples. Bins: powers of two (default), --bins edges (the last bin is open), or
--quantiles N (shared by every run and task, so runs compare bin by bin). Lengths take k = 1024.

examples:
  lm-eval-longmem by-length out/longbench_vanilla out/longbench_yarn --bins 0,4k,8k --plot bylen.png
  lm-eval-longmem by-length out/ruler --quantiles 4 --csv bylen.csv --json bylen.json
"""


def main(argv: list[str]) -> int:
    from lm_eval_longmem.common.bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED
    from lm_eval_longmem.report.by_length import DEFAULT_FLOOR

    parser = argparse.ArgumentParser(
        prog="lm-eval-longmem by-length",
        description=HELP[0].upper() + HELP[1:] + ".",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("results", nargs="+", help="lm-eval output folders (or results_*.json files) with samples")
    spacing = parser.add_mutually_exclusive_group()
    spacing.add_argument("--bins", metavar="EDGES", help="bin edges in tokens, increasing: 0,4k,8k,32k")
    spacing.add_argument("--quantiles", metavar="N", type=int, help="N bins of about equal sample counts")
    parser.add_argument("--metrics", metavar="NAMES", help="only these metrics, e.g. acc,exact_match (default: all)")
    parser.add_argument("--tokenizer", help="count tokens with this tokenizer (folder, Hub id, or 'default')")
    parser.add_argument(
        "--min-samples", type=int, default=DEFAULT_FLOOR, help="a bin's floor for a mean (default %(default)s)"
    )
    parser.add_argument("--level", type=float, default=DEFAULT_LEVEL, help="interval level (default %(default)s)")
    parser.add_argument(
        "--resamples", type=int, default=DEFAULT_RESAMPLES, help="bootstrap resamples (default %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed (default %(default)s)")
    parser.add_argument("--csv", metavar="FILE", help="also write the table as CSV")
    parser.add_argument("--json", metavar="FILE", help="also write the table as JSON")
    parser.add_argument("--plot", metavar="FILE", help="also draw score against length (.png, .pdf or .svg)")
    parser.add_argument("--title", help="the plot's title")
    args = parser.parse_args(argv)
    if not 0 < args.level < 1:
        parser.error(f"--level {args.level}: give a level between 0 and 1, e.g. 0.95")
    if args.resamples < 1 or args.min_samples < 1:
        parser.error("--resamples and --min-samples must be 1 or more")

    from pathlib import Path

    from lm_eval_longmem.common import length_bins
    from lm_eval_longmem.common.atomic_files import write_text
    from lm_eval_longmem.common.bootstrap import BootstrapSettings
    from lm_eval_longmem.report import by_length_render
    from lm_eval_longmem.report.by_length import build_report
    from lm_eval_longmem.report.input_lengths import LengthCounter, load_tokenizer, tokenizer_source
    from lm_eval_longmem.report.logged_samples import read_logged_runs

    if args.bins is not None:
        fixed = length_bins.bins_from_edges(args.bins)  # checked before any tokenizer loads

        def make_bins(_lengths):
            return fixed
    elif args.quantiles is not None:
        length_bins.quantile_bins([], args.quantiles)

        def make_bins(lengths):
            return length_bins.quantile_bins(lengths, args.quantiles)
    else:
        make_bins = length_bins.power_of_two_bins
    if args.plot:
        from lm_eval_longmem.report.figures import check_output

        check_output(args.plot)

    runs = read_logged_runs(args.results)
    sources = [tokenizer_source(run, args.tokenizer) for run in runs]
    lengths = []
    for run, source in zip(runs, sources):
        counter = LengthCounter(load_tokenizer(source))
        lengths.append({task: [counter.sample_length(s) for s in samples] for task, samples in run.samples.items()})
    settings = BootstrapSettings(args.level, args.resamples, args.seed)
    report = build_report(runs, lengths, make_bins, args.min_samples, settings)
    report.tokenizers = dict(zip(report.runs, map(describe_tokenizer, sources)))
    if args.metrics:
        report = only_metrics(report, args.metrics)
    print(by_length_render.to_markdown(report), end="")
    for path, render in ((args.csv, by_length_render.to_csv), (args.json, by_length_render.to_json)):
        if path:
            write_text(Path(path), render(report))
            print(f"wrote {path}")
    if args.plot:
        from lm_eval_longmem.report.by_length_plot import plot_by_length

        written, left_out = plot_by_length(report, args.plot, args.title)
        print(
            f"wrote {written}"
            + (
                f" ({left_out} task/metric tables not drawn: under two bins with a mean, or past 12)"
                if left_out
                else ""
            )
        )
    return 0


def only_metrics(report, names: str):
    """The report restricted to metrics named in `names` ("acc,exact_match": names before lm-eval's
    ",filter"); a name no task logs is a one-line mistake listing the metrics there are."""
    import dataclasses

    from lm_eval_longmem.errors import UsageError

    wanted = {name.strip() for name in names.split(",") if name.strip()}
    present = {cell.metric.split(",")[0] for cell in report.cells}
    unknown = sorted(wanted - present)
    if unknown:
        raise UsageError(
            f"--metrics: no task logs {', '.join(unknown)}; metrics there are: {', '.join(sorted(present)) or '(none)'}"
        )
    return dataclasses.replace(
        report,
        cells=[c for c in report.cells if c.metric.split(",")[0] in wanted],
        non_numeric=[n for n in report.non_numeric if n.metric.split(",")[0] in wanted],
    )


def describe_tokenizer(source: str) -> str:
    from lm_eval_longmem.models.checkpoint.default_model import DEFAULT_MODEL_NAME
    from lm_eval_longmem.report.input_lengths import DEFAULT_TOKENIZER

    if source == DEFAULT_TOKENIZER:
        return f"the tokenizer of {DEFAULT_MODEL_NAME} (the embedded default model)"
    return f"the tokenizer {source}"
