"""Many-shot TREC on the embedded SmolLM2-135M, on the package's written TREC-style sample.

Not the real TREC (it runs without the Hub): `--metadata trec_source=sample`, 72 questions written
for this project in TREC's style (lm_eval_longmem/data/trec_sample.py), 56 as the demonstration
pool and 16 as test questions. It shows the task running end to end on a real model through lm-eval's API, and
how accuracy moves with the shot count; the numbers are not comparable with the paper's.

    python benchmarks/trec_manyshot_fixture.py [--shots 1 10 50] [--model-args method=vanilla]
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shots", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--model", default="longmem")
    parser.add_argument("--model-args", default="method=vanilla", help="comma-separated key=value")
    args = parser.parse_args()

    import lm_eval

    import lm_eval_longmem

    lm_eval_longmem.register()
    model_args = dict(item.split("=", 1) for item in args.model_args.split(",") if item)
    model_args.setdefault("device", "cpu")
    start = time.perf_counter()
    results = lm_eval.simple_evaluate(
        model=args.model,
        model_args=model_args,
        tasks=["longmem_trec_manyshot"],
        metadata={"trec_source": "sample", "trec_shots": args.shots, "trec_questions": 16},
    )
    seconds = time.perf_counter() - start
    metrics = results["results"]["longmem_trec_manyshot"]
    protocol = results["configs"]["longmem_trec_manyshot"]["metadata"]["protocol"]
    print(f"\nSmolLM2-135M ({args.model}, {model_args}) on the written sample (16 test questions per shot count):")
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
