"""The passkey prompt, exactly as the landmark-attention code writes it.

    "\n".join([TASK_LINE, <filler before>, "The pass key is {k}. Remember it. {k} is the pass key.",
               <filler after>, "What is the pass key? The pass key is"])

(Mohtashami & Jaggi's `run_test.py`; the Infini-attention paper's appendix B shows the same
text.) The filler is FILLER repeated and joined by spaces; the original cuts it to a number
of *characters* (`" ".join([FILLER] * N)[:n]`, before and after the key alike).

Shared by the `longmem_passkey` task and training's `data=passkey` documents, which must be the
same text with keys from the same range.
"""

from __future__ import annotations

from collections.abc import Callable

from lm_eval_longmem.errors import UsageError

TASK_LINE = (
    "There is an important info hidden inside a lot of irrelevant text. Find it and memorize them. "
    "I will quiz you about the important information there."
)
FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
FILLER_SENTENCES = (
    "The grass is green.",
    "The sky is blue.",
    "The sun is yellow.",
    "Here we go.",
    "There and back again.",
)
QUESTION = "What is the pass key? The pass key is"
KEY_RANGE = (1, 50000)  # inclusive, uniform
# New tokens allowed for the answer: the landmark-attention test generates 10.
ANSWER_TOKENS = 10


class PromptTooShortError(UsageError):
    """A length leaves no room for the prompt's fixed text."""


def key_line(key: int) -> str:
    return f"The pass key is {key}. Remember it. {key} is the pass key."


def assemble(before: str, key: int, after: str) -> str:
    return "\n".join([TASK_LINE, before, key_line(key), after, QUESTION])


def filler_characters(num_chars: int) -> str:
    """The original's filler: the first `num_chars` characters of FILLER repeated, space-joined."""
    repeats = num_chars // (len(FILLER) + 1) + 1
    return " ".join([FILLER] * repeats)[:num_chars]


def filler_sentences(num_sentences: int) -> str:
    """FILLER's sentences in order, repeated, `num_sentences` of them (the same text, cut at sentence ends)."""
    cycle = len(FILLER_SENTENCES)
    return " ".join(FILLER_SENTENCES[i % cycle] for i in range(num_sentences))


def split_at_depth(total: int, depth_percent: int) -> tuple[int, int]:
    """(before, after) amounts of filler putting the key `depth_percent` % of the way in."""
    before = int(total * depth_percent / 100)  # the original's int(n_garbage * percent)
    return before, total - before


def prompt_sized_to_tokens(
    length: int, depth: int, key: int, count: Callable[[str], int], error: type[Exception] = PromptTooShortError
) -> tuple[str, int]:
    """The prompt with the most filler sentences whose token count is <= `length`, and that count.

    `count` is the model tokenizer's token count. Token counts grow with the filler (one sentence
    adds a few tokens), so a binary search over sentences finds the largest fit. `error` is what a
    length too short for the prompt's fixed text raises (the task's option error, for the task).
    """

    def build(sentences: int) -> str:
        before, after = split_at_depth(sentences, depth)
        return assemble(filler_sentences(before), key, filler_sentences(after))

    bare = count(build(0))
    if bare > length:
        raise error(
            f"longmem_passkey: length {length} is too short: the prompt without any filler already takes {bare} "
            "tokens. Use larger pk_lengths."
        )
    low, high = 0, 1
    while count(build(high)) <= length:
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if count(build(mid)) <= length else (low, mid)
    prompt = build(low)
    return prompt, count(prompt)


def prompt_for_characters(num_chars: int, depth: int, key: int) -> str:
    """The original code's prompt: `num_chars` filler characters split at the depth."""
    before, after = split_at_depth(num_chars, depth)
    return assemble(filler_characters(before), key, filler_characters(after))
