"""`lm-eval-longmem fetch-data`: download the Hub datasets our tasks use, in one command.

Run where the Hub is reachable; the datasets land in the Hugging Face caches (copy
~/.cache/huggingface to an offline machine). Offline it says it needs network, at once.
The datasets are those the tasks declare (tasks/<task>/declaration.py).
"""

from __future__ import annotations

import argparse

HELP = "download the Hub datasets of the longmem tasks into the local cache (needs network)"


def main(argv: list[str]) -> int:
    from lm_eval_longmem.tasks.registry import datasets, declarations

    known = datasets()
    parser = argparse.ArgumentParser(
        prog="lm-eval-longmem fetch-data",
        description=HELP[0].upper() + HELP[1:] + ". Without arguments: all of them.",
        epilog="datasets: " + "; ".join(f"{key}: {d.title}" for key, d in known.items()),
    )
    parser.add_argument("datasets", nargs="*", metavar="DATASET", help=f"any of: {', '.join(known)}")
    parser.add_argument("--list", action="store_true", help="only say which datasets are already here")
    args = parser.parse_args(argv)
    unknown = [key for key in args.datasets if key not in known]
    if unknown:
        parser.error(f"unknown dataset(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    keys = args.datasets or list(known)

    from lm_eval_longmem.common.hub import HubUnavailableError, hub_reachable, offline_requested
    from lm_eval_longmem.data.requirements import fetch, is_available

    if args.list:
        for key in keys:
            print(f"{key:<15} {'cached' if is_available(known[key])[0] else 'missing'}  {known[key].title}")
        return 0
    if not hub_reachable():
        where = (
            "HF_HUB_OFFLINE or HF_DATASETS_OFFLINE is set. Fix: run it with them unset"
            if offline_requested()
            else "the Hub (huggingface.co, or $HF_ENDPOINT) cannot be reached from here. Fix: run it"
        )
        from lm_eval_longmem.tasks.dataset_needs import local_alternatives

        users = {key: [d.name for d in declarations() if d.alternative_to(key)] for key in keys}
        raise HubUnavailableError(
            f"fetch-data needs network, but {where} on a machine that reaches the Hub, then copy "
            "~/.cache/huggingface to machines without network. Offline, the tasks also read local copies ("
            + "; ".join(f"--metadata {option}" for option in local_alternatives(users))
            + ")."
        )
    failed = fetch(known[key] for key in keys)
    if failed:
        print(f"Could not fetch: {', '.join(failed)}")
        return 1
    print(f"All {len(keys)} dataset(s) are in the local cache.")
    return 0
