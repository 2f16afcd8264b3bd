"""Infini-attention (`method=infini`) on tiny real models: the memory's arithmetic (both update
rules, by hand), retrieval with GQA, float32 memory over 64k half-precision tokens, equality with
the base model inside one segment, scoring = token-by-token generation, the model families,
the checkpoint round trip and the argument errors."""

import json
import logging

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

from lm_eval_longmem.models.compressive_memory import (
    GATES_FILE,
    CompressiveMemory,
    feature_map,
    save_infini_checkpoint,
)
from lm_eval_longmem.models.compressive_memory.checkpoint import IncompleteCheckpointError, gates_of
from lm_eval_longmem.models.method_registry import MethodArgumentError, build_method
from lm_eval_longmem.models.runtime.generation import GenerationRequest
from lm_eval_longmem.models.runtime.llama_decoder import Decoder, UnsupportedArchitectureError
from lm_eval_longmem.models.runtime.scoring import ScoredSpan
from tests.helpers.tiny_models import tiny_of_family, token_ids

SEGMENT = 16


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()


def infini(model, **args):
    method = build_method("infini", {"segment_length": SEGMENT, **args})
    method.prepare_model(model)
    return method


def recurrence(model, **args):
    return infini(model, **args).make_scorer(model).start_sequence()


def logits_of(rec, ids):
    with torch.no_grad():
        return rec.decoder.logits(rec.feed(ids))


def force_gates(model, beta):
    with torch.no_grad():
        gates_of(model).beta.fill_(beta)


# --- the memory, by hand -----------------------------------------------------------------------
KEYS_1 = torch.tensor([[[0.0, 1.0], [1.0, 0.0]]])  # one KV head, two tokens, d = 2: s(K) = [[1, 2], [2, 1]]
VALUES_1 = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])
KEYS_2 = torch.tensor([[[0.0, 0.0]]])  # s(K) = [1, 1]
VALUES_2 = torch.tensor([[[3.0, 3.0]]])


def test_linear_update_by_hand():
    memory = CompressiveMemory.empty(1, 2, 2).updated(KEYS_1, VALUES_1, "linear")
    # s(K)^T V = [[1, 2], [2, 1]] @ [[1, 0], [0, 2]]; z = column sums of s(K)
    assert memory.matrix[0].tolist() == [[1.0, 4.0], [2.0, 2.0]] and memory.normalizer[0].tolist() == [3.0, 3.0]
    memory = memory.updated(KEYS_2, VALUES_2, "linear")
    assert memory.matrix[0].tolist() == [[4.0, 7.0], [5.0, 5.0]] and memory.normalizer[0].tolist() == [4.0, 4.0]
    assert memory.tokens == 3 and memory.matrix.dtype == torch.float32
    # retrieval, eq. 3: s([0, 0]) = [1, 1] -> [9, 12] / (8 + eps)
    read = memory.retrieve(torch.zeros(1, 1, 2))
    assert read[0, 0].tolist() == pytest.approx([9 / 8, 12 / 8], rel=1e-6)


def test_delta_update_by_hand():
    memory = CompressiveMemory.empty(1, 2, 2).updated(KEYS_1, VALUES_1, "delta")
    assert memory.matrix[0].tolist() == [[1.0, 4.0], [2.0, 2.0]]  # an empty memory returns 0: same as linear
    memory = memory.updated(KEYS_2, VALUES_2, "delta")
    # the memory already returns s(K) M / s(K) z = [3, 6] / 6 = [0.5, 1.0]; only [2.5, 2.0] is written
    assert memory.matrix[0].flatten().tolist() == pytest.approx([3.5, 6.0, 4.5, 4.0], rel=1e-6)
    assert memory.normalizer[0].tolist() == [4.0, 4.0]  # z is tracked as in the linear rule
    again = memory.updated(KEYS_2, memory.retrieve(KEYS_2), "delta")
    assert torch.allclose(again.matrix, memory.matrix, atol=1e-5)  # an existing binding leaves M unchanged


def test_feature_map_is_elu_plus_one():
    x = torch.tensor([-2.0, 0.0, 3.0])
    assert feature_map(x).tolist() == pytest.approx([torch.exp(torch.tensor(-2.0)).item(), 1.0, 4.0])


def test_retrieval_maps_query_heads_to_their_kv_head():
    """GQA: 4 query heads over 2 KV heads read memories 0, 0, 1, 1 (attention's grouping)."""
    generator = torch.Generator().manual_seed(0)
    memory = CompressiveMemory.empty(2, 3, 3).updated(
        torch.randn(2, 5, 3, generator=generator), torch.randn(2, 5, 3, generator=generator), "linear"
    )
    queries = torch.randn(4, 6, 3, generator=generator)
    read = memory.retrieve(queries)
    for head in range(4):
        kv = head // 2
        s = feature_map(queries[head])
        expected = (s @ memory.matrix[kv]) / (s @ memory.normalizer[kv] + 1e-6)[:, None]
        assert torch.allclose(read[head], expected, atol=1e-6)


def test_memory_stays_finite_in_float32_over_64k_half_precision_tokens():
    """32 segments of 2048 bf16 keys/values (outliers like real pre-RoPE keys) into one memory."""
    generator = torch.Generator().manual_seed(0)
    memory = CompressiveMemory.empty(2, 64, 64)
    for _ in range(32):
        keys = (8 * torch.randn(2, 2048, 64, generator=generator)).to(torch.bfloat16)
        values = (8 * torch.randn(2, 2048, 64, generator=generator)).to(torch.bfloat16)
        memory = memory.updated(keys, values, "delta")
    assert memory.tokens == 65536 and memory.matrix.dtype == memory.normalizer.dtype == torch.float32
    assert torch.isfinite(memory.matrix).all() and torch.isfinite(memory.normalizer).all()
    read = memory.retrieve((8 * torch.randn(4, 16, 64, generator=generator)).to(torch.bfloat16))
    assert torch.isfinite(read).all()
    assert not torch.isfinite(memory.normalizer.half()).all()  # what a half-precision memory would hold


def test_half_precision_model_keeps_a_float32_memory(tiny):
    model = LlamaForCausalLM(tiny.config).to(torch.bfloat16).eval()
    rec = recurrence(model)
    logits = logits_of(rec, token_ids(8 * SEGMENT + 3, seed=1))
    assert rec.segments_folded == 8 and torch.isfinite(logits).all()
    assert all(m.matrix.dtype == torch.float32 and torch.isfinite(m.matrix).all() for m in rec.memories)


# --- against the base model --------------------------------------------------------------------
@pytest.mark.parametrize("beta", [float("-inf"), -4.0, 3.0])
def test_one_segment_is_exactly_the_base_model(tiny, beta):
    """Within the first segment the memory is empty: the base model, whatever the gate."""
    ids = token_ids(SEGMENT, seed=2)
    rec = recurrence(tiny)
    force_gates(tiny, beta)
    with torch.no_grad():
        reference = tiny(torch.tensor([ids])).logits[0]
    assert torch.allclose(logits_of(rec, ids), reference, atol=1e-5)


def test_local_only_gates_give_the_base_model_on_each_segment(tiny):
    """Gates forced to local attention: every segment is the base model on that segment alone,
    positions restarting at 0 (so memory never leaks in and RoPE positions are per segment)."""
    ids = token_ids(3 * SEGMENT, seed=3)
    rec = recurrence(tiny)
    force_gates(tiny, float("-inf"))
    ours = logits_of(rec, ids)
    with torch.no_grad():
        pieces = [tiny(torch.tensor([ids[i : i + SEGMENT]])).logits[0] for i in range(0, len(ids), SEGMENT)]
    assert torch.allclose(ours, torch.cat(pieces), atol=1e-5)
    force_gates(tiny, 0.0)
    assert not torch.allclose(logits_of(recurrence(tiny), ids)[SEGMENT:], torch.cat(pieces)[SEGMENT:], atol=1e-3)


def test_read_memory_false_is_the_base_model_on_each_segment_whatever_the_gates(tiny):
    """The ablation control: same weights and trained-looking gates, but no segment reads the
    memory, so every segment is the base model on that segment alone."""
    ids = token_ids(3 * SEGMENT, seed=4)
    rec = recurrence(tiny, read_memory="false")  # attaches the gates, so the test stands alone
    force_gates(tiny, 2.0)  # a gate that would take 88% of each head from the memory
    ablated = logits_of(rec, ids)
    with torch.no_grad():
        pieces = [tiny(torch.tensor([ids[i : i + SEGMENT]])).logits[0] for i in range(0, len(ids), SEGMENT)]
    force_gates(tiny, 0.0)
    assert torch.allclose(ablated, torch.cat(pieces), atol=1e-5)


def test_the_memory_holds_the_pre_rope_keys_and_values_of_the_segment(tiny):
    ids = token_ids(SEGMENT + 2, seed=4)
    rec = recurrence(tiny, update="linear")
    logits_of(rec, ids)
    decoder = Decoder(tiny)
    with torch.no_grad():
        x = decoder.embed(torch.tensor(ids[:SEGMENT]))
        _, keys, values = decoder.project(0, decoder.attention_input(0, x))  # layer 0 of segment 1: no memory yet
    s = feature_map(keys)
    assert torch.allclose(rec.memories[0].matrix, s.transpose(1, 2) @ values.float(), atol=1e-5)
    assert torch.allclose(rec.memories[0].normalizer, s.sum(dim=1), atol=1e-5)
    assert len(rec.segment[0]) == 2  # the next segment waits in the local cache


@pytest.mark.parametrize("update", ["linear", "delta"])
def test_scoring_in_one_pass_equals_token_by_token_recomputation(tiny, update):
    ids = token_ids(3 * SEGMENT + 5, seed=5)
    force_gates(tiny, 0.0)
    method = infini(tiny, update=update)
    force_gates(tiny, 0.0)  # a gate that mixes in a real share of memory
    whole = logits_of(method.make_scorer(tiny).start_sequence(), ids)
    stepwise = method.make_scorer(tiny).start_sequence()
    prompt = 2 * SEGMENT - 3  # the prompt ends mid-segment; decoding folds the next full one
    pieces = [logits_of(stepwise, ids[:prompt])] + [logits_of(stepwise, [t]) for t in ids[prompt:]]
    assert stepwise.segments_folded == 3
    assert torch.allclose(whole, torch.cat(pieces), atol=1e-5)


def test_scorer_and_generator_agree(tiny):
    method = infini(tiny)
    force_gates(tiny, 0.0)
    prompt = token_ids(2 * SEGMENT + 6, seed=6)
    generated = method.make_generator(tiny, None).generate(GenerationRequest(tuple(prompt), 2 * SEGMENT))
    assert len(generated) == 2 * SEGMENT
    whole = logits_of(method.make_scorer(tiny).start_sequence(), prompt + generated)
    assert whole[len(prompt) - 1 : -1].argmax(-1).tolist() == generated  # greedy = argmax of the one-pass logits
    row = prompt + generated
    span = ScoredSpan(len(prompt) - 1, tuple(generated))
    (scored,) = method.make_scorer(tiny).score(torch.tensor([row[:-1]]), [span])
    assert scored[1] and scored.num_correct == len(generated)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_infini_scoring_on_cuda_equals_the_cpu(tiny_model_dir):
    """The recurrence on a GPU, in fp32 and bf16 (the memory itself stays fp32), against the CPU."""
    ids = token_ids(3 * SEGMENT + 5, seed=8)
    logits = {}
    for device, dtype in [("cpu", torch.float32), ("cuda", torch.float32), ("cuda", torch.bfloat16)]:
        model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=dtype).to(device).eval()
        method = infini(model)
        force_gates(model, 0.0)
        logits[device, dtype] = logits_of(method.make_scorer(model).start_sequence(), ids).float().cpu()
    reference = logits["cpu", torch.float32]
    torch.testing.assert_close(logits["cuda", torch.float32], reference, atol=1e-4, rtol=1e-4)
    error = ((logits["cuda", torch.bfloat16] - reference).norm() / reference.norm()).item()
    assert error < 3e-2, f"bf16 on CUDA: relative error {error:.2e}"


@pytest.mark.parametrize("family", ["mistral", "qwen2", "qwen3"])
def test_other_llama_family_models(family):
    model = tiny_of_family(family)
    ids = token_ids(3 * SEGMENT, seed=7)
    rec = recurrence(model)
    ours = logits_of(rec, ids)
    with torch.no_grad():
        reference = model(torch.tensor([ids[:SEGMENT]])).logits[0]
    assert torch.allclose(ours[:SEGMENT], reference, atol=1e-5)
    assert rec.segments_folded == 3 and torch.isfinite(ours).all()


def test_multi_query_and_multi_head_models():
    for kv_heads in (1, 4):
        torch.manual_seed(0)
        config = LlamaConfig(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=48,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=kv_heads,
            max_position_embeddings=128,
        )
        rec = recurrence(LlamaForCausalLM(config).eval())
        assert torch.isfinite(logits_of(rec, token_ids(2 * SEGMENT + 1, seed=8))).all()
        assert rec.memories[0].matrix.shape == (kv_heads, 8, 8) and gates_of(rec.decoder.model).beta.shape == (1, 4)


# --- wrapper, checkpoint, errors ---------------------------------------------------------------
def test_untrained_gates_are_announced_once(tiny_model_dir, caplog):
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    with caplog.at_level(logging.WARNING):
        lm = LongMemLM(pretrained=str(tiny_model_dir), method="infini", segment_length=SEGMENT, device="cpu")
    assert sum("gates are untrained" in r.getMessage() for r in caplog.records) == 1
    assert torch.equal(gates_of(lm.model).beta, torch.full((2, 4), -4.0))
    assert lm.max_length >= 1 << 20  # longer inputs than the base context are never refused
    assert lm.get_model_info()["longmem_scoring"] == "infini_segments"


def test_checkpoint_round_trip(tiny_model_dir, tmp_path):
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    method = infini(model, update="delta")
    with torch.no_grad():
        gates_of(model).beta.copy_(torch.randn(2, 4, generator=torch.Generator().manual_seed(0)))
    directory = save_infini_checkpoint(
        model, tmp_path / "ckpt", method.args, AutoTokenizer.from_pretrained(tiny_model_dir)
    )
    recorded = json.loads((directory / "config.json").read_text())
    assert recorded["longmem_method"] == "infini"
    assert recorded["longmem_method_args"] == {
        "segment_length": SEGMENT,
        "update": "delta",
        "beta_init": -4.0,
        "read_memory": True,
    }
    assert (directory / GATES_FILE).is_file() and gates_of(model) is not None  # still attached after saving

    lm = LongMemLM(pretrained=str(directory), device="cpu")  # no method=
    assert lm.longmem_method.name == "infini" and lm.longmem_method.args == method.args
    assert torch.equal(gates_of(lm.model).beta, gates_of(model).beta)
    plain = AutoModelForCausalLM.from_pretrained(directory)  # still an ordinary checkpoint
    assert not hasattr(plain, "infini_gates")

    (directory / GATES_FILE).unlink()
    with pytest.raises(IncompleteCheckpointError, match="records method=infini but has no"):
        LongMemLM(pretrained=str(directory), device="cpu")


@pytest.mark.parametrize(
    "args, match",
    [
        ({"segment_length": 0}, "segment_length must be a positive"),
        ({"segment_length": -5}, "segment_length must be a positive"),
        ({"update": "hebbian"}, "update='hebbian' is not a valid 'linear' | 'delta'"),
    ],
)
def test_bad_arguments_are_refused(args, match):
    with pytest.raises(MethodArgumentError, match=match):
        build_method("infini", args)


def test_segment_longer_than_the_base_context_is_refused(tiny):
    method = build_method("infini", {"segment_length": 129})
    with pytest.raises(MethodArgumentError, match=r"segment_length=129 is longer than the base model's context \(128"):
        method.prepare_config(tiny.config)
    with pytest.raises(MethodArgumentError, match="segment_length=129"):
        method.prepare_model(tiny)


def test_non_llama_models_are_refused():
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=32))
    with pytest.raises(UnsupportedArchitectureError, match=r"method=infini \(Infini-attention\): this model is 'gpt2'"):
        build_method("infini", {"segment_length": 16}).prepare_model(model)


def test_gradients_reach_the_gates_and_flow_through_the_memory():
    """Training runs the same loop with gradients: the second segment's output depends on the
    first segment only through the memory, and its gradient reaches that memory and the gates."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    model = LlamaForCausalLM(config)
    rec = recurrence(model)
    ids = token_ids(2 * SEGMENT, seed=9)
    rec.feed(ids[:SEGMENT])
    first = rec.memories[0]
    assert first.matrix.requires_grad  # built from the first segment's keys and values, not detached
    second = rec.decoder.logits(rec.feed(ids[SEGMENT:]))
    grads = torch.autograd.grad(second.sum(), [first.matrix, first.normalizer, gates_of(model).beta])
    assert all(g.abs().sum() > 0 for g in grads)


def test_default_task_grids_stay_at_the_base_length_while_longer_inputs_are_accepted(tiny_model_dir):
    from lm_eval_longmem.tasks.forgetting_curve.protocol import ModelLengths, Options, plan_lengths
    from lm_eval_longmem.tasks.model_view import model_view

    view = model_view({"pretrained": str(tiny_model_dir), "method": "infini", "segment_length": 16})
    assert view.bounded_memory and view.sizing_length == 128 and view.context_length >= 1 << 20
    assert view.hard_input_limit is None
    # the forgetting curve's default grid reaches the claimed (base) length l, inputs 2l + 1
    assert max(p.length for p in plan_lengths(Options.from_metadata({}), ModelLengths.of(view))) == 128
    # an explicit length beyond the base context is taken, not refused
    (plan,) = plan_lengths(Options.from_metadata({"fc_lengths": [500]}), ModelLengths.of(view))
    assert plan.length == 500 and plan.runs and plan.beyond_training_length and not plan.beyond_context_length
