"""RoPE extensions on SmolLM2-135M (native length 8192) at 1.5-2x its length: passkey
retrieval accuracy and forward cost, each method against vanilla measured in the same run.

Passkey prompts follow the landmark-attention format (task line, repeated filler, the key line
at a chosen depth, the question); greedy decoding; correct iff the first integer generated is
the key. Vanilla beyond 8192 runs with its position limit lifted (the model itself has no hard
limit; the `longmem` wrapper would refuse without max_length=): that is the collapse the
extensions are meant to avoid. Forward cost: one prefill forward (logits of the last position
only) at the same length, repetitions alternated between vanilla and the method, medians.

    nice -n 5 python benchmarks/rope_extension.py                       # 12288 tokens, 3 depths
    nice -n 5 python benchmarks/rope_extension.py --length 16384 --depths 0.5 --timing-reps 3
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

TASK = (
    "There is an important info hidden inside a lot of irrelevant text. Find it and memorize them. "
    "I will quiz you about the important information there."
)
FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
KEY_LINE = "The pass key is {k}. Remember it. {k} is the pass key."
QUESTION = "What is the pass key? The pass key is"

ACCURACY_METHODS = {
    "vanilla": {},
    "ntk": {"factor": 2.0},
    "dynamic_ntk": {"s": 2.0, "factor": 2.0},
    "yarn": {"factor": 2.0},
    "self_extend": {"window": 2048, "group": 32},
}
TIMING_METHODS = {
    "pi": {"factor": 2.0},
    "ntk": {"factor": 2.0},
    "dynamic_ntk": {"s": 2.0, "factor": 2.0},
    "yarn": {"factor": 2.0},
    "self_extend": {"window": 2048, "group": 32},
    "lm_infinite": {"factor": 2.0},
}


def passkey_ids(tokenizer, length: int, depth: float, key: int) -> list[int]:
    """Token ids of a prompt of about `length` tokens with the key line at `depth` (0..1)."""
    encode = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    filler = encode(" " + FILLER)
    head, key_ids, tail = encode(TASK), encode(" " + KEY_LINE.format(k=key)), encode(" " + QUESTION)
    room = length - len(head) - len(key_ids) - len(tail) - 1
    body = filler * (room // len(filler))  # whole filler blocks
    cut = int(len(body) * depth)
    cut -= cut % len(filler)  # keep filler sentences whole around the key line
    bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
    return bos + head + body[:cut] + key_ids + body[cut:] + tail


def load(method: str, args: dict, attn_implementation: str = "sdpa"):
    """The model as `--model longmem` builds it: config edited by the method, then patched."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from lm_eval_longmem.default_model import default_model_dir
    from lm_eval_longmem.models.methods import build_method

    source = str(default_model_dir())
    chosen = build_method(method, args)
    config = AutoConfig.from_pretrained(source)
    chosen.prepare_config(config)
    model = AutoModelForCausalLM.from_pretrained(
        source, config=config, attn_implementation=attn_implementation, dtype=torch.float32
    )
    return chosen.prepare_model(model).eval()


def first_integer(text: str) -> int | None:
    found = re.search(r"\d+", text)
    return int(found.group()) if found else None


def passkey_accuracy(model, tokenizer, prompts) -> tuple[float, list]:
    import torch

    answers = []
    for ids, key in prompts:
        with torch.no_grad():
            out = model.generate(torch.tensor([ids]), max_new_tokens=8, do_sample=False, pad_token_id=tokenizer.eos_token_id)
        text = tokenizer.decode(out[0, len(ids):], skip_special_tokens=True)
        answers.append((key, first_integer(text), text.strip()[:24]))
    return sum(a[0] == a[1] for a in answers) / len(answers), answers


def forward_seconds(model, ids) -> float:
    import torch

    with torch.no_grad():
        start = time.perf_counter()
        model(ids, logits_to_keep=1, use_cache=False)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--length", type=int, default=12288)
    parser.add_argument("--control-length", type=int, default=6144, help="vanilla within its native length")
    parser.add_argument("--depths", type=float, nargs="+", default=[0.2, 0.5, 0.8])
    parser.add_argument("--timing-reps", type=int, default=2)
    parser.add_argument("--timing-length", type=int, default=None, help="default: --length")
    parser.add_argument("--accuracy-methods", nargs="+", default=list(ACCURACY_METHODS), choices=list(ACCURACY_METHODS))
    parser.add_argument("--timing-methods", nargs="+", default=list(TIMING_METHODS), choices=list(TIMING_METHODS))
    parser.add_argument("--skip-control", action="store_true", help="skip vanilla within its native length")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch
    from tqdm import tqdm
    from transformers import AutoTokenizer

    from lm_eval_longmem.default_model import default_model_dir

    torch.manual_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(str(default_model_dir()))
    rng = random.Random(args.seed)
    if not args.skip_accuracy:
        keys = [rng.randint(1, 50000) for _ in args.depths]
        control = [(passkey_ids(tokenizer, args.control_length, d, k), k) for d, k in zip(args.depths, keys)]
        long = [(passkey_ids(tokenizer, args.length, d, k), k) for d, k in zip(args.depths, keys)]
        print(f"passkey: depths {args.depths}, keys {keys}, prompt lengths {len(control[0][0])} / {len(long[0][0])}")
        if not args.skip_control:
            acc, answers = passkey_accuracy(load("vanilla", {}), tokenizer, tqdm(control, desc="vanilla control"))
            print(f"  vanilla @ {len(control[0][0])} (native): accuracy {acc:.2f}  answers {answers}", flush=True)
        for method in args.accuracy_methods:
            method_args = ACCURACY_METHODS[method]
            model = load(method, method_args)
            acc, answers = passkey_accuracy(model, tokenizer, tqdm(long, desc=method))
            print(f"  {method} {method_args} @ {len(long[0][0])}: accuracy {acc:.2f}  answers {answers}", flush=True)
            del model
    if not args.skip_timing:
        length = args.timing_length or args.length
        ids = torch.tensor([passkey_ids(tokenizer, length, 0.5, 12345)])
        vanilla = load("vanilla", {})
        forward_seconds(vanilla, ids[:, :512])
        print(f"forward cost at {ids.shape[1]} tokens (median of {args.timing_reps}, alternated with vanilla):")
        for method in args.timing_methods:
            method_args = TIMING_METHODS[method]
            model = load(method, method_args)
            forward_seconds(model, ids[:, :512])
            base, ours = [], []
            for _ in tqdm(range(args.timing_reps), desc=method):
                base.append(forward_seconds(vanilla, ids))
                ours.append(forward_seconds(model, ids))
            b, o = statistics.median(base), statistics.median(ours)
            print(f"  {method:12s} {o:7.2f} s  vanilla {b:7.2f} s  ratio {o / b:5.2f}x", flush=True)
            del model


if __name__ == "__main__":
    main()
