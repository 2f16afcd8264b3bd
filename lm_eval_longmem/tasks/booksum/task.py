"""`longmem_booksum` as an lm-eval task: one summary per (book, input budget), scored with Rouge.

Documents are the books of the split at each budget, listed round robin over the budgets, so
`--limit N` with N >= the number of budgets covers every budget. A document's prompt is cut
when lm-eval asks for it (`doc_to_text`), with the generation settings then in force (the
`--gen_kwargs` of the command line included), so the room kept for the summary is the room
the model will use. Metrics per budget: R1, R2, RL, overall (x 100) and the number of books
the model's context cut; `rouge_by_length` holds them all.
"""

from __future__ import annotations

import logging
from collections import Counter

import datasets

from lm_eval_longmem.data.booksum import BOOKSUM_DATASET, load_books
from lm_eval_longmem.tasks.booksum import metrics
from lm_eval_longmem.tasks.booksum.book_cut import BookCut, plan_cut, tokenize_book
from lm_eval_longmem.tasks.booksum.prompt import summary_prompt
from lm_eval_longmem.tasks.booksum.protocol import (
    OPTION_PREFIX,
    SAMPLED,
    BookSumOptions,
    decoding,
)
from lm_eval_longmem.tasks.booksum.rouge import rouge_f
from lm_eval_longmem.tasks.buckets import bucket_tag, round_robin, tag_width
from lm_eval_longmem.tasks.model_view import model_view
from lm_eval_longmem.tasks.prompt_budget import PromptBudget, max_gen_toks
from lm_eval_longmem.tasks.python_task import LongMemTask
from lm_eval_longmem.tasks.task_options import TaskOptionError, parse_task_options

logger = logging.getLogger(__name__)

TASK_NAME = "longmem_booksum"


class BookSumTask(LongMemTask):
    TASK_NAME = TASK_NAME
    GENERATION_KWARGS = SAMPLED

    def __init__(self, config: dict | None = None, **kwargs):
        self._built = False  # lm-eval's constructor reads one prompt, before --gen_kwargs are applied
        super().__init__(config, **kwargs)
        self._built = True

    # --- data -----------------------------------------------------------------------------
    def download(self, dataset_kwargs=None, **kwargs) -> None:
        metadata = dict(self.config.metadata or {})
        options = parse_task_options(BookSumOptions, metadata, OPTION_PREFIX)
        self.options = options
        self._model = model_view(metadata)
        books = load_books(options.split, options.data)[: options.books]
        self._books = [tokenize_book(book.text, self._model.tokenizer) for book in books]
        self._references = [book.references for book in books]
        self.config.generation_kwargs = decoding(self.config.generation_kwargs, options)
        self._cuts: dict[tuple[int, int], tuple[BookCut, str]] = {}
        self._cuts_for_gen_toks: int | None = None
        per_budget = [
            [
                {"book": k, "title": book.title, "budget": budget, "book_tokens": tokenized.tokens}
                for k, (book, tokenized) in enumerate(zip(books, self._books))
            ]
            for budget in options.lengths
        ]
        self.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(round_robin(per_budget))})
        self.config.metadata["protocol"] = {
            "split": options.split,
            "lengths": list(options.lengths),
            "kept_end": "first",  # each book is cut to its first N tokens
            "books": [
                {"title": b.title, "tokens": t.tokens, "references": len(b.references)}
                for b, t in zip(books, self._books)
            ],
            "decoding": "greedy" if options.greedy else "sampled (temperature 0.5, top-p 0.95)",
            "data": options.data or f"{BOOKSUM_DATASET} ({options.split})",
            "tokenizer": self._model.source,
            "method": self._model.method.describe(),
            "bounded_memory": self._model.bounded_memory,  # reads whole books: the context never cuts
            "context_length": self._model.context_length,
        }

    def _cut(self, doc) -> tuple[BookCut, str]:
        """The cut of every document, planned once for the generation length in force."""
        generated = max_gen_toks(self.config.generation_kwargs)
        if self._cuts_for_gen_toks != generated:
            self._cuts = self._plan(PromptBudget(self._model.tokenizer, self._model.context_length, generated))
            self._cuts_for_gen_toks = generated
        return self._cuts[(int(doc["book"]), int(doc["budget"]))]

    def _plan(self, budget: PromptBudget) -> dict[tuple[int, int], tuple[BookCut, str]]:
        room = budget.prompt_limit - budget.tokens(summary_prompt(""))
        if room <= 0:
            raise TaskOptionError(
                f"{TASK_NAME}: the model takes {budget.context_length} tokens, which cannot hold the prompt "
                f"({budget.tokens(summary_prompt(''))} tokens without the book) and the {budget.generated} tokens "
                "of the summary. Raise the model's limit (max_length=N in --model_args, or a context-extension "
                "method), or generate fewer tokens (--gen_kwargs max_gen_toks=N)."
            )
        cuts = {}
        for doc in self.dataset["test"]:
            key = (int(doc["book"]), int(doc["budget"]))
            cuts[key] = plan_cut(self._books[key[0]], key[1], room, lambda text: budget.fits(summary_prompt(text)))
        cut = Counter(c.budget for c, _ in cuts.values() if c.cut_by_context)
        for length, count in sorted(cut.items()):
            logger.warning(
                "%s: the model's context cut %d of %d books shorter than the budget of %d tokens "
                "(prompts up to %d tokens: %d minus %d generated); counted as cut_books@len%s.",
                TASK_NAME,
                count,
                len(self._books),
                length,
                budget.prompt_limit,
                budget.context_length,
                budget.generated,
                self._tag(length)[3:],
            )
        return cuts

    def doc_to_text(self, doc, doc_to_text=None) -> str:
        if not self._built:  # lm-eval only checks the type: no cut is planned for a length not yet final
            return summary_prompt("")
        return summary_prompt(self._cut(doc)[1])

    def doc_to_target(self, doc, doc_to_target=None) -> str:
        return self._references[int(doc["book"])][0]

    # --- metrics --------------------------------------------------------------------------
    def _tag(self, budget: int) -> str:
        return "len" + bucket_tag(budget, tag_width(self.options.lengths))

    def process_results(self, doc, results) -> dict:
        (summary,) = results
        cut, _ = self._cut(doc)
        record = {
            "title": doc.get("title"),
            "budget": cut.budget,
            "book_tokens": cut.book_tokens,
            "kept_tokens": cut.kept_tokens,
            "cut_by_context": cut.cut_by_context,
            "pairs": [list(rouge_f(summary, reference)) for reference in self._references[int(doc["book"])]],
        }
        tag = self._tag(cut.budget)
        return {
            **{f"{score}@{tag}": record for score in metrics.SCORES},
            f"cut_books@{tag}": record,
            "rouge_by_length": record,
        }

    def aggregation(self) -> dict:
        found = {"rouge_by_length": metrics.rouge_by_length}
        for length in self.options.lengths:
            tag = self._tag(length)
            found.update({f"{score}@{tag}": metrics.aggregate(score) for score in metrics.SCORES})
            found[f"cut_books@{tag}"] = metrics.cut_books
        return found

    def higher_is_better(self) -> dict:
        return {name: not name.startswith("cut_books") for name in self.aggregation()}
