"""FoX vs the Transformer of matched size, trained from scratch the same way: per-token loss by
position (the FoX paper's Figure 2 claim: FoX is no worse at later positions), at CPU scale.

Both tiny recipes (`tiny-fox`, `tiny-transformer`: 2 blocks x 64 dims, the same optimizer and
data order) train on all but the last plays of the embedded Shakespeare corpus; the per-token
loss is then averaged over position buckets of held-out chunks from the last plays, at the
training length and at twice it (extrapolation).

    nice -n 5 python benchmarks/fox_vs_transformer_loss.py --steps 150
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from lm_eval_longmem.data.corpora import load_shakespeare  # noqa: E402
from lm_eval_longmem_training.data.packing import pack_documents  # noqa: E402
from lm_eval_longmem_training.loop.training_loop import train  # noqa: E402
from lm_eval_longmem_training.recipes.loading import load_recipe  # noqa: E402

HELD_OUT_PLAYS = 4


@torch.no_grad()
def per_position_loss(model, chunks: torch.Tensor) -> np.ndarray:
    """Mean next-token loss at each position over the chunks [N, L] -> [L - 1]."""
    total = torch.zeros(chunks.shape[1] - 1)
    for row in chunks:
        logits = model(input_ids=row[None]).logits[0, :-1].float()
        total += F.cross_entropy(logits, row[1:], reduction="none")
    return (total / len(chunks)).numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--eval-chunks", type=int, default=24)
    parser.add_argument("--buckets", type=int, default=4)
    args = parser.parse_args()
    from transformers import AutoModelForCausalLM

    plays = load_shakespeare().documents
    work = Path(tempfile.mkdtemp(prefix="fox_vs_transformer_"))
    (work / "train").mkdir()
    for i, play in enumerate(plays[:-HELD_OUT_PLAYS]):
        (work / "train" / f"{i:02d}.txt").write_text(play, encoding="utf-8")
    curves = {}
    for name in ("tiny-fox", "tiny-transformer"):
        recipe = load_recipe(
            name,
            [
                f"data={work / 'train'}",
                f"max_steps={args.steps}",
                f"seq_len={args.seq_len}",
                f"output_dir={work / name}",
                "save_every=0",
                "progress_bar=false",
                f"model_config.max_position_embeddings={4 * args.seq_len}",
            ],
        )
        summary = train(recipe)
        model = AutoModelForCausalLM.from_pretrained(summary["export"]).eval()
        if name == "tiny-fox":
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(summary["export"])
            stream = pack_documents(plays[-HELD_OUT_PLAYS:], tokenizer, tokenizer.eos_token_id).astype(np.int64)
            length = 2 * args.seq_len
            held_out = torch.from_numpy(stream[: args.eval_chunks * length].reshape(args.eval_chunks, length))
        curves[name] = per_position_loss(model, held_out)
        print(
            f"{name}: trained {summary['steps']} steps, {summary['tokens']:,} tokens, "
            f"{summary['tokens_per_second']:,.0f} tok/s"
        )
    # target positions 0 .. 2L-2; buckets of L / buckets positions, the second half beyond L
    edges = [min(i * args.seq_len // args.buckets, 2 * args.seq_len - 1) for i in range(2 * args.buckets + 1)]
    print(
        f"\nheld-out per-token loss (nats), {args.eval_chunks} chunks of {2 * args.seq_len} tokens "
        f"(trained at {args.seq_len}):"
    )
    print(f"{'positions':>12} {'FoX':>8} {'Transformer':>12} {'FoX - T':>8}")
    for lo, hi in zip(edges[:-1], edges[1:]):
        fox, base = curves["tiny-fox"][lo:hi].mean(), curves["tiny-transformer"][lo:hi].mean()
        marker = "  (beyond training length)" if lo >= args.seq_len else ""
        print(f"{lo:>5}-{hi - 1:<6} {fox:8.3f} {base:12.3f} {fox - base:+8.3f}{marker}")


if __name__ == "__main__":
    main()
