"""`lm-eval-longmem leaderboard`: one table comparing runs across models, methods and tasks."""

from __future__ import annotations

import argparse

HELP = (
    "tabulate lm-eval results (one row per model + method + arguments + evaluation settings) as Markdown, CSV or JSON"
)

EPILOG = """\
Columns: model, method, arguments, then per task fc_fine/fc_coarse (forgetting-curve memory
lengths; ">L" = still met at the longest length, only a lower bound: Markdown and CSV write
">L", JSON the number with the column under lower_bounds), fc_exact_copy (--model hf and other
non-longmem runs, whose forgetting curve is the reduced metric: the longest L copied exactly by
>99% of samples, never above fc_fine), passkey@<L> and passkey_all,
trec@<N>shots and trec_all, topicret_first/second/third/mean, ppl@<L> (perplexity).
Each row takes each task from the newest results file of that run that has it (--all: one
row per file); files evaluated differently (--limit, --metadata, chat template, system
instruction, few-shot setting, --gen_kwargs) are separate rows, with a settings column naming
what differs and a samples column counting documents. Unreadable or foreign files are skipped with a warning.

example:
  lm-eval-longmem leaderboard out/ --sort passkey_all -o board.md
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-eval-longmem leaderboard",
        description=HELP[0].upper() + HELP[1:] + ".",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("results", nargs="+", help="results_*.json files, or folders searched recursively")
    parser.add_argument("--format", choices=("markdown", "csv", "json"), default="markdown")
    parser.add_argument("--sort", metavar="COLUMN", default=None, help="order rows by this column, best first")
    parser.add_argument("--ascending", action="store_true", help="with --sort: smallest first whatever the column")
    parser.add_argument("--all", dest="keep_all", action="store_true", help="one row per results file, not per run")
    parser.add_argument("-o", "--output", default=None, help="write the table to this file instead of stdout")
    args = parser.parse_args(argv)
    if args.ascending and args.sort is None:
        parser.error("--ascending orders the column named by --sort: add --sort COLUMN")

    from pathlib import Path

    from lm_eval_longmem.report.discovery import collect_runs, report_skipped
    from lm_eval_longmem.report.leaderboard import build_leaderboard, sort_leaderboard
    from lm_eval_longmem.report.table_render import render

    discovery = collect_runs(args.results)
    report_skipped(discovery.skipped)
    board = build_leaderboard(discovery.runs, keep_all=args.keep_all)
    report_skipped(board.skipped)
    if args.sort is not None:
        board = sort_leaderboard(board, args.sort, ascending=True if args.ascending else None)
    text = render(board, args.format)
    if args.output:
        from lm_eval_longmem.common.atomic_files import write_text

        out = Path(args.output)
        write_text(out, text)  # whole or not at all: scripts read this file
        print(f"wrote {out} ({len(board.rows)} rows)")
    else:
        print(text, end="")
    return 0
