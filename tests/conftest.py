"""Shared fixtures: a tiny Llama with a word-level tokenizer, a small text corpus, offline env."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest


def _run_triton_in_its_interpreter_without_a_gpu() -> None:
    """Kernel tests run Triton's interpreter on CPU tensors. triton 3.x fixes interpreter mode
    when its library is first imported (any test module may import it, e.g. through fla), so
    the switch is set here, before any test module is collected."""
    import torch

    if "TRITON_INTERPRET" not in os.environ and not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"


_run_triton_in_its_interpreter_without_a_gpu()

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


@pytest.fixture(scope="session", autouse=True)
def _isolated_environment(tmp_path_factory):
    """Offline, and a private cache for token streams (the real default model cache is kept)."""
    saved = dict(os.environ)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="session")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "words.txt"
    path.write_text(make_corpus_text(), encoding="utf-8")
    return path


def build_tiny_model(directory, max_position_embeddings: int = 128, seed: int = 0):
    """A 2-layer Llama (random weights) and a word-level tokenizer, saved like a real checkpoint."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<unk>", "<s>", "</s>", "<pad>"]
    vocab = {tok: i for i, tok in enumerate(specials + WORDS + ["."])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_position_embeddings,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=3,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny_llama"))


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


# Device-parametrized tests run on the CPU everywhere and also on CUDA where a GPU is present
# (CI has none: those cases are skipped there, never required).
DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA GPU")),
]


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


# Tests of kvpress (the optional extra) skip where it is not installed: the main .venv has no
# kvpress (it caps transformers below 5.3); ./scripts/test.sh runs the tier again in .venv-kvpress.
#   from conftest import requires_kvpress
#   @requires_kvpress              (or pytestmark = requires_kvpress for a whole module)
KVPRESS_MISSING_REASON = "kvpress is not installed (pip install 'lm-eval-longmem[kvpress]')"
requires_kvpress = pytest.mark.skipif(
    importlib.util.find_spec("kvpress") is None, reason=KVPRESS_MISSING_REASON
)
