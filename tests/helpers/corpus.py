"""The tiny word vocabulary and a random text over it: the corpus and the tiny Llama's tokenizer share it."""

from __future__ import annotations

import numpy as np

WORDS = (
    "the a of and to in that it was he for on with as his at by had from they but not were all "
    "which she one her there we an been their said would what so when if more no out up who them "
    "into could time then these some two like other than any its only our my man may very over "
    "sea ship king night day house river hand heart light dark old young long gold stone water"
).split()


def make_corpus_text(num_words: int = 6000, seed: int = 7) -> str:
    rng = np.random.default_rng(seed)
    words = rng.choice(WORDS, size=num_words)
    lines = [" ".join(words[i : i + 12]) + "." for i in range(0, num_words, 12)]
    return "\n".join(lines) + "\n"
