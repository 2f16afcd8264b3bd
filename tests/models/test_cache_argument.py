"""transformers 5.24 renamed the KV cache argument and output field `past_key_values` to `cache`
(the old name is due to go in 5.40, inside our `<6` range; 5.2 knows only the old one): every
call of ours uses the installed version's name, so no deprecated argument reaches a model."""

import inspect
import warnings

from transformers import LlamaModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from lm_eval_longmem.lm_eval_model.longmem import LongMemLM
from lm_eval_longmem.models.runtime.cache_argument import CACHE_FIELD, cache_argument, cache_of


def test_the_name_is_the_one_the_installed_models_declare():
    assert CACHE_FIELD in inspect.signature(LlamaModel.forward).parameters
    marker = object()
    assert cache_argument(marker) == {CACHE_FIELD: marker}
    assert cache_of(CausalLMOutputWithPast(**{CACHE_FIELD: marker})) is marker


def test_generation_with_a_reused_prefix_passes_no_deprecated_cache_argument(tiny_model_dir):
    from tests.helpers.generation_requests import request

    lm = LongMemLM(pretrained=str(tiny_model_dir), device="cpu")
    requests = [request("the sea and the sky", idx=0), request("the sea and the land", idx=1)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        answers = lm.generate_until(requests)
    assert len(answers) == 2
    deprecated = [str(w.message) for w in caught if "past_key_values" in str(w.message)]
    assert deprecated == []  # transformers 5.24 warned once per generate call before
