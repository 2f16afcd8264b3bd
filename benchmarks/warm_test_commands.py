"""CPU time of the end-to-end tests' `lm_eval` runs: a fresh process each, against forks of a warm
server (tests/helpers/warm_commands.py), on the same tiny forgetting-curve run, in one process.

The warm side's figure includes starting its server once (it imports torch, transformers and
lm-eval), so it is what a test process pays for RUNS runs; CPU seconds (user + system of the
finished children, from getrusage), not wall time, so other work on the machine moves it little.

    python benchmarks/warm_test_commands.py [--runs 4]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=4, help="lm_eval runs on each side")
    args = parser.parse_args()

    from tests.helpers import warm_commands
    from tests.helpers.cli_runs import BIN, small_protocol
    from tests.helpers.corpus import make_corpus_text
    from tests.helpers.tiny_llama import build_tiny_model

    folder = Path(tempfile.mkdtemp(prefix="warm-test-commands-"))
    model = build_tiny_model(folder / "model")
    corpus = folder / "words.txt"
    corpus.write_text(make_corpus_text(), encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    script = str(BIN / "lm_eval")

    def command(side: str, number: int) -> list[str]:
        out = folder / f"{side}{number}"
        model_args = ["--model", "longmem", "--model_args", f"pretrained={model}", "--tasks", "forgetting_curve"]
        return [script, *model_args, *small_protocol(corpus), "--output_path", str(out)]

    figures = {}
    for side in ("fresh", "warm"):
        cpu, wall = children_cpu_seconds(), time.perf_counter()
        server = warm_commands.WarmServer(script, env, warm_commands.WARM_UP[script]) if side == "warm" else None
        for number in range(args.runs):
            if server is None:
                proc = subprocess.run(command(side, number), capture_output=True, text=True, env=env)
                returncode, err = proc.returncode, proc.stderr
            else:
                returncode, _, raw_err = server.run(command(side, number), env, timeout=600)
                err = raw_err.decode(errors="replace")
            if returncode != 0:
                raise SystemExit(f"the {side} lm_eval run failed ({returncode}):\n{err[-3000:]}")
        if server is not None:
            server.close()  # its CPU time, and its children's, count once it has ended
        figures[side] = (children_cpu_seconds() - cpu, time.perf_counter() - wall)
        print(f"{side:>5}: {args.runs} runs, {figures[side][0]:6.1f} s of CPU ({figures[side][1]:.1f} s wall)")
    fresh, warm = figures["fresh"][0], figures["warm"][0]
    print(f"CPU time, fresh / warm (server start included): {fresh / warm:.1f}x")


if __name__ == "__main__":
    main()
