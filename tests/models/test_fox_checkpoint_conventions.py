"""FoX's checkpoint conventions in the wrapper: the JSON-escaped GPT-2 tokenizer, method
selection by architecture, and clear errors for methods that do not apply."""

import pytest

from lm_eval_longmem.models.fox.compatibility import (
    FOX_MODEL_TYPE,
    TRANSFORMER_BASELINE_MODEL_TYPE,
    ArchitectureMismatchError,
    check_method_fits,
)
from lm_eval_longmem.models.fox.json_gpt2_tokenizer import json_escape, json_unescape
from lm_eval_longmem.models.method_framework.bounded_cache_family import BoundedCacheMethod
from lm_eval_longmem.models.method_framework.recorded import recorded_method
from lm_eval_longmem.models.method_framework.rope_extension_family import RopeExtensionMethod
from lm_eval_longmem.models.method_registry import available_methods, build_method, get_method
from tests.helpers.fox_fixtures import json_tokenizer

# What each method says it needs of the architecture, read from the methods themselves, so that a
# new method is checked against FoX without editing this file.
ROPE_METHODS = [name for name, cls in available_methods().items() if cls.rewrites_rope]
OTHER_METHODS = [
    name for name, cls in available_methods().items() if not cls.rewrites_rope and not cls.needs_fox_checkpoint
]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return json_tokenizer(tmp_path_factory.mktemp("bpe"))


def test_escape_is_json_dumps_without_quotes_and_unescape_inverts_it():
    text = 'line one\nsaid "hi"\tcafé \\ 𝄞'
    assert json_escape(text) == 'line one\\nsaid \\"hi\\"\\tcaf\\u00e9 \\\\ \\ud834\\udd1e'
    assert json_unescape(json_escape(text)) == text
    # A decode cut inside an escape (streaming, stop strings) is read as far as it goes.
    assert json_unescape("ab\\u00").startswith("ab")


def test_text_is_escaped_before_bpe_and_unescaped_after(tokenizer):
    text = 'the cat\nsaid "é"'
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    pieces = tokenizer.convert_ids_to_tokens(ids)
    assert "".join(pieces) == json_escape(text).replace(" ", "Ġ")  # what BPE saw: escaped text
    assert "\\" in pieces and "\n" not in "".join(pieces)
    assert tokenizer.decode(ids) == text


def test_bos_is_prepended_as_the_released_models_were_trained(tokenizer):
    ids = tokenizer("the")["input_ids"]
    assert ids[0] == tokenizer.bos_token_id == tokenizer.convert_tokens_to_ids("<|endoftext|>")
    assert tokenizer.decode(ids, skip_special_tokens=True) == "the"


def test_batches_are_escaped_too(tokenizer):
    tokenizer.pad_token = tokenizer.eos_token
    batch = tokenizer(["a\n", "b"], add_special_tokens=False, padding="longest")
    assert [
        tokenizer.decode([t for t, m in zip(ids, mask) if m])
        for ids, mask in zip(batch["input_ids"], batch["attention_mask"])
    ] == ["a\n", "b"]


def test_saved_tokenizer_is_found_by_name_through_autotokenizer(tokenizer, tmp_path):
    from transformers import AutoTokenizer

    import lm_eval_longmem.models.fox  # noqa: F401  (registers FoX with the Auto classes)

    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert type(loaded).__name__ == "JSONGPT2Tokenizer"
    assert loaded.decode(loaded("x\ny")["input_ids"], skip_special_tokens=True) == "x\ny"


@pytest.mark.parametrize("model_type", [FOX_MODEL_TYPE, TRANSFORMER_BASELINE_MODEL_TYPE])
def test_a_fox_family_checkpoint_selects_method_fox(model_type):
    assert recorded_method({"model_type": model_type}) == ("fox", {})
    assert recorded_method({"model_type": "llama"}) is None
    # A method recorded by the training module still wins.
    assert recorded_method({"model_type": model_type, "longmem_method": "fox", "longmem_method_args": {}}) == (
        "fox",
        {},
    )


def test_method_fox_on_another_architecture_says_how_to_get_a_checkpoint():
    with pytest.raises(ArchitectureMismatchError) as err:
        check_method_fits({"model_type": "llama"}, get_method("fox"), source="my-llama")
    message = str(err.value)
    assert "my-llama" in message and "architecture" in message
    assert "zhixuan-lin/fox-pro-760m-longcrawl64-48b" in message and "fox.yaml" in message


@pytest.mark.parametrize("method", ROPE_METHODS)
def test_rope_methods_on_fox_say_fox_has_no_rope(method):
    method = get_method(method)
    with pytest.raises(ArchitectureMismatchError, match="FoX has no RoPE"):
        check_method_fits({"model_type": FOX_MODEL_TYPE, "use_rope": False}, method)
    with pytest.raises(ArchitectureMismatchError, match="rope_base"):
        check_method_fits({"model_type": FOX_MODEL_TYPE, "use_rope": True}, method)


@pytest.mark.parametrize("method", OTHER_METHODS)
def test_other_methods_on_fox_point_to_method_fox(method):
    method = get_method(method)
    with pytest.raises(ArchitectureMismatchError, match="Use method=fox"):
        check_method_fits({"model_type": FOX_MODEL_TYPE}, method)
    check_method_fits({"model_type": "llama"}, method)  # and leave other models alone


@pytest.mark.parametrize("method", list(available_methods()))
def test_what_each_method_says_it_needs_of_the_architecture_holds_together(method):
    """The properties combine as check_method_fits assumes: a method that needs a FoX checkpoint
    runs it as trained; one that rewrites RoPE changes the model; the families set theirs.
    (tests/methods/test_method_matrix.py checks what the methods do: a method that leaves the
    model as trained scores as the checkpoint's own forward, every other one changes the scores.)"""
    cls = available_methods()[method]
    assert not (cls.rewrites_rope and cls.leaves_model_as_trained)
    assert not cls.needs_fox_checkpoint or (cls.leaves_model_as_trained and not cls.rewrites_rope)
    assert not issubclass(cls, RopeExtensionMethod) or cls.rewrites_rope
    assert not issubclass(cls, BoundedCacheMethod) or (cls.bounded_memory and not cls.rewrites_rope)


def test_the_method_a_fox_checkpoint_selects_is_the_one_that_needs_it():
    needing = [name for name, cls in available_methods().items() if cls.needs_fox_checkpoint]
    assert needing == [recorded_method({"model_type": FOX_MODEL_TYPE})[0]]
    assert ROPE_METHODS and OTHER_METHODS  # the parametrized checks above have methods to check


def test_the_check_takes_a_built_method_as_well_as_its_class():
    check_method_fits({"model_type": FOX_MODEL_TYPE}, build_method("fox", {}))
    with pytest.raises(ArchitectureMismatchError, match="method=yarn does not apply"):
        check_method_fits({"model_type": FOX_MODEL_TYPE}, build_method("yarn", {}))
