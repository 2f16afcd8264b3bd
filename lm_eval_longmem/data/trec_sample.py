"""A small TREC-style sample for offline runs: `--metadata trec_source=sample`.

Not TREC: 72 questions written for this project in TREC's style (its habit of a space before
the question mark included), each labelled with a CogComp/trec fine label, split as 56
demonstrations and 16 test questions. It lets many-shot TREC run where the Hub cannot be
reached (the tiny study, smoke tests); its accuracies are not comparable with published ones.
"""

from __future__ import annotations

from lm_eval_longmem.data.trec import COGCOMP_FINE_NAMES, FINE_LABELS, LabeledQuestion

SAMPLE_QUESTIONS = (  # (question, CogComp fine label key)
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

TRAIN_QUESTIONS = 56  # the rest are the test questions


def load_trec_sample() -> dict[str, list[LabeledQuestion]]:
    """{"train": [...], "test": [...]} as `load_trec` returns them, from the written sample."""
    labelled = [LabeledQuestion(text, FINE_LABELS[COGCOMP_FINE_NAMES.index(key)]) for text, key in SAMPLE_QUESTIONS]
    return {"train": labelled[:TRAIN_QUESTIONS], "test": labelled[TRAIN_QUESTIONS:]}
