"""TEST DATA for `longmem_booksum`, written in book-level BookSum's schema — NOT BookSum.

The "books" are three of Aesop's fables in George Fyler Townsend's translation (1867, public
domain); the reference summaries were written for these tests and appear in no dataset. The
files carry the columns the task reads from `abertsch/booksum-fullbooks` (`book`, `summary`,
plus `title` and `source`), one row per (book, summary) as there, so one fable has two
references. Used by the tests, the `longmem` group's offline run and benchmarks/booksum_fixture.py.
"""

from __future__ import annotations

from pathlib import Path

SOURCE = "written for the lm-eval-longmem tests (not BookSum)"

FABLES = {
    "The Fox and the Grapes (test data)": (
        "A Famished Fox saw some clusters of ripe black grapes hanging from a trellised vine. She resorted to all "
        "her tricks to get at them, but wearied herself in vain, for she could not reach them. At last she turned "
        'away, hiding her disappointment and saying: "The Grapes are sour, and not ripe as I thought."'
    ),
    "The Hare and the Tortoise (test data)": (
        'A Hare one day ridiculed the short feet and slow pace of the Tortoise, who replied, laughing: "Though you '
        'be swift as the wind, I will beat you in a race." The Hare, believing her assertion to be simply '
        "impossible, assented to the proposal; and they agreed that the Fox should choose the course and fix the "
        "goal. On the day appointed for the race the two started together. The Tortoise never for a moment "
        "stopped, but went on with a slow but steady pace straight to the end of the course. The Hare, lying down "
        "by the wayside, fell fast asleep. At last waking up, and moving as fast as he could, he saw the Tortoise "
        "had reached the goal, and was comfortably dozing after her fatigue. Slow but steady wins the race."
    ),
    "The Shepherd's Boy and the Wolf (test data)": (
        "A Shepherd-boy, who watched a flock of sheep near a village, brought out the villagers three or four "
        'times by crying out, "Wolf! Wolf!" and when his neighbors came to help him, laughed at them for their '
        "pains. The Wolf, however, did truly come at last. The Shepherd-boy, now really alarmed, shouted in an "
        'agony of terror: "Pray, do come and help me; the Wolf is killing the sheep"; but no one paid any heed '
        "to his cries, nor rendered any assistance. The Wolf, having no cause of fear, at his leisure lacerated "
        "or destroyed the whole flock. There is no believing a liar, even when he speaks the truth."
    ),
}

SUMMARIES = {
    "The Fox and the Grapes (test data)": [
        "A hungry fox tries every trick to reach grapes on a vine, fails, and walks off saying they were sour.",
    ],
    "The Hare and the Tortoise (test data)": [
        "A hare mocks a slow tortoise, who challenges him to a race. The hare sleeps by the road while the "
        "tortoise keeps going and wins.",
        "Slow and steady beats fast and careless: the tortoise wins the race because the hare naps.",
    ],
    "The Shepherd's Boy and the Wolf (test data)": [
        "A shepherd boy fools the villagers with false cries of wolf; when a wolf really comes nobody believes "
        "him and the flock is destroyed.",
    ],
}


def booksum_rows() -> dict[str, list[str]]:
    """One row per (fable, summary), in the task's input schema."""
    rows = {"title": [], "source": [], "book": [], "summary": []}
    for title, book in FABLES.items():
        for summary in SUMMARIES[title]:
            rows["title"].append(title)
            rows["source"].append(SOURCE)
            rows["book"].append(book)
            rows["summary"].append(summary)
    return rows


def write_booksum_fixture(directory: Path, split: str = "test", fmt: str = "parquet") -> Path:
    """DIR/<split>.<parquet|jsonl> with the fixture rows; returns DIR (the value of bs_data)."""
    import datasets

    directory.mkdir(parents=True, exist_ok=True)
    table = datasets.Dataset.from_dict(booksum_rows())
    if fmt == "parquet":
        table.to_parquet(str(directory / f"{split}.parquet"))
    else:
        table.to_json(str(directory / f"{split}.jsonl"), lines=True)
    return directory
