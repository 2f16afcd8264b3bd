"""The prompt: the book's first tokens, then the request for a summary.

The Infini-attention paper fine-tunes its model on BookSum and prints no prompt, so this one is
ours, written for models that were not fine-tuned: plain text (no chat template unless lm-eval
is asked for one), the book first so that the book is the long part every method must carry,
and the instruction last, right before the answer, where a model that forgets the start of its
input still reads it:

    Here is the beginning of a book.

    <the book's first N tokens>

    Write a summary of the book above.
    Summary:
"""

from __future__ import annotations

HEADER = "Here is the beginning of a book.\n\n"
INSTRUCTION = "\n\nWrite a summary of the book above.\nSummary:"


def summary_prompt(book_text: str) -> str:
    return HEADER + book_text + INSTRUCTION
