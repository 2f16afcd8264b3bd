"""BookSum's options, `--metadata bs_<name>=...`.

Defaults follow the Infini-attention paper (section 3.2, Figure 4): the test split, input
budgets from 16K to 500K book tokens, sampling at temperature 0.5 and top-p 0.95 for 1,024
new tokens. `bs_greedy=true` decodes greedily instead, for runs that must repeat exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lm_eval_longmem.data.booksum import SPLITS
from lm_eval_longmem.tasks.task_options import MAX_COUNT, MAX_TOKENS, check_choice, check_local_path, check_range

OPTION_PREFIX = "bs_"
PAPER_LENGTHS = (16384, 32768, 65536, 131072, 262144, 500000)  # Figure 4's axis: 16K ... 500K


@dataclass(frozen=True)
class BookSumOptions:
    """`--metadata bs_<name>=...`."""

    lengths: tuple[int, ...] = field(
        default=PAPER_LENGTHS,
        metadata={"help": "input budgets: each book is cut to its first N tokens (the paper: 16K to 500K)"},
    )
    split: str = field(default="test", metadata={"help": "BookSum split: test, validation or train"})
    books: int | None = field(default=None, metadata={"help": "evaluate only the first N books of the split"})
    greedy: bool = field(
        default=False, metadata={"help": "greedy decoding instead of the paper's sampling (T 0.5, top-p 0.95)"}
    )
    data: str | None = field(
        default=None,
        metadata={"help": "local copy of the split (<split>.parquet/.jsonl, or a directory), for offline machines"},
    )

    def validate(self) -> None:
        """Ranges and choices, before any model loads (the start-up check runs it too)."""
        check_range(f"{OPTION_PREFIX}lengths", self.lengths, 1, MAX_TOKENS)
        check_choice(f"{OPTION_PREFIX}split", self.split, SPLITS)
        check_range(f"{OPTION_PREFIX}books", self.books, 1, MAX_COUNT)
        check_local_path(f"{OPTION_PREFIX}data", self.data, "<split>.parquet or .jsonl, or a folder holding one")


# The paper's decoding (section 3.2), and the greedy alternative.
SAMPLED = {"until": [], "max_gen_toks": 1024, "do_sample": True, "temperature": 0.5, "top_p": 0.95}
GREEDY = {"until": [], "max_gen_toks": 1024, "do_sample": False, "temperature": 0.0}


def decoding(configured: dict | None, options: BookSumOptions) -> dict:
    """The YAML's generation settings with the decoding `options` choose: the paper's sampling,
    or greedy without the sampling-only keys (which Hugging Face's generate would warn about)."""
    chosen = GREEDY if options.greedy else SAMPLED
    kept = {k: v for k, v in (configured or {}).items() if not (options.greedy and k in ("top_p", "top_k"))}
    return {**kept, **chosen}
