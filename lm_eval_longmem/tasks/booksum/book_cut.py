"""Cutting a book to its first N tokens of the evaluated model's tokenizer.

The budget counts book tokens (the prompt's header and instruction come on top), so every
method reads the same text at one budget. The first N tokens are kept: the paper's Figure 4
gives the model more of the book as the input grows from 16K to 500K tokens, which for a
model that reads from the start means a longer prefix, and a summary of a book needs its
beginning (the characters, the setting). The cut falls at a token boundary of the original
text (character offsets of the tokenizer), so no text is re-decoded.

A full-attention model whose context is shorter than the budget reads fewer tokens still:
`plan_cut` keeps what fits (prompt + the tokens to generate), and the cut is recorded as made
by the model's context, never silently. A bounded-memory method has no such limit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TokenizedBook:
    """A book's text and where each of its tokens ends in it (characters)."""

    text: str
    token_ends: np.ndarray  # int64, one per token, non-decreasing

    @property
    def tokens(self) -> int:
        return len(self.token_ends)

    def first_tokens(self, count: int) -> str:
        """The text of the book's first `count` tokens (the whole book when it has fewer)."""
        if count <= 0:
            return ""
        if count >= self.tokens:
            return self.text
        return self.text[: int(self.token_ends[count - 1])]


def tokenize_book(text: str, tokenizer) -> TokenizedBook:
    """The book's tokens without special tokens, as character end offsets."""
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ends = np.fromiter((end for _, end in encoded["offset_mapping"]), dtype=np.int64)
    return TokenizedBook(text, np.maximum.accumulate(ends) if len(ends) else ends)


@dataclass(frozen=True)
class BookCut:
    budget: int  # the option: at most this many book tokens
    book_tokens: int  # the whole book
    kept_tokens: int  # what the prompt holds

    @property
    def wanted_tokens(self) -> int:
        """What the budget alone would keep."""
        return min(self.budget, self.book_tokens)

    @property
    def cut_by_context(self) -> bool:
        """The model's context, not the budget, decided where the book stops."""
        return self.kept_tokens < self.wanted_tokens


def plan_cut(book: TokenizedBook, budget: int, room: int, fits: Callable[[str], bool]) -> tuple[BookCut, str]:
    """The cut of `book` at `budget` tokens, within `room` book tokens of the model's context,
    and the kept text; `fits(text)` says whether the whole prompt around `text` fits.

    Tokens at the cut may merge differently once the prompt is tokenized whole, so the kept
    count steps down until the prompt fits (a few tokens at most)."""
    kept = max(0, min(budget, book.tokens, room))
    text = book.first_tokens(kept)
    while kept > 0 and not fits(text):
        kept -= 1
        text = book.first_tokens(kept)
    return BookCut(budget, book.tokens, kept), text
