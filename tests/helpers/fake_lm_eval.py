"""Stands in for `python -m lm_eval run ...` in sweep tests: takes the sweep's real command line
and writes what lm-eval would (a samples file, then the results file recording that command),
in place and not atomically, as lm-eval does, in well under a second and without torch.

FAKE_LM_EVAL_NAMES: JSON {model_args JSON (sorted keys): results folder name}, the names the
start-up hook would give. FAKE_LM_EVAL_PAUSE: JSON {folder name or "*": seconds} to sleep with
the results file half-written (to be killed there). FAKE_LM_EVAL_PID_FILE: where to write this
process's id.
"""

import argparse
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("subcommand")
    parser.add_argument("--model")
    parser.add_argument("--model_args")
    parser.add_argument("--tasks")
    parser.add_argument("--output_path")
    parser.add_argument("--metadata", default="{}")
    parser.add_argument("--limit", type=float)
    args, _ = parser.parse_known_args(argv)
    if os.environ.get("FAKE_LM_EVAL_PID_FILE"):
        Path(os.environ["FAKE_LM_EVAL_PID_FILE"]).write_text(str(os.getpid()))
    model_args = json.loads(args.model_args)
    name = json.loads(os.environ["FAKE_LM_EVAL_NAMES"])[json.dumps(model_args, sort_keys=True)]
    tasks = args.tasks.split(",")
    metadata = json.loads(args.metadata)
    folder = Path(args.output_path) / name
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().isoformat().replace(":", "-")
    results = {
        "results": {task: {"alias": task, "acc,none": 0.5} for task in tasks},
        "configs": {task: {"metadata": {"version": 1.0, **metadata}} for task in tasks},
        "config": {"model": args.model, "model_args": model_args, "limit": args.limit},
    }
    for task in tasks:
        (folder / f"samples_{task}_{stamp}.jsonl").write_text('{"doc_id": 0}\n')
    text = json.dumps(results, indent=2)
    with open(folder / f"results_{stamp}.json", "w", encoding="utf-8") as handle:
        handle.write(text[: len(text) // 2])
        handle.flush()
        pauses = json.loads(os.environ.get("FAKE_LM_EVAL_PAUSE", "{}"))
        time.sleep(float(pauses.get(name, pauses.get("*", 0))))
        handle.write(text[len(text) // 2 :])
    print(f"fake lm_eval wrote {folder}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
