"""YaRN fine-tuned at the target length vs the same YaRN applied training-free, past the original
training length, at CPU scale: copy (forgetting-curve) accuracy and perplexity.

The controlled study's claim is about 7B models at 32k; even SmolLM2 past its 8k does not fit
two CPU cores (the `yarn` recipe trains SmolLM2 at ~82 tokens/s there with
4,096-token sequences: 100 steps at 16k tokens would take over 5 hours). The same
three steps run on a tiny Llama instead:

1. pretrain a tiny Llama (RoPE) from scratch at context C through the `tiny-transformer` recipe's
   code path (`approach=from_scratch`, `model_config.model_type=llama`) on the embedded
   Shakespeare corpus (the last four plays are held out), with a byte-level BPE vocabulary
   trained on the training plays (small, so the output layer does not dominate the compute). A
   share of the training documents are a passage written twice (both copies fit in C tokens),
   the data that teaches induction (copy) heads; the same mix is used in both training stages;
2. extend it 4x with YaRN: (a) training-free (`method=yarn,factor=4` at evaluation), (b) the
   `tiny-yarn` recipe (`approach=rope_extension`, `method=yarn`) fine-tuned at 4C from that model,
   (c) the control: the same steps, tokens and lr at C with plain RoPE, then (a)'s training-free YaRN
   (fine-tuning also just trains more; (b) - (c) is what training at 4C with YaRN adds);
3. run the real `forgetting_curve` and `longmem_perplexity` tasks through
   `lm_eval.simple_evaluate(model="longmem")` on the held-out plays for the base model, (a) and
   (b). A forgetting-curve length L feeds 2L + 1 tokens, so L > (C-1)/2 is past C.

    nice -n 5 python benchmarks/yarn_finetune_claim.py
"""

from __future__ import annotations

import argparse
import math
import os
import random
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from lm_eval_longmem.data.corpora import load_shakespeare  # noqa: E402
from lm_eval_longmem_training.loop.training_loop import train  # noqa: E402
from lm_eval_longmem_training.recipes.loading import load_recipe  # noqa: E402

HELD_OUT_PLAYS = 4
FACTOR = 4


def write_training_text(plays: list[str], folder: Path, context: int, chars_per_token: float, seed: int) -> None:
    """Training plays plus as many characters of `passage + passage` documents (passages drawn
    from the same plays, each at most ~C/2 tokens so both copies fit one pretraining chunk): the
    plain text alone does not teach a 2-layer model to copy within a few hundred steps."""
    folder.mkdir(parents=True)
    rng = random.Random(seed)
    repeats, budget = [], sum(map(len, plays))
    while budget > 0:
        play = rng.choice(plays)
        size = int(rng.randint(8, context // 2 - 2) * chars_per_token)
        start = rng.randrange(0, len(play) - size)
        passage = play[start : start + size]
        repeats.append(f"{passage}\n{passage}")
        budget -= 2 * size
    for i, play in enumerate(plays):
        (folder / f"play{i:02d}.txt").write_text(play, encoding="utf-8")
    (folder / "repeats.txt").write_text("\n\n".join(repeats), encoding="utf-8")


def write_tokenizer(plays: list[str], folder: Path, vocab_size: int) -> Path:
    """A byte-level BPE tokenizer of `vocab_size` trained on the training plays. With SmolLM2's
    49,152-token vocabulary the output layer is over 90% of a 2-layer x 128 model's compute; a
    small vocabulary makes each step several times cheaper, so the tiny model sees more tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        plays,
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    special = "<|endoftext|>"
    PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token=special, eos_token=special).save_pretrained(folder)
    return folder


def measure_chars_per_token(tokenizer_dir: Path, plays: list[str]) -> float:
    """Characters per token of the plays, to size the repeated passages in tokens."""
    from transformers import AutoTokenizer

    sample = "".join(play[:20_000] for play in plays)
    return len(sample) / len(AutoTokenizer.from_pretrained(tokenizer_dir)(sample)["input_ids"])


def run_recipe(name: str, overrides: list[str]) -> dict:
    """One training run through the shipped recipe with overrides; returns its summary."""
    started = time.perf_counter()
    summary = train(load_recipe(name, overrides + ["save_every=0", "progress_bar=false"]))
    print(
        f"{name}: {summary['steps']} steps, {summary['tokens']:,} tokens, {time.perf_counter() - started:.0f} s",
        flush=True,
    )
    return summary


def evaluate(model_args: dict, metadata: dict) -> tuple[dict[int, tuple[float, float]], dict[int, float]]:
    """One lm-eval run of the real `forgetting_curve` and `longmem_perplexity` tasks (one model
    load): {L: (copy accuracy, LM accuracy)} and {L: perplexity} (YaRN's own metric)."""
    import lm_eval

    import lm_eval_longmem

    lm_eval_longmem.register()
    results = lm_eval.simple_evaluate(
        model="longmem",
        model_args={"device": "cpu", **model_args},
        tasks=["forgetting_curve", "longmem_perplexity"],
        metadata=metadata,
    )["results"]
    curve = results["forgetting_curve"]["curve,none"]
    points = curve["points"] if isinstance(curve, dict) and "points" in curve else curve
    copy = {int(p["length"]): (p["copy_mean"], p["lm_mean"]) for p in points}
    ppl = {
        int(key.split("@")[1].split(",")[0]): value
        for key, value in results["longmem_perplexity"].items()
        if key.startswith("ppl@") and isinstance(value, (int, float))
    }
    return copy, ppl


def add_base_arguments(parser: argparse.ArgumentParser) -> None:
    """The tiny base model's and the fine-tunes' sizes (shared with clex_extrapolation_claim.py)."""
    parser.add_argument("--context", type=int, default=128, help="pretraining length C")
    parser.add_argument("--vocab", type=int, default=2048, help="BPE vocabulary trained on the training plays")
    parser.add_argument("--pretrain-steps", type=int, default=6000)
    parser.add_argument("--finetune-steps", type=int, default=300)
    parser.add_argument("--finetune-lr", type=float, default=5e-4)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--train-plays", type=int, default=20, help="plays to train on (the last four are held out)")


def pretrain_base(args, prefix: str) -> tuple[Path, str, list[str]]:
    """Step 1: (work folder with train/ and held_out/, the pretrained base's export, the training plays)."""
    c = args.context
    plays = load_shakespeare().documents
    train_plays = list(plays[:-HELD_OUT_PLAYS][: args.train_plays])
    work = Path(tempfile.mkdtemp(prefix=prefix))
    tokenizer = write_tokenizer(train_plays, work / "tokenizer", args.vocab)
    write_training_text(train_plays, work / "train", c, measure_chars_per_token(tokenizer, train_plays), seed=0)
    (work / "held_out").mkdir()
    for i, play in enumerate(plays[-HELD_OUT_PLAYS:]):
        (work / "held_out" / f"{i:02d}.txt").write_text(play, encoding="utf-8")
    llama = {
        "model_type": "llama",
        "hidden_size": args.hidden,
        "intermediate_size": 4 * args.hidden,
        "num_hidden_layers": args.layers,
        "num_attention_heads": args.hidden // 32,
        "num_key_value_heads": args.hidden // 32,
        "max_position_embeddings": c,
        "rope_theta": 10000.0,
        "tie_word_embeddings": True,
    }
    base = run_recipe(
        "tiny-transformer",
        [
            "model_config={" + ", ".join(f"{k}: {v}" for k, v in llama.items()) + "}",
            f"tokenizer={tokenizer}",
            f"data={work / 'train'}",
            f"seq_len={c}",
            f"max_steps={args.pretrain_steps}",
            "micro_batch_size=8",
            "warmup_steps=50",
            f"output_dir={work / 'base'}",
        ],
    )["export"]
    return work, base, train_plays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_base_arguments(parser)
    parser.add_argument("--fc-samples", type=int, default=8)
    parser.add_argument("--ppl-windows", type=int, default=8)
    args = parser.parse_args()
    c = args.context
    lengths = sorted({c // 4, (c - 1) // 2, 3 * c // 4, c, 3 * c // 2, (FACTOR * c - 1) // 2})
    ppl_lengths = [c // 2, c, 2 * c, FACTOR * c]
    started = time.perf_counter()

    work, base, train_plays = pretrain_base(args, "yarn_finetune_claim_")
    yarn_args = dict(load_recipe("tiny-yarn").method_args, factor=float(FACTOR))
    tuned = run_recipe(
        "tiny-yarn",
        [
            f"model={base}",
            f"method_args.factor={FACTOR}",
            f"data={work / 'train'}",
            f"seq_len={FACTOR * c}",
            f"max_steps={args.finetune_steps}",
            "micro_batch_size=2",
            f"lr={args.finetune_lr}",
            "warmup_steps=5",
            f"output_dir={work / 'yarn_ft'}",
        ],
    )["export"]
    # Fine-tuning also just trains more; the control gets the same steps, tokens and lr at C with
    # plain RoPE, then the same training-free YaRN, so the difference is training at 4C with YaRN.
    control = run_recipe(
        "tiny-yarn",
        [
            f"model={base}",
            "method=vanilla",
            "method_args={}",
            f"data={work / 'train'}",
            f"seq_len={c}",
            f"max_steps={args.finetune_steps}",
            "micro_batch_size=8",
            f"lr={args.finetune_lr}",
            "warmup_steps=5",
            f"output_dir={work / 'control'}",
        ],
    )["export"]

    settings = {
        "base": {"pretrained": base, "method": "vanilla", "max_length": FACTOR * c},
        "yarn training-free": {"pretrained": base, "method": "yarn", **yarn_args},
        "control + yarn t-f": {"pretrained": control, "method": "yarn", **yarn_args},
        "yarn fine-tuned": {"pretrained": tuned},
    }
    held_out = str(work / "held_out")
    metadata = {
        "fc_lengths": lengths,
        "fc_samples": args.fc_samples,
        "fc_corpus": held_out,
        "ppl_lengths": ppl_lengths,
        "ppl_windows": args.ppl_windows,
        "ppl_corpus": held_out,
    }
    measured = {name: evaluate(model_args, metadata) for name, model_args in settings.items()}
    curves = {name: copy for name, (copy, _) in measured.items()}
    ppl = {name: perplexity for name, (_, perplexity) in measured.items()}
    names = list(settings)

    print(
        f"\ntrained at C={c} on {len(train_plays)} plays, YaRN factor {FACTOR}; "
        f"evaluated on {HELD_OUT_PLAYS} held-out plays"
    )
    print(f"\nperplexity ({args.ppl_windows} windows per length)")
    print(f"{'tokens':>6} " + " ".join(f"{n:>19}" for n in names))
    for length in ppl_lengths:
        marker = "  beyond C" if length > c else ""
        print(f"{length:>6} " + " ".join(f"{ppl[n].get(length, float('nan')):19.2f}" for n in names) + marker)
    print(f"\nforgetting curve, {args.fc_samples} samples per length; cells are copy / LM accuracy")
    print(f"{'L':>5} {'tokens':>6} " + " ".join(f"{n:>19}" for n in names))
    for length in lengths:
        cells = " ".join(f"{curves[n][length][0]:9.3f} /{curves[n][length][1]:6.3f}   " for n in names)
        marker = "  beyond C" if 2 * length + 1 > c else ""
        print(f"{length:>5} {2 * length + 1:>6} {cells}{marker}")

    inside = [n for n in lengths if 2 * n + 1 <= c]
    beyond = [n for n in lengths if 2 * n + 1 > c]

    def mean(name: str, which: list[int], k: int = 0) -> float:
        return sum(curves[name][n][k] for n in which) / len(which)

    learned = mean("base", inside) - mean("base", inside, 1)
    gain = mean("yarn fine-tuned", beyond) - mean("control + yarn t-f", beyond)
    print(
        f"\nbase inside C: copy - LM = {learned:+.3f} ({'copies' if learned > 0.1 else 'does NOT clearly copy'}); "
        f"beyond C mean copy: base {mean('base', beyond):.3f}, training-free {mean('yarn training-free', beyond):.3f}, "
        f"control {mean('control + yarn t-f', beyond):.3f}, fine-tuned {mean('yarn fine-tuned', beyond):.3f}"
    )
    if learned > 0.1:
        verdict = "SUPPORTED" if gain > 0.02 else "NOT supported"
        print(f"copy verdict: claim {verdict} at this scale (fine-tuned - control copy accuracy beyond C: {gain:+.3f})")
    else:
        print("copy verdict: NOT TESTED (the base model does not copy, so there is no copying to keep)")
    for length in ppl_lengths[1:]:
        tuned_ppl, control_ppl = (
            ppl["yarn fine-tuned"].get(length, math.nan),
            ppl["control + yarn t-f"].get(length, math.nan),
        )
        print(
            f"perplexity at {length} tokens: fine-tuned {tuned_ppl:.2f} vs control {control_ppl:.2f} "
            f"(ratio {tuned_ppl / control_ppl:.3f}), "
            f"training-free {ppl['yarn training-free'].get(length, math.nan):.2f}, "
            f"base {ppl['base'].get(length, math.nan):.2f}"
        )
    print(f"total time {time.perf_counter() - started:.0f} s; runs in {work}")


if __name__ == "__main__":
    main()
