"""The options each member of the `longmem` group needs to run on the tiny model offline."""

from pathlib import Path

from tests.helpers.booksum_fixture import write_booksum_fixture
from tests.helpers.data_fixtures import (
    PLAUSIBLE_TREC_QUESTIONS,
    topicret_rows,
    write_topicret_fixture,
    write_trec_fixture,
)


def member_options(corpus_file, data_dir: Path) -> dict[str, list[str]]:
    """member -> the --metadata it needs on the tiny model offline."""
    trec = write_trec_fixture(data_dir / "trec", PLAUSIBLE_TREC_QUESTIONS[:56], PLAUSIBLE_TREC_QUESTIONS[56:])
    topicret = write_topicret_fixture(data_dir / "topic_retrieval_longchat.parquet", topicret_rows(2))
    booksum = write_booksum_fixture(data_dir / "booksum")
    return {
        "forgetting_curve": [f"fc_corpus={corpus_file}", "fc_max_length=40", "fc_samples=2"],
        "longmem_passkey": ["pk_lengths=[64,96]", "pk_depths=[0,100]", "pk_samples=1"],
        "longmem_trec_manyshot": [f"trec_data_dir={trec}", "trec_shots=[1,5]", "trec_questions=2"],
        "longmem_topicret": [f"topicret_data={topicret}"],
        "longmem_perplexity": [f"ppl_corpus={corpus_file}"],
        "longmem_booksum": [f"bs_data={booksum}"],
    }
