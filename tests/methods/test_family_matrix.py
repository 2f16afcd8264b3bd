"""Every method on a tiny random model of every decoder family (issue 39): it scores, or it refuses
in one line that names the reason and a method that works, exactly where the family table
(`models/method_registry/family_support.py`, the table in docs/methods) says so.

* acting: the method's `tiny_settings.acting` (its class; test_method_matrix.py) scores a finite log-likelihood;
* neutral: its `tiny_settings.neutral`, under which the method must not change anything on a 44-token
  input (budget and windows above it, factor 1), score as vanilla on the same checkpoint;
* cached generation: a few greedy tokens equal those recomputed from scratch, token by token.
"""

from __future__ import annotations

import math

import pytest
import torch
from lm_eval.api.instance import Instance

from lm_eval_longmem.errors import LongMemError
from lm_eval_longmem.lm_eval_model.longmem import LongMemLM
from lm_eval_longmem.models.method_registry import available_methods
from lm_eval_longmem.models.method_registry.family_support import FAMILIES, support
from tests.helpers.markers import requires_kvpress
from tests.helpers.tiny_families import build_family_model, with_landmark_layout, with_longrope_factors
from tests.methods.test_method_matrix import CONTEXT, TINY_ARGUMENTS, model_args_text, score

# fox runs FoX checkpoints only (its own architecture: refused on every family here, before loading;
# tests/methods/test_method_matrix.py runs it). kvpress runs where its extra is installed (.venv-kvpress).
ELSEWHERE = {"fox"}
METHODS = [
    pytest.param(name, marks=requires_kvpress if name == "kvpress" else ())
    for name in available_methods()
    if name not in ELSEWHERE
]

# Each method's neutral settings, declared beside it (`tiny_settings.neutral`); None: no setting is
# neutral, and the method says why.
NEUTRAL: dict[str, dict] = {
    name: dict(cls.tiny_settings.neutral)
    for name, cls in available_methods().items()
    if cls.tiny_settings and cls.tiny_settings.neutral is not None
}
NEVER_NEUTRAL = {
    name: cls.tiny_settings.never_neutral_because
    for name, cls in available_methods().items()
    if cls.tiny_settings and cls.tiny_settings.neutral is None
}
SAME = 1e-5  # one computation in another order (test_method_matrix.py)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def family_dirs(tiny_model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    return {family: build_family_model(family, root / family, tiny_model_dir) for family in FAMILIES}


@pytest.fixture(scope="module")
def longrope_dirs(family_dirs, tmp_path_factory):
    """Each family's checkpoint with LongRoPE factors: longrope keeps a checkpoint's own (vanilla applies them)."""
    root = tmp_path_factory.mktemp("families_longrope")
    return {family: with_longrope_factors(path, root / family) for family, path in family_dirs.items()}


@pytest.fixture(scope="module")
def vanilla_scores() -> dict:
    return {}


@pytest.fixture(scope="module")
def landmark_dirs(family_dirs, tmp_path_factory):
    """Each family's checkpoint naming its last token `<landmark>` (blocks of 4, trained length 32)."""
    root = tmp_path_factory.mktemp("families_landmark")
    return {family: with_landmark_layout(path, root / family) for family, path in family_dirs.items()}


@pytest.fixture
def checkpoints(request, family_dirs, method):
    own = {"longrope": "longrope_dirs", "landmark": "landmark_dirs"}
    return request.getfixturevalue(own[method]) if method in own else family_dirs


def run(directory, method: str, arguments: dict):
    """(LongMemLM, None), or (None, the refusal) when building or scoring refuses."""
    try:
        text = model_args_text(directory, {"method": method, **arguments})
        lm = LongMemLM.create_from_arg_string(text, {"device": "cpu", "batch_size": 1})
        return lm, score(lm)[0]
    except LongMemError as err:
        return None, err


def assert_refusal_matches_table(err, method: str, family: str):
    why = support(method, family)
    assert why is not None, f"method={method} refuses {family}, but the family table says it runs: {err}"
    message = str(err)
    assert "\n" not in message.strip(), f"a refusal is one line: {message!r}"
    others = [name for name in available_methods() if name != method and name in message]
    assert others, f"the refusal names no working method: {message!r}"


def test_every_method_has_a_neutral_row():
    assert sorted(set(available_methods()) - ELSEWHERE - set(NEUTRAL) - set(NEVER_NEUTRAL)) == []


def test_the_table_names_only_methods_that_exist():
    from lm_eval_longmem.models.method_registry.family_support import _REFUSED, NOTES

    named = set(_REFUSED) | {method for method, _ in NOTES}
    assert sorted(named - set(available_methods())) == []


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("method", METHODS)
def test_scores_or_refuses_in_one_line(checkpoints, family, method):
    lm, result = run(checkpoints[family], method, TINY_ARGUMENTS[method])
    if lm is None:
        assert_refusal_matches_table(result, method, family)
        return
    assert support(method, family) is None, (
        f"method={method} runs on {family}; the table says: {support(method, family)}"
    )
    assert math.isfinite(result) and result <= 0


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("method", METHODS)
def test_neutral_settings_score_as_vanilla(checkpoints, family, method, vanilla_scores):
    if method in NEVER_NEUTRAL:
        pytest.skip(NEVER_NEUTRAL[method])
    directory = checkpoints[family]
    if directory not in vanilla_scores:
        vanilla_scores[directory] = run(directory, "vanilla", {})[1]
    vanilla = vanilla_scores[directory]
    lm, result = run(checkpoints[family], method, NEUTRAL[method])
    if lm is None:
        assert_refusal_matches_table(result, method, family)
        return
    assert result == pytest.approx(vanilla, abs=SAME)


def greedy_by_recomputation(model, ids: list[int], steps: int) -> list[int]:
    ids = list(ids)
    for _ in range(steps):
        with torch.no_grad():
            ids.append(int(model(torch.tensor([ids])).logits[0, -1].argmax()))
    return ids[-steps:]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("method", ["statedclm", "streamingllm", "infini", "self_extend"])
def test_cached_generation_equals_recomputation_at_neutral_settings(family_dirs, family, method):
    lm, _ = run(family_dirs[family], method, NEUTRAL[method])
    if lm is None:
        pytest.skip(f"method={method} refuses {family} (checked above)")
    request = {"until": ["\n\n"], "max_gen_toks": 4, "do_sample": False}
    (text,) = lm.generate_until([Instance("generate_until", {}, (CONTEXT, request), 0)], disable_tqdm=True)
    plain, _ = run(family_dirs[family], "vanilla", {})
    ids = plain.tok_encode(CONTEXT)
    expected = plain.tok_decode(greedy_by_recomputation(plain.model, ids, 4))
    assert text.split() == expected.split()[: len(text.split())] and text.strip()


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("method", METHODS)
def test_a_model_object_scores_as_its_path(checkpoints, family, method):
    """`pretrained=<loaded model>` (the Python API) does what the path does: the same score, or a refusal."""
    from transformers import AutoModelForCausalLM

    by_path, path_score = run(checkpoints[family], method, TINY_ARGUMENTS[method])
    model = AutoModelForCausalLM.from_pretrained(str(checkpoints[family]))
    try:
        args = {"pretrained": model, "method": method, **TINY_ARGUMENTS[method]}
        by_object = LongMemLM.create_from_arg_obj(args, {"device": "cpu", "batch_size": 1})
        object_score = score(by_object)[0]
    except LongMemError as err:
        assert by_path is None, f"method={method} runs on a {family} path but refuses the object: {err}"
        assert_refusal_matches_table(err, method, family)
        return
    assert by_path is not None, f"method={method} refuses a {family} path ({path_score}) but runs on the object"
    assert object_score == pytest.approx(path_score, abs=1e-6)


def test_methods_name_lists_the_families(capsys):
    """`lm-eval-longmem methods NAME` prints the method's column of the family table."""
    from lm_eval_longmem.cli import methods as methods_command

    assert methods_command.main(["self_extend"]) == 0
    out = capsys.readouterr().out
    assert "model families" in out
    for family in FAMILIES:
        assert f"{family}: " in out
    assert "phi3: ✔" in out and "gemma2: attention soft-capping" in out


def test_gemma3_rope_extensions_scale_the_global_layers_only(family_dirs):
    """pi with factor 2 halves the global layers' frequencies and leaves the local layers' as they were."""
    vanilla = LongMemLM.create_from_arg_string(model_args_text(family_dirs["gemma3_text"], {}), {"device": "cpu"})
    text = model_args_text(family_dirs["gemma3_text"], {"method": "pi", "factor": 2})
    pi = LongMemLM.create_from_arg_string(text, {"device": "cpu", "batch_size": 1})
    before, after = vanilla.model.model.rotary_emb, pi.model.model.rotary_emb
    assert torch.equal(after.sliding_attention_inv_freq, before.sliding_attention_inv_freq)
    assert torch.allclose(after.full_attention_inv_freq, before.full_attention_inv_freq / 2)


@pytest.mark.parametrize("method", ["self_extend", "lm_infinite"])
def test_gemma3_local_layers_keep_their_sliding_window(family_dirs, method):
    """On Gemma 3 the two-part rule runs on the global layers; the local layers keep their own attention,
    here with a window (16) the 44-token input passes, so it binds: neutral settings still score as vanilla."""
    directory = family_dirs["gemma3_text"]
    _, vanilla = run(directory, "vanilla", {"sliding_window": 16})
    _, wide = run(directory, "vanilla", {})
    lm, result = run(directory, method, {**NEUTRAL[method], "sliding_window": 16})
    assert lm is not None and abs(vanilla - wide) > 1e-3  # the window changes the model
    assert result == pytest.approx(vanilla, abs=SAME)


@pytest.mark.parametrize("family", ["phi3", "gemma3_text"])
@pytest.mark.parametrize("method", ["self_extend", "lm_infinite"])
def test_acting_two_part_attention_decodes_as_it_recomputes(family_dirs, family, method):
    """With the rule acting (grouping, masking past 16 tokens), transformers' cached decoding through the
    two-part attention gives each step's logits as a full forward of the sequence does."""
    lm, _ = run(family_dirs[family], method, TINY_ARGUMENTS[method])
    prompt = torch.tensor([lm.tok_encode(CONTEXT)])
    with torch.no_grad():
        out = lm.model.generate(
            prompt, max_new_tokens=4, do_sample=False, output_logits=True, return_dict_in_generate=True
        )
        full = lm.model(out.sequences).logits
    for step, step_logits in enumerate(out.logits):
        assert torch.allclose(step_logits, full[:, prompt.shape[1] - 1 + step], atol=1e-4), step


def test_gemma3_two_part_attention_reads_the_global_table_on_global_layers_only(family_dirs):
    lm, _ = run(family_dirs["gemma3_text"], "self_extend", TINY_ARGUMENTS["self_extend"])
    plans = [layer.self_attn.longmem_attention for layer in lm.model.model.layers]
    kinds = lm.model.config.layer_types
    assert [plan.rule is None for plan in plans] == [kind == "sliding_attention" for kind in kinds]
    rotary = lm.model.model.rotary_emb
    assert all(plan.inv_freq is rotary.full_attention_inv_freq for plan in plans)


def test_gemma3_dynamic_ntk_follows_the_length_on_the_global_layers_only(family_dirs):
    """Frozen dynamic NTK past C (original_length 32 < the 44-token input): the global table takes the
    scaled base for the input's length, the local table stays; transformers' own `dynamic` is refused."""
    directory = family_dirs["gemma3_text"]
    vanilla, _ = run(directory, "vanilla", {})
    lm, _ = run(directory, "dynamic_ntk", TINY_ARGUMENTS["dynamic_ntk"])
    before, after = vanilla.model.model.rotary_emb, lm.model.model.rotary_emb
    assert torch.equal(after.sliding_attention_inv_freq, before.sliding_attention_inv_freq)
    assert after.full_attention_inv_freq[-1] < before.full_attention_inv_freq[-1]  # a larger base
    refused, err = run(directory, "dynamic_ntk", {"variant": "hf"})
    assert refused is None and "per-layer-type RoPE" in str(err)
