"""PG-19, the one Hub dataset two tasks share (the forgetting curve's and perplexity's
`corpus=pg19`): defined once here, named by both tasks' declarations."""

from __future__ import annotations

from lm_eval_longmem.data.requirements import HubDataset


def _load_pg19():
    from lm_eval_longmem.data.corpora import load_pg19

    return load_pg19()


PG19 = HubDataset(
    "pg19",
    "emozilla/pg19-test (PG-19 test books, the forgetting curve's paper corpus)",
    _load_pg19,
    "fc_corpus=shakespeare or a path to text files",
)
