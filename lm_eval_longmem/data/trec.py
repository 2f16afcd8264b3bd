"""TREC question classification (Li & Roth 2002), labelled with LongBench's 50 fine-type names.

Sources:

* `CogComp/trec` — 5,452 train and 500 test questions; columns `text` (str), `coarse_label`
  and `fine_label` (ints, ClassLabel). Its main branch holds a loading script, which
  `datasets` >= 4 refuses, so we load the Hub's parquet conversion
  (`revision="refs/convert/parquet"`, files `default/{train,test}/0000.parquet`).
* `Leooyii/manyshots_trec` — the controlled study's published prompts: one JSON-lines file
  per shot count, `trec_{N}shots.jsonl` for N in `MANYSHOT_COUNTS`, in LongBench's schema
  (`context` = the N demonstrations, `input` = the test question, `answers`, `all_classes`,
  `length`), as read by their `longbench/pred.py`.

Both also load from local copies with the same columns (for machines without the Hub).
"""

from __future__ import annotations

from dataclasses import dataclass

from lm_eval_longmem.data.hub_datasets import (
    DatasetUnavailableError,
    find_local_files,
    load_hub_dataset,
    load_local_files,
    require_columns,
)

TREC_DATASET = "CogComp/trec"
PARQUET_REVISION = "refs/convert/parquet"
MANYSHOT_DATASET = "Leooyii/manyshots_trec"
MANYSHOT_COUNTS = (1, 5, 10, 25, 50, 75, 100, 200, 300, 400, 500, 625, 750, 875, 1000)

# LongBench's name for each fine label, indexed by CogComp/trec's `fine_label` id
# (ABBR:abb, ABBR:exp, ENTY:animal, ..., NUM:weight). The spellings are LongBench's own,
# including "Lasting time of somethin" and "Group or organization of person": scoring
# matches these strings, so they must not be "corrected".
FINE_LABELS = (
    "Abbreviation",  # ABBR:abb
    "Expression abbreviated",  # ABBR:exp
    "Animal",  # ENTY:animal
    "Organ of body",  # ENTY:body
    "Color",  # ENTY:color
    "Invention, book and other creative piece",  # ENTY:cremat
    "Currency name",  # ENTY:currency
    "Disease and medicine",  # ENTY:dismed
    "Event",  # ENTY:event
    "Food",  # ENTY:food
    "Musical instrument",  # ENTY:instru
    "Language",  # ENTY:lang
    "Letter like a-z",  # ENTY:letter
    "Other entity",  # ENTY:other
    "Plant",  # ENTY:plant
    "Product",  # ENTY:product
    "Religion",  # ENTY:religion
    "Sport",  # ENTY:sport
    "Element and substance",  # ENTY:substance
    "Symbols and sign",  # ENTY:symbol
    "Techniques and method",  # ENTY:techmeth
    "Equivalent term",  # ENTY:termeq
    "Vehicle",  # ENTY:veh
    "Word with a special property",  # ENTY:word
    "Definition of something",  # DESC:def
    "Description of something",  # DESC:desc
    "Manner of an action",  # DESC:manner
    "Reason",  # DESC:reason
    "Group or organization of person",  # HUM:gr
    "Individual",  # HUM:ind
    "Title of a person",  # HUM:title
    "Description of a person",  # HUM:desc
    "City",  # LOC:city
    "Country",  # LOC:country
    "Mountain",  # LOC:mount
    "Other location",  # LOC:other
    "State",  # LOC:state
    "Postcode or other code",  # NUM:code
    "Number of something",  # NUM:count
    "Date",  # NUM:date
    "Distance, linear measure",  # NUM:dist
    "Price",  # NUM:money
    "Order, rank",  # NUM:ord
    "Other number",  # NUM:other
    "Lasting time of somethin",  # NUM:period
    "Percent, fraction",  # NUM:perc
    "Speed",  # NUM:speed
    "Temperature",  # NUM:temp
    "Size, area and volume",  # NUM:volsize
    "Weight",  # NUM:weight
)

# CogComp/trec's ClassLabel names for `fine_label` (the ids FINE_LABELS is indexed by).
COGCOMP_FINE_NAMES = (
    "ABBR:abb",
    "ABBR:exp",
    "ENTY:animal",
    "ENTY:body",
    "ENTY:color",
    "ENTY:cremat",
    "ENTY:currency",
    "ENTY:dismed",
    "ENTY:event",
    "ENTY:food",
    "ENTY:instru",
    "ENTY:lang",
    "ENTY:letter",
    "ENTY:other",
    "ENTY:plant",
    "ENTY:product",
    "ENTY:religion",
    "ENTY:sport",
    "ENTY:substance",
    "ENTY:symbol",
    "ENTY:techmeth",
    "ENTY:termeq",
    "ENTY:veh",
    "ENTY:word",
    "DESC:def",
    "DESC:desc",
    "DESC:manner",
    "DESC:reason",
    "HUM:gr",
    "HUM:ind",
    "HUM:title",
    "HUM:desc",
    "LOC:city",
    "LOC:country",
    "LOC:mount",
    "LOC:other",
    "LOC:state",
    "NUM:code",
    "NUM:count",
    "NUM:date",
    "NUM:dist",
    "NUM:money",
    "NUM:ord",
    "NUM:other",
    "NUM:period",
    "NUM:perc",
    "NUM:speed",
    "NUM:temp",
    "NUM:volsize",
    "NUM:weight",
)
COGCOMP_COARSE_NAMES = ("ABBR", "ENTY", "DESC", "HUM", "LOC", "NUM")

# LongBench's `all_classes` for trec, in its order. The order matters: classification_score
# walks this list and edits its matches while iterating (see trec_manyshot/classification_score.py).
LONGBENCH_ALL_CLASSES = (
    "Food",
    "Date",
    "Order, rank",
    "Speed",
    "Disease and medicine",
    "Word with a special property",
    "Abbreviation",
    "Language",
    "Letter like a-z",
    "Other entity",
    "Animal",
    "Expression abbreviated",
    "Price",
    "Techniques and method",
    "Musical instrument",
    "Mountain",
    "Currency name",
    "Event",
    "Product",
    "State",
    "Individual",
    "Organ of body",
    "Reason",
    "Manner of an action",
    "City",
    "Religion",
    "Invention, book and other creative piece",
    "Distance, linear measure",
    "Temperature",
    "Postcode or other code",
    "Size, area and volume",
    "Sport",
    "Country",
    "Other location",
    "Lasting time of somethin",
    "Equivalent term",
    "Description of something",
    "Weight",
    "Vehicle",
    "Color",
    "Other number",
    "Definition of something",
    "Element and substance",
    "Description of a person",
    "Symbols and sign",
    "Number of something",
    "Plant",
    "Percent, fraction",
    "Group or organization of person",
    "Title of a person",
)

CORE_COLUMNS = ("text", "fine_label")
MANYSHOT_COLUMNS = ("context", "input", "answers", "all_classes")


@dataclass(frozen=True)
class LabeledQuestion:
    text: str
    label: str  # one of FINE_LABELS


def _cogcomp_fix() -> str:
    return (
        'run once where the Hub is reachable to cache it, e.g. `python -c "import datasets; '
        f"datasets.load_dataset('{TREC_DATASET}', revision='{PARQUET_REVISION}')\"` (with HF_DATASETS_OFFLINE "
        "unset), or point --metadata trec_data_dir=DIR at local copies: DIR/train.parquet and DIR/test.parquet "
        "(or .jsonl) with the columns text, coarse_label, fine_label."
    )


def _to_questions(table, source: str) -> list[LabeledQuestion]:
    require_columns(table, CORE_COLUMNS, source)
    names = getattr(table.features["fine_label"], "names", None)
    if names is not None and tuple(names) != COGCOMP_FINE_NAMES:
        raise DatasetUnavailableError(
            f"{source}: fine_label's class names are not CogComp/trec's (ids would map to the wrong labels): {names}"
        )
    questions = []
    for text, label in zip(table["text"], table["fine_label"]):
        if not isinstance(label, int) or not 0 <= label < len(FINE_LABELS):
            raise DatasetUnavailableError(f"{source}: fine_label must be an int in 0..49, got {label!r}")
        questions.append(LabeledQuestion(text, FINE_LABELS[label]))
    return questions


def load_trec(data_dir: str | None = None) -> dict[str, list[LabeledQuestion]]:
    """{"train": [...], "test": [...]} from CogComp/trec (parquet revision) or local copies."""
    if data_dir:
        return {
            split: _to_questions(load_local_files(find_local_files(data_dir, split)), f"{data_dir} ({split})")
            for split in ("train", "test")
        }
    splits = load_hub_dataset(TREC_DATASET, revision=PARQUET_REVISION, fix=_cogcomp_fix())
    return {split: _to_questions(splits[split], f"{TREC_DATASET} ({split})") for split in ("train", "test")}


def manyshot_file(shots: int) -> str:
    return f"trec_{shots}shots"


def load_manyshot_rows(shots: int, data_dir: str | None = None) -> list[dict]:
    """The published prompts for one shot count: dicts with context, input, answers, all_classes."""
    if shots not in MANYSHOT_COUNTS:
        raise DatasetUnavailableError(
            f"{MANYSHOT_DATASET} has no {shots}-shot file; it has {', '.join(map(str, MANYSHOT_COUNTS))}."
        )
    name = manyshot_file(shots)
    if data_dir:
        table = load_local_files(find_local_files(data_dir, name))
    else:
        fix = (
            "run once where the Hub is reachable to cache it (HF_DATASETS_OFFLINE unset), or download "
            f"{MANYSHOT_DATASET}'s trec_*shots.jsonl files and pass --metadata trec_data_dir=DIR."
        )
        table = load_hub_dataset(MANYSHOT_DATASET, data_files={"test": f"{name}.jsonl"}, split="test", fix=fix)
    require_columns(table, MANYSHOT_COLUMNS, f"{name}")
    return [{column: row[column] for column in MANYSHOT_COLUMNS} for row in table]
