"""Every method through `LongMemLM` on a tiny model, built as lm-eval builds it, one test each (as
kvpress's shared press matrix): a new method is covered by declaring its `tiny_settings` (the
method class's attribute, `models/method_framework/tiny_settings.py`).

Its `acting` settings hold arguments small enough that the method really acts on an input of 44 tokens: bounded
caches of 24 entries compress it, Infini-attention reads three segments, Self-Extend groups and
LM-Infinite masks past 16 tokens, dynamic NTK rescales past an original length of 32, the RoPE
formulas double a 128-token context. Per method:

* scoring: a loglikelihood request is finite and <= 0; a method that leaves the model as trained
  (`leaves_model_as_trained`) scores as the checkpoint's own forward;
* generation: a few greedy tokens come back as a string;
* the results file: it records the method and its arguments as given, as JSON;
* bfloat16: the request scores within 0.05 nats per token of float32 (measured: under 0.001 here);
* device and dtype: scoring and generation give the same results, bit for bit, with new tensors
  defaulting to the meta device and to float64 (tests/helpers/placement_guard.py): the hot path
  makes nothing away from the model's device or in a dtype it did not name.

The checkpoint is the session's tiny Llama (context 128), a tiny FoX for a method that needs a
FoX checkpoint, or the one OWN_CHECKPOINT names (tests/helpers/method_checkpoints.py).
"""

from __future__ import annotations

import json
import math

import pytest
import torch
from lm_eval.api.instance import Instance

from lm_eval_longmem.lm_eval_model.longmem import LongMemLM
from lm_eval_longmem.models.method_registry import available_methods
from tests.helpers.markers import requires_kvpress
from tests.helpers.method_checkpoints import checkpoint_of
from tests.helpers.placement_guard import hot_path_guarded

# Each method's settings, declared beside it (`tiny_settings`, method_framework/tiny_settings.py).
TINY_ARGUMENTS: dict[str, dict] = {
    name: dict(cls.tiny_settings.acting) for name, cls in available_methods().items() if cls.tiny_settings
}
# A method documented to score as vanilla on its checkpoint with its acting settings, and why.
SAME_AS_VANILLA = {
    name: cls.tiny_settings.scores_as_vanilla_because
    for name, cls in available_methods().items()
    if cls.tiny_settings and cls.tiny_settings.scores_as_vanilla_because
}
MARKS = {"kvpress": requires_kvpress}

CONTEXT = (
    "the old king said to the young man that the ship was on the sea at night and the river ran dark "
    "by the stone house where the light of the gold was like water in his hand and they had"
)
CONTINUATION = " all been as one"
GREEDY = {"until": ["\n\n"], "max_gen_toks": 4, "do_sample": False}
BF16_NATS_PER_TOKEN = 0.05
# Log-likelihoods of CONTINUATION (about -18 on the random tiny models): one computation in another
# order differs by ~1e-6; each method's acting settings move vanilla's by 2e-4 or more.
SAME, CHANGED = 1e-5, 5e-5


def model_args_text(pretrained, arguments: dict) -> str:
    """`--model_args` as typed on lm_eval's command line."""
    return ",".join(f"{key}={value}" for key, value in {"pretrained": pretrained, **arguments}.items())


def build(name: str, request, checkpoint=None, **extra) -> LongMemLM:
    """`--model longmem --model_args pretrained=...,method=NAME,<its acting settings>` on the CPU, through lm-eval's
    own parsing; on the method's checkpoint unless another is given."""
    if name not in TINY_ARGUMENTS:
        pytest.fail(
            f"method {name} declares no tiny_settings: give its class `tiny_settings = TinySettings(acting=..., "
            "neutral=...)` (models/method_framework/tiny_settings.py)"
        )
    checkpoint = checkpoint or checkpoint_of(name, request)
    text = model_args_text(checkpoint, {"method": name, **TINY_ARGUMENTS[name], **extra})
    return LongMemLM.create_from_arg_string(text, {"device": "cpu", "batch_size": 1})


def score(lm: LongMemLM) -> tuple[float, int]:
    """(log-likelihood of CONTINUATION after CONTEXT, its number of tokens)."""
    ((loglikelihood, _),) = lm.loglikelihood(
        [Instance("loglikelihood", {}, (CONTEXT, CONTINUATION), 0)], disable_tqdm=True
    )
    return loglikelihood, len(lm._encode_pair(CONTEXT, CONTINUATION)[1])


def own_forward(lm: LongMemLM) -> float:
    """The same log-likelihood from one forward of `lm.model` (the checkpoint, if nothing patched it)."""
    context, continuation = lm._encode_pair(CONTEXT, CONTINUATION)
    with torch.no_grad():
        logits = lm.model(torch.tensor([context + continuation])).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)[len(context) - 1 : -1]
    return float(logprobs[torch.arange(len(continuation)), torch.tensor(continuation)].sum())


@pytest.fixture(scope="module", params=[pytest.param(name, marks=MARKS.get(name, ())) for name in available_methods()])
def lm(request) -> LongMemLM:
    """The method's float32 model, built once for the checks that share it."""
    return build(request.param, request)


def test_every_method_declares_its_tiny_settings():
    undeclared = sorted(set(available_methods()) - set(TINY_ARGUMENTS))
    assert undeclared == [], f"give these method classes their `tiny_settings`: {undeclared}"


def test_scores_a_request(lm, request):
    loglikelihood, tokens = score(lm)
    assert math.isfinite(loglikelihood) and loglikelihood <= 0 and tokens > 0
    method = lm.longmem_method
    if method.leaves_model_as_trained:
        assert loglikelihood == pytest.approx(own_forward(lm), abs=SAME)
        return
    vanilla, _ = score(build("vanilla", request, checkpoint=checkpoint_of(method.name, request)))
    if method.name in SAME_AS_VANILLA:
        assert loglikelihood == pytest.approx(vanilla, abs=SAME), SAME_AS_VANILLA[method.name]
    else:  # the acting settings make the method act on CONTEXT
        assert abs(loglikelihood - vanilla) > CHANGED, (
            f"method={method.name} scores as vanilla: its tiny_settings.acting do not make it act on CONTEXT "
            "(or, if that is what it does, say why in its tiny_settings.scores_as_vanilla_because)"
        )


def test_generates_greedily(lm):
    (text,) = lm.generate_until([Instance("generate_until", {}, (CONTEXT, GREEDY), 0)], disable_tqdm=True)
    assert isinstance(text, str)


def test_the_results_file_records_the_method_and_its_arguments(lm):
    name = lm.longmem_method.name
    info = lm.get_model_info()
    recorded = json.loads(json.dumps(info["longmem_method_args"]))  # lm-eval writes it as JSON
    assert info["longmem_method"] == name
    assert {key: recorded.get(key) for key in TINY_ARGUMENTS[name]} == TINY_ARGUMENTS[name]


def test_bfloat16_scores_near_float32(lm, request):
    half = build(lm.longmem_method.name, request, dtype="bfloat16")
    assert next(half.model.parameters()).dtype == torch.bfloat16
    (full, tokens), (reduced, _) = score(lm), score(half)
    assert math.isfinite(reduced) and abs(reduced - full) / tokens <= BF16_NATS_PER_TOKEN


def test_hot_path_names_the_device_and_dtype_of_what_it_makes(lm):
    loglikelihood, _ = score(lm)
    (text,) = lm.generate_until([Instance("generate_until", {}, (CONTEXT, GREEDY), 0)], disable_tqdm=True)
    with hot_path_guarded(lm):
        assert score(lm)[0] == loglikelihood
        (guarded_text,) = lm.generate_until([Instance("generate_until", {}, (CONTEXT, GREEDY), 0)], disable_tqdm=True)
    assert guarded_text == text
