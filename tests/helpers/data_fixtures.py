"""Small stand-ins for TREC and L-Eval TopicRet, written with the real datasets' schemas.

Never copies of the datasets: the TREC questions are the package's written sample
(lm_eval_longmem/data/trec_sample.py), here written out as CogComp/trec's files, and the
TopicRet records are generated. Used by the tests and by benchmarks/trec_manyshot_fixture.py.
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_longmem.data.trec import COGCOMP_COARSE_NAMES, COGCOMP_FINE_NAMES, FINE_LABELS
from lm_eval_longmem.data.trec_sample import SAMPLE_QUESTIONS

PLAUSIBLE_TREC_QUESTIONS = SAMPLE_QUESTIONS  # the package's written sample (data/trec_sample.py)


def trec_rows(pairs) -> dict[str, list]:
    fine = [COGCOMP_FINE_NAMES.index(key) for _, key in pairs]
    coarse = [COGCOMP_COARSE_NAMES.index(COGCOMP_FINE_NAMES[f].split(":")[0]) for f in fine]
    return {"text": [q for q, _ in pairs], "coarse_label": coarse, "fine_label": fine}


def write_trec_fixture(directory: Path, train_pairs, test_pairs, fmt: str = "parquet") -> Path:
    """DIR/train.<fmt> and DIR/test.<fmt> in CogComp/trec's schema (ClassLabel ids)."""
    import datasets

    features = datasets.Features(
        {
            "text": datasets.Value("string"),
            "coarse_label": datasets.ClassLabel(names=list(COGCOMP_COARSE_NAMES)),
            "fine_label": datasets.ClassLabel(names=list(COGCOMP_FINE_NAMES)),
        }
    )
    directory.mkdir(parents=True, exist_ok=True)
    for split, pairs in (("train", train_pairs), ("test", test_pairs)):
        table = datasets.Dataset.from_dict(trec_rows(pairs), features=features)
        if fmt == "parquet":
            table.to_parquet(str(directory / f"{split}.parquet"))
        else:
            table.to_json(str(directory / f"{split}.jsonl"), lines=True)
    return directory


def longbench_label(key: str) -> str:
    return FINE_LABELS[COGCOMP_FINE_NAMES.index(key)]


TOPICS = (
    "the history of jazz",
    "the future of space tourism",
    "the benefits of gardening",
    "the psychology of habits",
    "the ethics of artificial intelligence",
    "the culture of coffee",
    "the science of sleep",
    "the economics of renewable energy",
    "the art of storytelling",
)
QUESTION = "What is the {ordinal} topic we discussed? Only give me the topic name. Do not summarize yourself."


def topicret_record(topics, turns_per_topic: int = 1) -> str:
    """A conversation record in L-Eval's TopicRet style (USER/ASSISTANT turns per topic)."""
    parts = [
        f"Below is a record of our previous conversation on {len(topics)} different topics. You are the ASSISTANT, "
        "and I am the USER. At the beginning of each topic, the USER will say 'I would like to discuss the topic of "
        "<TOPIC>'. Memorize each <TOPIC>. At the end of the record, I will ask you to retrieve the first topic name. "
        "Now the record start. "
    ]
    for topic in topics:
        parts.append(
            f"USER: I would like to discuss the topic of {topic}. \n ASSISTANT: Sure, happy to talk about {topic}. \n "
        )
        for turn in range(turns_per_topic):
            parts.append(f"USER: Tell me more, part {turn + 1}. \n ASSISTANT: Here is more about {topic}. \n ")
        parts.append(
            f"USER: Great, this is the end of our discussion on the topic {topic}, let's talk about the next topic."
        )
    return "".join(parts)


def topicret_rows(num_documents: int, topics_per_document: int = 4, turns_per_topic: int = 1) -> dict[str, list]:
    rows = {"input": [], "instructions": [], "outputs": [], "source": [], "evaluation": []}
    for d in range(num_documents):
        topics = [TOPICS[(d + k) % len(TOPICS)] for k in range(topics_per_document)]
        rows["input"].append(topicret_record(topics, turns_per_topic))
        rows["instructions"].append([QUESTION.format(ordinal=o) for o in ("first", "second", "third")])
        rows["outputs"].append([t[0].upper() + t[1:] for t in topics[:3]])
        rows["source"].append("generated for tests")
        rows["evaluation"].append("exam")
    return rows


def write_topicret_fixture(path: Path, rows: dict[str, list]) -> Path:
    """One file in L-Eval topic_retrieval_longchat's schema (.parquet or .jsonl by suffix)."""
    import datasets

    path.parent.mkdir(parents=True, exist_ok=True)
    table = datasets.Dataset.from_dict(rows)
    if path.suffix == ".parquet":
        table.to_parquet(str(path))
    else:
        table.to_json(str(path), lines=True)
    return path
