"""What the one-layer op benchmarks (`recall_top_keys.py`, `landmark_retrieval.py`) share: one call timed
and counted, and the rows of every length printed and saved."""

from __future__ import annotations

import json
import statistics
import time

from infini_memory import PeakMemory, sync  # benchmarks/ is on sys.path when run as a script

from lm_eval_longmem.models.runtime.dispatch_count import DispatchCount


def time_and_count(call, repeats: int, device: str) -> dict:
    """`call()` once to warm up (a kernel compiles, a C file builds), `repeats` timed calls under a peak
    memory meter (median seconds), one more counted: its ATen ops and host reads. "result" is the
    warm-up call's return value."""
    result = call()
    seconds = []
    with PeakMemory(device) as memory:
        for _ in range(repeats):
            sync(device)
            start = time.perf_counter()
            call()
            sync(device)
            seconds.append(time.perf_counter() - start)
    with DispatchCount() as count:
        call()
    return {
        "seconds": statistics.median(seconds),
        "peak_bytes": max(0, memory.peak),
        "ops": count.ops,
        "host_reads": count.host_reads,
        "result": result,
    }


def rows_by_length(args, measure, print_row) -> list[dict]:
    """`measure(args, T)` for every T of `args.lengths`, each row printed as it comes, all of them written
    to `args.out_json` (with the settings) when one is named."""
    rows = []
    for length in args.lengths:
        row = measure(args, length)
        print_row(row)
        rows.append(row)
    if args.out_json:
        with open(args.out_json, "w") as out:
            json.dump({"settings": vars(args), "rows": rows}, out, indent=1)
    return rows
