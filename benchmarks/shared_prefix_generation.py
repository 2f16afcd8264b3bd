"""Many-shot generation: reusing the shared demonstration prefix vs re-encoding it per question.

Every test question of many-shot TREC at one shot count follows the same n demonstrations
(the controlled study's LongBench-format prompt). `--model longmem` sorts prompts by token
ids and keeps the KV cache of the shared prefix (`reuse_prefix=True`, the default); with
`reuse_prefix=False` each prompt is encoded from scratch, as HFLM does. Both run through
the wrapper's real `generate_until` on the embedded default model (SmolLM2-135M, 8192
tokens), greedy, and must produce identical answers.

The demonstrations are synthetic questions with TREC's fine-grained label names (the real
loader is the `longmem_trec_manyshot` task's); only their length matters here. Shot counts
default to the largest that fits the model (leaving room for the answer) and two smaller
ones. Repetitions alternate reuse / no reuse so CPU contention hits both alike; the table
shows medians and the ratio no-reuse / reuse.

    python benchmarks/shared_prefix_generation.py                      # auto shot counts, 12 questions
    python benchmarks/shared_prefix_generation.py --shots 50 200 --questions 4 --repeats 1
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from lm_eval_longmem.data.trec import FINE_LABELS  # noqa: E402
from lm_eval_longmem.tasks.trec_manyshot import longbench_format  # noqa: E402

SUBJECTS = (
    "the Eiffel Tower",
    "a blue whale",
    "Mount Everest",
    "the Nile",
    "penicillin",
    "the Titanic",
    "jazz",
    "the Roman Empire",
    "a hummingbird",
    "the Moon",
    "chess",
    "Beethoven",
    "the Sahara",
    "a volcano",
)
FORMS = (
    "What is {s} made of ?",
    "Who discovered {s} ?",
    "Where is {s} found ?",
    "When was {s} first described ?",
    "How big is {s} ?",
    "Why is {s} famous ?",
    "What does {s} stand for ?",
    "How many people visit {s} ?",
)


def synthetic_question(rng: random.Random) -> str:
    return rng.choice(FORMS).format(s=rng.choice(SUBJECTS))


def demonstrations(n: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [(synthetic_question(rng), rng.choice(FINE_LABELS)) for _ in range(n)]


def prompt(n: int, question: str) -> str:
    """The task's own LongBench TREC prompt (instruction, n demonstrations, the question)."""
    return longbench_format.prompt(demonstrations(n), question)


def largest_fitting_shots(lm, questions: list[str], room: int) -> int:
    """Binary search on n: the longest prompt among the questions must leave `room` tokens."""

    def fits(n: int) -> bool:
        return max(len(lm.tok_encode(prompt(n, q))) for q in questions) + room <= lm.max_length

    low, high = 1, 1
    while fits(high * 2):
        high *= 2
    low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low


def run(lm, shots: int, questions: list[str], gen_tokens: int, reuse: bool) -> tuple[float, list[str]]:
    from lm_eval.api.instance import Instance

    gen_kwargs = {"until": ["\n"], "max_gen_toks": gen_tokens, "do_sample": False}
    requests = [Instance("generate_until", {}, (prompt(shots, q), gen_kwargs), i) for i, q in enumerate(questions)]
    lm.reuse_prefix = reuse
    start = time.perf_counter()
    answers = lm.generate_until(requests, disable_tqdm=True)
    return time.perf_counter() - start, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shots", type=int, nargs="*", help="shot counts (default: largest fitting, /4, /16)")
    parser.add_argument("--questions", type=int, default=12, help="test questions per shot count")
    parser.add_argument("--repeats", type=int, default=2, help="alternating repetitions per side (median)")
    parser.add_argument("--gen-tokens", type=int, default=8)
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch threads (0: torch's default). On a CPU shared with other jobs, 1 avoids the "
        "oversubscription that makes every small decoding step tens of times slower",
    )
    args = parser.parse_args()

    import torch
    from tqdm import tqdm

    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    if args.threads:
        torch.set_num_threads(args.threads)
    lm = LongMemLM(device="cpu")
    rng = random.Random(1234)
    questions = [synthetic_question(rng) + f" (case {i})" for i in range(args.questions)]
    if args.shots:
        shot_counts = sorted(args.shots)
    else:
        top = largest_fitting_shots(lm, questions, args.gen_tokens)
        shot_counts = sorted({max(1, top // 16), max(1, top // 4), top})
    run(lm, 1, questions[:1], 2, reuse=False)  # warm-up

    rows = []
    for shots in tqdm(shot_counts, desc="shot counts"):
        times = {True: [], False: []}
        answers = {}
        for _ in range(args.repeats):
            for reuse in (False, True):
                seconds, answers[reuse] = run(lm, shots, questions, args.gen_tokens, reuse)
                times[reuse].append(seconds)
        if answers[True] != answers[False]:
            raise SystemExit(f"answers differ with and without reuse at {shots} shots:\n{answers}")
        tokens = max(len(lm.tok_encode(prompt(shots, q))) for q in questions)
        rows.append((shots, tokens, statistics.median(times[False]), statistics.median(times[True])))

    print(
        f"\nSmolLM2-135M, {args.questions} questions per shot count, greedy, {args.gen_tokens} new tokens max, "
        f"median of {args.repeats}; torch threads {torch.get_num_threads()}"
    )
    print(f"{'shots':>6} {'prompt tokens':>14} {'no reuse (s)':>13} {'reuse (s)':>10} {'speedup':>8}")
    for shots, tokens, fresh, reused in rows:
        print(f"{shots:>6} {tokens:>14} {fresh:>13.2f} {reused:>10.2f} {fresh / reused:>7.1f}x")
    print("answers identical with and without reuse: yes")


if __name__ == "__main__":
    main()
