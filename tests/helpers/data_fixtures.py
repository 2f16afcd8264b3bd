"""Small stand-ins for TREC and L-Eval TopicRet, written with the real datasets' schemas.

Never copies of the datasets: the questions below are written for these tests (TREC-style,
with the TREC tokenization habit of a space before the question mark), and the TopicRet
records are generated. Used by the tests and by benchmarks/trec_manyshot_fixture.py.
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_longmem.data.trec import COGCOMP_COARSE_NAMES, COGCOMP_FINE_NAMES, FINE_LABELS

# (question, CogComp fine label key)
PLAUSIBLE_TREC_QUESTIONS = (
    ("What does NATO stand for ?", "ABBR:exp"),
    ("What is the abbreviation for the United Nations Children 's Fund ?", "ABBR:abb"),
    ("What does the acronym CPU mean ?", "ABBR:exp"),
    ("What is the short form of the word ' laboratory ' ?", "ABBR:abb"),
    ("What is the largest animal that ever lived ?", "ENTY:animal"),
    ("What kind of bird is the national symbol of the United States ?", "ENTY:animal"),
    ("Which organ produces insulin ?", "ENTY:body"),
    ("What color is a ripe banana ?", "ENTY:color"),
    ("What novel begins with the line ' Call me Ishmael ' ?", "ENTY:cremat"),
    ("What is the currency of Japan ?", "ENTY:currency"),
    ("What disease is caused by a lack of vitamin C ?", "ENTY:dismed"),
    ("What war ended with the Treaty of Versailles ?", "ENTY:event"),
    ("What food is traditionally eaten on Thanksgiving in America ?", "ENTY:food"),
    ("What instrument did Louis Armstrong play ?", "ENTY:instru"),
    ("What language is spoken in Brazil ?", "ENTY:lang"),
    ("What letter comes after K in the alphabet ?", "ENTY:letter"),
    ("What is the name of the tool used to measure air pressure ?", "ENTY:other"),
    ("What tree produces acorns ?", "ENTY:plant"),
    ("What company makes the iPhone ?", "HUM:gr"),
    ("What brand of car is the Mustang ?", "ENTY:product"),
    ("What religion was founded by Siddhartha Gautama ?", "ENTY:religion"),
    ("What sport is played at Wimbledon ?", "ENTY:sport"),
    ("What gas do plants absorb from the air ?", "ENTY:substance"),
    ("What is the chemical symbol for gold ?", "ENTY:symbol"),
    ("How do you say ' thank you ' in sign language ?", "ENTY:techmeth"),
    ("What is another word for a baby kangaroo ?", "ENTY:termeq"),
    ("What was the name of the first ship to reach the South Pole region ?", "ENTY:veh"),
    ("What word means fear of spiders ?", "ENTY:word"),
    ("What is photosynthesis ?", "DESC:def"),
    ("What is a black hole ?", "DESC:def"),
    ("What does a cardiologist do ?", "DESC:desc"),
    ("What is the origin of the word ' quarantine ' ?", "DESC:desc"),
    ("How does a refrigerator keep food cold ?", "DESC:manner"),
    ("How did the dinosaurs become extinct ?", "DESC:manner"),
    ("Why is the sky blue ?", "DESC:reason"),
    ("Why do leaves change color in the fall ?", "DESC:reason"),
    ("What band recorded the album Abbey Road ?", "HUM:gr"),
    ("Who wrote Hamlet ?", "HUM:ind"),
    ("Who was the first man to walk on the moon ?", "HUM:ind"),
    ("Who painted the Mona Lisa ?", "HUM:ind"),
    ("What was Winston Churchill 's title during World War II ?", "HUM:title"),
    ("Who was Cleopatra ?", "HUM:desc"),
    ("What city is known as the Big Apple ?", "LOC:city"),
    ("What is the capital of Australia ?", "LOC:city"),
    ("What country has the largest population ?", "LOC:country"),
    ("Which country gave the Statue of Liberty to the United States ?", "LOC:country"),
    ("What is the highest mountain in Africa ?", "LOC:mount"),
    ("Where is the Great Barrier Reef ?", "LOC:other"),
    ("What river flows through Cairo ?", "LOC:other"),
    ("What state is home to the Grand Canyon ?", "LOC:state"),
    ("What is the telephone area code for Manhattan ?", "NUM:code"),
    ("How many players are on a soccer team ?", "NUM:count"),
    ("How many bones are in the human body ?", "NUM:count"),
    ("When did the Berlin Wall fall ?", "NUM:date"),
    ("What year did the Titanic sink ?", "NUM:date"),
    ("How far is the Moon from the Earth ?", "NUM:dist"),
    ("How much does a gallon of milk cost ?", "NUM:money"),
    ("What place did the United States finish in the 1996 Olympic medal count ?", "NUM:ord"),
    ("What is the boiling point of water in Fahrenheit ?", "NUM:temp"),
    ("How long does it take light from the Sun to reach Earth ?", "NUM:period"),
    ("What percentage of the Earth 's surface is covered by water ?", "NUM:perc"),
    ("How fast does a cheetah run ?", "NUM:speed"),
    ("How big is the Pacific Ocean ?", "NUM:volsize"),
    ("How much does an adult elephant weigh ?", "NUM:weight"),
    ("What is the population of Canada ?", "NUM:other"),
    ("How long is a marathon ?", "NUM:dist"),
    ("Who invented the telephone ?", "HUM:ind"),
    ("What does DNA stand for ?", "ABBR:exp"),
    ("When was the Declaration of Independence signed ?", "NUM:date"),
    ("What is the capital of France ?", "LOC:city"),
    ("How many continents are there ?", "NUM:count"),
    ("What animal is known as the king of the jungle ?", "ENTY:animal"),
)


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
