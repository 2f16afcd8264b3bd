"""LongMemLM: argument handling, device fallback, no truncation, token-exact requests, chat templates."""

import pytest
import torch
from lm_eval.api.instance import Instance

from lm_eval_longmem.errors import UsageError
from lm_eval_longmem.lm_eval_model.longmem import (
    ContextTooLongError,
    LongMemLM,
    UnknownModelArgumentError,
    resolve_device,
)
from lm_eval_longmem.models.method_registry import UnknownMethodError
from lm_eval_longmem.models.runtime.requests import TokenText


@pytest.fixture(scope="module")
def lm(tiny_model_dir):
    return LongMemLM(pretrained=str(tiny_model_dir), method="vanilla", device="cuda:0")


def test_falls_back_to_cpu_without_cuda_and_says_so_when_cuda_was_asked_for(lm, caplog):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with caplog.at_level("WARNING"):
        assert resolve_device(None) == "cpu" and resolve_device("auto") == "cpu"
    assert not caplog.records  # no --device: the CPU is simply what there is
    with caplog.at_level("WARNING"):
        assert resolve_device("cuda:0") == "cpu" and resolve_device("cuda") == "cpu"
    assert [r.levelname for r in caplog.records] == ["WARNING", "WARNING"]
    assert "--device cuda:0: this machine has no CUDA GPU" in caplog.records[0].getMessage()
    assert lm.device.type == "cpu"


def test_a_gpu_number_past_the_machine_s_gpus_is_one_line(monkeypatch):
    from lm_eval_longmem.errors import UsageError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("cuda:1") == "cuda:1" and resolve_device("cuda") == "cuda"
    with pytest.raises(UsageError, match=r"cuda:2 is not a GPU of this machine, which has 2 \(cuda:0 to cuda:1\)"):
        resolve_device("cuda:2")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(UsageError, match=r"which has 1 \(cuda:0\)"):
        resolve_device("cuda:1")


def test_unknown_method_fails_before_loading_anything():
    with pytest.raises(UnknownMethodError, match="Valid methods"):
        LongMemLM(pretrained="/nonexistent", method="nope")


def test_unknown_argument_lists_the_valid_ones(tiny_model_dir):
    with pytest.raises(
        UnknownModelArgumentError, match=r"(?s)factr.*method=vanilla.*Wrapper arguments: method, .*pretrained"
    ):
        LongMemLM(pretrained=str(tiny_model_dir), factr=4, device="cpu")


def test_config_attributes_and_from_pretrained_options_pass_through(tiny_model_dir):
    lm = LongMemLM(pretrained=str(tiny_model_dir), device="cpu", rms_norm_eps=1e-3, attn_implementation="eager")
    assert lm.model.config.rms_norm_eps == 1e-3


def test_results_record_the_method(lm):
    info = lm.get_model_info()
    assert info["longmem_method"] == "vanilla" and info["longmem_method_args"] == {}
    assert info["longmem_context_length"] == 128 and info["longmem_training_length"] == 128


def test_apply_chat_template_without_a_template_is_one_usage_error_before_any_request(lm):
    assert lm.tokenizer.chat_template is None  # the tiny model's tokenizer, like a base model's
    with pytest.raises(UsageError, match="tokenizer of .* has no chat template .* Drop --apply_chat_template"):
        lm.chat_template(True)  # what lm-eval asks right after the model loads
    with pytest.raises(UsageError, match="has no chat template"):
        lm.apply_chat_template([{"role": "user", "content": "hi"}])  # the Python API's path
    assert lm.chat_template(False) is None  # not asked for: nothing refused


def test_a_tokenizer_with_a_template_is_used_as_hf_uses_it(lm, monkeypatch):
    template = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
    monkeypatch.setattr(lm.tokenizer, "chat_template", template)
    assert lm.chat_template(True) == template
    assert lm.apply_chat_template([{"role": "user", "content": "hi"}]) == "<user>hi"


def test_a_repeated_model_args_key_from_python_says_which_value_is_used(tiny_model_dir, caplog):
    """lm-eval's command line warns on a repeated key; its Python API kept the last one silently."""
    with caplog.at_level("WARNING"):
        lm = LongMemLM.create_from_arg_string(
            f"pretrained={tiny_model_dir},method=pi,factor=2,device=cpu,factor=4", {"batch_size": 1}
        )
    assert "model_args gives factor 2 times (factor=2, factor=4); using the last, factor=4" in caplog.text
    assert lm.get_model_info()["longmem_method_args"]["factor"] == 4.0


def test_explicit_max_length_wins(tiny_model_dir):
    assert LongMemLM(pretrained=str(tiny_model_dir), device="cpu", max_length=64).max_length == 64


def test_too_long_input_is_refused_not_truncated(lm):
    words = " ".join(["sea"] * 200)
    with pytest.raises(ContextTooLongError, match="longer than the 128 tokens"):
        lm.loglikelihood([Instance("loglikelihood", {}, (words, " ship"), 0)])


def test_token_text_requests_use_their_exact_ids(lm):
    # Text says "sea ship", but the request's tokens are different: the ids must win.
    ids_ctx, ids_cont = [1, 10, 11, 12], [13, 14]
    req = Instance("loglikelihood", {}, (TokenText("sea", ids_ctx), TokenText(" ship", ids_cont)), 0)
    (score,) = lm.loglikelihood([req])
    with torch.no_grad():
        logits = lm.model(torch.tensor([ids_ctx + ids_cont[:-1]])).logits[0, -2:]
    expected = torch.log_softmax(logits, -1)[[0, 1], ids_cont].sum()
    assert score[0] == pytest.approx(float(expected), abs=1e-4) and score.num_tokens == 2


def test_one_forward_per_request(lm):
    reqs = [Instance("loglikelihood", {}, (TokenText("x", [1, 5, 6, 7]), TokenText("y", [8, 9])), i) for i in range(3)]
    lm.loglikelihood(reqs[:1])  # the scorer's one-off strategy probe happens on first use
    body_calls = []
    hook = lm.model.base_model.register_forward_hook(lambda *a: body_calls.append(1))
    try:
        lm.loglikelihood(reqs)
    finally:
        hook.remove()
    assert len(body_calls) == 3  # batch_size=1: one forward of the model body per request


def test_the_timed_probe_scores_the_runs_share_of_positions(lm, monkeypatch):
    """The estimate's probes score as many positions as the run's requests do on average (the
    output head over them is part of the cost); one scored token put the estimate 40% low."""
    seen = []
    monkeypatch.setattr(lm.scorer, "score", lambda ids, spans: seen.append((ids.shape[1], spans[0])))
    lm._time_scoring(100, scored_fraction=0.5)
    lm._time_scoring(100)
    (length, half), (_, one) = seen
    assert length == 100 and half.start == 50 and len(half.targets) == 50 and len(one.targets) == 1
