"""`longmem_booksum` offline: writes the test fixture (three of Aesop's fables in BookSum's
schema, summaries written for the tests: TEST DATA, not BookSum; tests/helpers/booksum_fixture.py)
to a folder, prints the `lm_eval` command that reads it, and with `--run` runs that command's
evaluation on the embedded SmolLM2-135M-Instruct through lm-eval's API.

    python benchmarks/booksum_fixture.py [--out DIR] [--run] [--no-chat-template] [--method vanilla]

The default model is an instruct model: without its chat template it answers its end-of-turn
token at once and every Rouge is 0 (the run warns, with the count of empty answers);
`--no-chat-template` shows that. The numbers are not comparable with the paper's.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

LENGTHS = [64, 256]
MAX_GEN_TOKS = 48


def command(data: Path, method: str, chat_template: bool) -> list[str]:
    """The `lm_eval` command line for the fixture in `data`."""
    return [
        "lm_eval",
        "--model",
        "longmem",
        "--model_args",
        f"method={method}",
        "--tasks",
        "longmem_booksum",
        "--metadata",
        f"bs_lengths=[{','.join(map(str, LENGTHS))}]",
        "bs_books=3",
        "bs_greedy=true",
        f"bs_data={data}",
        "--gen_kwargs",
        f"max_gen_toks={MAX_GEN_TOKS}",
        *(["--apply_chat_template"] if chat_template else []),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("booksum_fixture"), help="folder to write test.parquet to")
    parser.add_argument("--run", action="store_true", help="also run the evaluation (a few minutes on a CPU)")
    parser.add_argument("--method", default="vanilla")
    parser.add_argument("--no-chat-template", action="store_true", help="plain-text prompts (empty answers)")
    args = parser.parse_args(argv)

    from tests.helpers.booksum_fixture import write_booksum_fixture

    data = write_booksum_fixture(args.out.resolve())
    chat_template = not args.no_chat_template
    print(f"wrote {data / 'test.parquet'} (TEST DATA in BookSum's schema, not BookSum)")
    print("run it with:\n  " + shlex.join(command(data, args.method, chat_template)))
    if not args.run:
        return 0

    import lm_eval

    import lm_eval_longmem
    from lm_eval_longmem.tasks.buckets import bucket_tag, tag_width

    lm_eval_longmem.register()
    start = time.perf_counter()
    results = lm_eval.simple_evaluate(
        model="longmem",
        model_args={"method": args.method, "device": "cpu"},
        tasks=["longmem_booksum"],
        metadata={"bs_lengths": LENGTHS, "bs_books": 3, "bs_greedy": True, "bs_data": str(data)},
        gen_kwargs=f"max_gen_toks={MAX_GEN_TOKS}",
        apply_chat_template=chat_template,
    )
    seconds = time.perf_counter() - start
    metrics = results["results"]["longmem_booksum"]
    empty = results.get("empty_generations", {}).get("longmem_booksum", {})
    template = "with" if chat_template else "without"
    print(f"\nSmolLM2-135M-Instruct ({args.method}, {template} its chat template) on the FIXTURE fables:")
    for length in LENGTHS:
        tag = "len" + bucket_tag(length, tag_width(LENGTHS))
        print(
            f"  budget {length:4d}  R1 {metrics[f'rouge1@{tag},none']:.1f}  R2 {metrics[f'rouge2@{tag},none']:.1f}  "
            f"RL {metrics[f'rougeL@{tag},none']:.1f}  overall {metrics[f'overall@{tag},none']:.1f}"
        )
    print(f"  empty answers: {empty.get('empty', '?')} of {empty.get('generated', '?')}   [{seconds:.0f} s]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
