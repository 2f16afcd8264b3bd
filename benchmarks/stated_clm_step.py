"""Stated-CLM's static-shape steady-state step against the chunk runner and vanilla, in one run.

For one scoring call of T tokens on the model `method_scoring.py` built, through `LongMemLM`:
vanilla, stated-CLM on the chunk runner for every chunk (the path before the step) and stated-CLM
with the step (eager; and compiled by inductor with `--stated-compiled`, after one compiling call).
Per row: seconds (median of the timed calls), the ratio to vanilla, the computing ops dispatched
and the host reads (a `TorchDispatchMode` count: on a GPU each op is a kernel launch and each host
read drains the queue; lm_eval_longmem/models/runtime/dispatch_count.py), and for the step the graph breaks
dynamo finds when it traces it (`torch._dynamo.explain`, autograd ops traced). Counts are exact;
times on a shared CPU are noisy, so read the ratios, which come from one run.
"""

from __future__ import annotations

import statistics
import time

from lm_eval_longmem.models.runtime.dispatch_count import DispatchCount


def timed_and_counted(lm, one_request, repeats: int, count: bool = True) -> dict:
    """Median seconds of `repeats` calls after a warm-up, and (with `count`) one more call's ops and host reads.
    A compiled function does not run under a Python dispatch mode (dynamo refuses the frame): no count."""
    lm._loglikelihood_tokens([one_request], disable_tqdm=True)  # warm-up (and compiling)
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        lm._loglikelihood_tokens([one_request], disable_tqdm=True)
        seconds.append(time.perf_counter() - start)
    if not count:
        return {"seconds": statistics.median(seconds), "ops": None, "host_reads": None}
    with DispatchCount() as counter:
        lm._loglikelihood_tokens([one_request], disable_tqdm=True)
    return {"seconds": statistics.median(seconds), "ops": counter.ops, "host_reads": counter.host_reads}


def graph_breaks(scorer, method) -> int:
    """Graph breaks of the step traced on a full cache of the model (0: one graph)."""
    import torch
    import torch._dynamo

    from lm_eval_longmem.models.bounded_cache.stated_clm_step import StackedCache, traced

    args = method.args
    runner = scorer.start_sequence()  # a fresh stated-CLM runner, filled here by the chunk runner's path
    ids = torch.randint(4, 64, (args.max_context_length + 2 * args.chunk_size + 1,)).tolist()
    start = 0
    with torch.no_grad():
        while len(runner) < args.max_context_length:
            runner.feed_chunk(ids[start : start + args.chunk_size], next_id=ids[start + args.chunk_size])
            start += args.chunk_size
    cache = StackedCache.of(runner.caches)
    window = torch.tensor(ids[start : start + args.chunk_size + 1], device=cache.keys.device)
    torch._dynamo.reset()
    explained = traced(torch._dynamo.explain(runner.steady_step._step))(cache.keys, cache.values, cache.counts, window)
    return explained.graph_break_count


def stated_clm_rows(
    pretrained, statedclm_args: dict, vanilla_args: dict, one_request, device, dtype, repeats, compiled
):
    """Rows: vanilla, the chunk runner, the step (eager, and compiled when asked), each with its ratio to vanilla."""
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    def load(model_args):
        return LongMemLM(pretrained=str(pretrained), device=device, dtype=dtype, batch_size=1, **model_args)

    rows = [{"path": "vanilla", **timed_and_counted(load(vanilla_args), one_request, repeats)}]
    lm = load({"method": "statedclm", **statedclm_args})
    step_scorer = lm.scorer
    lm.scorer = lm.longmem_method.make_chunk_runner_scorer(lm.model)
    rows.append({"path": "statedclm chunk runner", **timed_and_counted(lm, one_request, repeats)})
    lm.scorer = step_scorer
    rows.append({"path": "statedclm step (eager)", **timed_and_counted(lm, one_request, repeats)})
    rows[-1]["graph_breaks"] = graph_breaks(step_scorer, lm.longmem_method)  # after timing: tracing leaves state
    if compiled:
        try:
            compiled_lm = load({"method": "statedclm", **statedclm_args, "compile_step": True})
            timed = timed_and_counted(compiled_lm, one_request, repeats, count=False)
        except Exception as err:  # noqa: BLE001  a failed compile must not lose the rows above
            timed = {"seconds": None, "ops": None, "host_reads": None, "error": f"{type(err).__name__}: {err}"[:500]}
        rows.append({"path": "statedclm step (compiled)", **timed})
    for row in rows:
        row["time_ratio"] = None if row["seconds"] is None else row["seconds"] / rows[0]["seconds"]
    return rows


def print_rows(rows: list[dict], length: int) -> None:
    print(f"\nstated-CLM steady-state step, T = {length} (ratios to vanilla in this run):")
    print(f"{'path':>26} {'seconds':>9} {'time x':>7} {'ops':>7} {'host reads':>11} {'graph breaks':>13}")
    for r in rows:
        if "error" in r:
            print(f"{r['path']:>26} error: {r['error']}", flush=True)
            continue
        breaks, ops, reads = ("-" if r.get(key) is None else r[key] for key in ("graph_breaks", "ops", "host_reads"))
        print(
            f"{r['path']:>26} {r['seconds']:>9.4f} {r['time_ratio']:>7.2f} {ops:>7} {reads:>11} {breaks:>13}",
            flush=True,
        )
