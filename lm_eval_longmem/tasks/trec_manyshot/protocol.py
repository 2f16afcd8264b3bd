"""What the many-shot TREC task evaluates: options, demonstrations, test questions, shot counts.

Defaults follow the controlled study (§7.5; their published files): shot counts 1..1000
(`MANYSHOT_COUNTS`), 200 test questions per shot count, LongBench's prompt.

* Demonstrations come from TREC train through one seeded permutation; a shot count N takes
  its first N questions, so more shots only add examples (the curve isolates the effect of
  the count, and every shot count's prefix extends the smaller ones).
* Test questions: a seeded sample of TREC test, the same questions at every shot count.
* Every test question at one shot count shares that count's prefix (instruction +
  demonstrations); only the final "Question: ...\\nType:" differs.
* Nothing is truncated. Without `trec_shots`, shot counts whose prompts do not fit the model
  are left out with a warning; an explicit `trec_shots` that does not fit is an error.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from lm_eval_longmem.data.trec import LONGBENCH_ALL_CLASSES, MANYSHOT_COUNTS, load_manyshot_rows, load_trec
from lm_eval_longmem.data.trec_sample import load_trec_sample
from lm_eval_longmem.tasks.prompt_budget import PromptBudget
from lm_eval_longmem.tasks.task_options import (
    MAX_COUNT,
    MAX_SEED,
    TaskOptionError,
    check_choice,
    check_local_path,
    check_range,
)
from lm_eval_longmem.tasks.trec_manyshot import longbench_format

logger = logging.getLogger(__name__)

OPTION_PREFIX = "trec_"
SOURCES = ("cogcomp", "manyshots", "sample")


@dataclass(frozen=True)
class TrecOptions:
    """`--metadata trec_<name>=...`."""

    shots: tuple[int, ...] | None = field(
        default=None,
        metadata={  # default: MANYSHOT_COUNTS
            "help": "shot counts; default: the published ones from 1 to 1000 that fit the model"
        },
    )
    questions: int = field(default=200, metadata={"help": "test questions per shot count"})
    seed: int = field(default=0, metadata={"help": "seed of the demonstration permutation and the test sample"})
    source: str = field(
        default="cogcomp",
        metadata={
            "help": "cogcomp (sample from CogComp/trec), manyshots (the published prompt files) or sample "
            "(72 TREC-style questions shipped for offline runs; not TREC, not comparable)"
        },
    )
    data_dir: str | None = field(default=None, metadata={"help": "local copies of the source, for offline machines"})

    def validate(self) -> None:
        """Ranges and choices, before any model loads (the start-up check runs it too)."""
        check_choice(f"{OPTION_PREFIX}source", self.source, SOURCES)
        check_range(f"{OPTION_PREFIX}shots", self.shots, 1, MAX_COUNT)
        check_range(f"{OPTION_PREFIX}questions", self.questions, 1, MAX_COUNT)
        check_range(f"{OPTION_PREFIX}seed", self.seed, 0, MAX_SEED)
        check_local_path(f"{OPTION_PREFIX}data_dir", self.data_dir, "a folder of the source's local files")
        if self.source == "sample" and self.data_dir is not None:
            raise TaskOptionError(
                "trec_source=sample reads the questions shipped with the package: drop trec_data_dir, or use "
                "trec_source=cogcomp with trec_data_dir=DIR for local copies of CogComp/trec"
            )
        if self.source == "manyshots" and self.shots is not None:
            missing = sorted(set(self.shots) - set(MANYSHOT_COUNTS))
            if missing:
                raise TaskOptionError(
                    f"trec_source=manyshots has files for {list(MANYSHOT_COUNTS)} shots only, not {missing}"
                )

    @property
    def shot_counts(self) -> list[int]:
        return sorted(set(self.shots)) if self.shots is not None else list(MANYSHOT_COUNTS)


@dataclass(frozen=True)
class TestItem:
    prefix: str  # shared by all items of the bucket for the cogcomp source
    query: str  # "Question: ...\nType:"
    answers: tuple[str, ...]

    @property
    def prompt(self) -> str:
        return self.prefix + self.query


@dataclass(frozen=True)
class ShotBucket:
    shots: int
    items: tuple[TestItem, ...]
    all_classes: tuple[str, ...]


def cogcomp_buckets(options: TrecOptions) -> list[ShotBucket]:
    """TREC questions (CogComp/trec, or the written sample) in the study's protocol."""
    splits = load_trec_sample() if options.source == "sample" else load_trec(options.data_dir)
    train, test = splits["train"], splits["test"]
    counts = [n for n in options.shot_counts if n <= len(train)]
    if len(counts) < len(options.shot_counts):
        message = f"trec_shots: {options.shot_counts[-1]} shots asked, but TREC train has {len(train)} questions"
        if options.shots is not None or not counts:
            raise TaskOptionError(message)
        logger.warning("%s; testing %s shots only.", message, counts)
    order = np.random.default_rng([options.seed, 0]).permutation(len(train))
    tests = [test[i] for i in np.random.default_rng([options.seed, 1]).permutation(len(test))[: options.questions]]
    buckets = []
    for shots in counts:
        prefix = longbench_format.shared_prefix((train[i].text, train[i].label) for i in order[:shots])
        items = tuple(TestItem(prefix, longbench_format.query(q.text), (q.label,)) for q in tests)
        buckets.append(ShotBucket(shots, items, LONGBENCH_ALL_CLASSES))
    return buckets


def manyshot_buckets(options: TrecOptions) -> list[ShotBucket]:
    buckets = []
    for shots in options.shot_counts:
        rows = load_manyshot_rows(shots, options.data_dir)[: options.questions]
        if not rows:
            raise TaskOptionError(f"trec_source=manyshots: the {shots}-shot file has no rows")
        items = tuple(
            TestItem(longbench_format.prefix_from_longbench_context(r["context"]), r["input"], tuple(r["answers"]))
            for r in rows
        )
        buckets.append(ShotBucket(shots, items, tuple(rows[0]["all_classes"])))
    return buckets


def build_buckets(options: TrecOptions) -> list[ShotBucket]:
    return manyshot_buckets(options) if options.source == "manyshots" else cogcomp_buckets(options)


def longest_prompt_tokens(bucket: ShotBucket, budget: PromptBudget) -> int:
    prefixes = {item.prefix for item in bucket.items}
    if len(prefixes) == 1:  # one shared prefix: only the longest question can overflow
        longest = max(bucket.items, key=lambda item: budget.tokens(item.query))
        return budget.tokens(longest.prompt)
    return max(budget.tokens(item.prompt) for item in bucket.items)


def fitting_buckets(buckets: list[ShotBucket], budget: PromptBudget, explicit: bool) -> tuple[list[ShotBucket], dict]:
    """The buckets whose every prompt fits; raises for an explicit shot count that does not."""
    sizes = {b.shots: longest_prompt_tokens(b, budget) for b in buckets}
    fit = [b for b in buckets if sizes[b.shots] <= budget.prompt_limit]
    too_long = [b.shots for b in buckets if sizes[b.shots] > budget.prompt_limit]
    largest = max((b.shots for b in fit), default=None)
    detail = ""
    if too_long:
        detail = (
            f"longmem_trec_manyshot: {too_long} shots need up to {max(sizes[s] for s in too_long)} prompt tokens, "
            "but the "
            f"model takes {budget.context_length} tokens including the {budget.generated} generated ones "
            f"(prompts up to {budget.prompt_limit}). Largest tested shot count that fits: {largest}."
        )
        if explicit:
            raise TaskOptionError(
                detail + " Lower trec_shots, or raise the model's limit explicitly (max_length=N in --model_args, "
                "or a context-extension method). Nothing is truncated."
            )
        logger.warning("%s Leaving them out (set trec_shots to choose shot counts).", detail)
    if not fit:
        raise TaskOptionError("longmem_trec_manyshot: no shot count fits the model. " + detail)
    return fit, sizes
