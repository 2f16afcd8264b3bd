"""data=passkey: every training row is one whole passkey instance (the paper fine-tunes on
instances, one per input), so packing never separates a key from its question."""

import re

import numpy as np
import pytest
from transformers import AutoTokenizer

from lm_eval_longmem.models.checkpoint.default_model import default_model_dir
from lm_eval_longmem_training.data.packing import pack_documents
from lm_eval_longmem_training.data.text_sources import open_text_source
from lm_eval_longmem_training.errors import TrainingError


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(str(default_model_dir()))


@pytest.mark.parametrize("seq_len", [160, 300])
def test_each_row_holds_one_key_its_question_and_its_answer(tokenizer, seq_len):
    source = open_text_source("passkey", seed=3, seq_len=seq_len, tokenizer=tokenizer)
    assert source.one_per_row
    eos = tokenizer.eos_token_id
    stream = pack_documents(source.documents, tokenizer, eos, limit=12 * seq_len, row_length=seq_len)
    rows = stream.reshape(-1, seq_len)
    assert len(rows) == 12
    for row in rows:
        ends = np.flatnonzero(row == eos)
        assert ends.size and row[-1] == eos and np.all(row[ends[0] :] == eos)  # EOS padding closes the row
        assert seq_len - ends[0] <= 12  # the prompt filled the row up to the answer's room
        text = tokenizer.decode(row[: ends[0]].tolist())
        assert text.count("The pass key is") == 2 and text.count("What is the pass key?") == 1
        key = re.search(r"The pass key is (\d+)\. Remember it\.", text).group(1)
        assert text.endswith(f"What is the pass key? The pass key is {key}.")


def test_a_row_too_short_for_a_prompt_is_one_training_error(tokenizer):
    source = open_text_source("passkey", seed=0, seq_len=40, tokenizer=tokenizer)
    with pytest.raises(TrainingError, match="seq_len=40 is too short"):
        next(iter(source.documents))


def test_a_document_longer_than_a_row_is_refused_not_cut(tokenizer):
    with pytest.raises(TrainingError, match="does not fit one row"):
        pack_documents(["word " * 50], tokenizer, tokenizer.eos_token_id, row_length=20)
