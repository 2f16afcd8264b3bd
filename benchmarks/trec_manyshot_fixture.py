"""Many-shot TREC on the embedded SmolLM2-135M, on hand-written TREC-style FIXTURE questions.

Not the real TREC (this machine cannot reach the Hub): 72 questions written for the tests
(tests/helpers/data_fixtures.py) in CogComp/trec's schema, 56 as the demonstration pool and 16 as test
questions. It shows the task running end to end on a real model through lm-eval's API, and
how accuracy moves with the shot count; the numbers are not comparable with the paper's.

    python benchmarks/trec_manyshot_fixture.py [--shots 1 10 50] [--model-args method=vanilla]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shots", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--model", default="longmem")
    parser.add_argument("--model-args", default="method=vanilla", help="comma-separated key=value")
    args = parser.parse_args()

    import lm_eval

    import lm_eval_longmem
    from tests.helpers.data_fixtures import PLAUSIBLE_TREC_QUESTIONS, write_trec_fixture

    lm_eval_longmem.register()
    model_args = dict(item.split("=", 1) for item in args.model_args.split(",") if item)
    model_args.setdefault("device", "cpu")
    with tempfile.TemporaryDirectory() as tmp:
        data = write_trec_fixture(Path(tmp) / "trec", PLAUSIBLE_TREC_QUESTIONS[:56], PLAUSIBLE_TREC_QUESTIONS[56:])
        start = time.perf_counter()
        results = lm_eval.simple_evaluate(
            model=args.model,
            model_args=model_args,
            tasks=["longmem_trec_manyshot"],
            metadata={"trec_data_dir": str(data), "trec_shots": args.shots, "trec_questions": 16},
        )
        seconds = time.perf_counter() - start
    metrics = results["results"]["longmem_trec_manyshot"]
    protocol = results["configs"]["longmem_trec_manyshot"]["metadata"]["protocol"]
    print(f"\nSmolLM2-135M ({args.model}, {model_args}) on FIXTURE questions (16 test questions per shot count):")
    for shots in protocol["shots"]:
        key = f"acc@{shots:04d}shots,none"
        print(
            f"  {shots:4d} shots  acc {metrics[key]:.3f}  "
            f"(longest prompt {protocol['max_prompt_tokens'][str(shots)]} tokens)"
        )
    print(f"  overall      acc {metrics['acc,none']:.3f}   [{seconds:.0f} s]")
    chance = 1 / 50
    print(f"  (50 classes: uniform guessing scores {chance:.2f})")


if __name__ == "__main__":
    main()
