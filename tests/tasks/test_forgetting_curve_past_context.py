"""The forgetting curve to the claimed length, and bounded-memory methods on whole documents.
Unit level (no CLI): lengths, statuses, the wrapper's limits, the tasks' fit decisions per method."""

import logging

import pytest
import torch
import transformers
from lm_eval.api.instance import Instance

from lm_eval_longmem.data.leval_topicret import TopicDocument
from lm_eval_longmem.lm_eval_model.longmem import ContextTooLongError, LongMemLM, ScoringOutOfMemoryError
from lm_eval_longmem.models.checkpoint.context_length import hard_input_limit, position_limit
from lm_eval_longmem.models.method_registry import available_methods, build_method
from lm_eval_longmem.models.runtime.length_probes import LengthProbe, ScoreFailure
from lm_eval_longmem.tasks.forgetting_curve import metrics
from lm_eval_longmem.tasks.forgetting_curve.protocol import ModelLengths, Options, plan_lengths
from lm_eval_longmem.tasks.forgetting_curve.task import ForgettingCurveTask
from lm_eval_longmem.tasks.model_view import model_view
from lm_eval_longmem.tasks.prompt_budget import PromptBudget
from lm_eval_longmem.tasks.topicret.protocol import prepare
from tests.helpers.data_fixtures import topicret_record, topicret_rows

BOUNDED = [name for name, cls in available_methods().items() if cls.bounded_memory]  # read from the methods
BUDGET = {"max_context_length": 24, "chunk_size": 8, "sink_length": 4}
SMALL_ARGS = {
    "streamingllm": BUDGET,
    "statedclm": BUDGET,
    "longcache": {},  # its defaults (the budget is only parsed here)
    "infini": {"segment_length": 16},
}


@pytest.fixture(scope="module")
def tiny_gpt2_dir(tmp_path_factory, tiny_model_dir):
    """A GPT-2-style model (learned absolute positions, a 128-entry table) with the tiny tokenizer."""
    directory = tmp_path_factory.mktemp("tiny_gpt2")
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=128,
        n_embd=32,
        n_layer=2,
        n_head=4,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=3,
    )
    transformers.GPT2LMHeadModel(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def fc_task(pretrained, corpus_file, **metadata):
    meta = {"pretrained": str(pretrained), "fc_corpus": str(corpus_file), "fc_samples": 1, **metadata}
    return ForgettingCurveTask(config={"task": "forgetting_curve", "metadata": meta})


# --- which models have a hard limit ----------------------------------------------------------
@pytest.mark.parametrize(
    "config, limit",
    [
        (transformers.LlamaConfig(max_position_embeddings=4096), None),  # RoPE
        (transformers.GPTNeoXConfig(), None),  # partial rotary
        (transformers.BloomConfig(), None),  # ALiBi
        (transformers.MambaConfig(), None),  # no positions
        (transformers.GPT2Config(n_positions=1024), 1024),  # learned absolute positions
        (transformers.OPTConfig(max_position_embeddings=2048), 2048),
        (transformers.GPTBigCodeConfig(n_positions=8192), 8192),
    ],
    ids=["llama", "gpt_neox", "bloom", "mamba", "gpt2", "opt", "gpt_bigcode"],
)
def test_only_learned_absolute_positions_set_a_hard_limit(config, limit):
    assert position_limit(config) == limit
    assert hard_input_limit(config, build_method("vanilla", {})) == limit
    assert hard_input_limit(config, build_method("vanilla", {}), max_length=300) == 300  # the user's cap
    assert hard_input_limit(config, build_method("streamingllm", {})) is None  # positions stay in the cache


# --- the grid -----------------------------------------------------------------------------
def test_grid_reaches_l_with_relative_positions_and_l_over_2_with_absolute_ones():
    options = Options.from_metadata({"fc_points": 4})
    rope = plan_lengths(
        options, ModelLengths(training_length=8192, context_length=8192, claimed_length=8192, hard_input_limit=None)
    )
    assert rope[-1].length == 8192 and rope[-1].input_tokens == 16385 and rope[-1].beyond_training_length
    absolute = plan_lengths(options, ModelLengths(1024, 1024, 1024, 1024))
    assert absolute[-1].length == 511 and all(p.runs and not p.beyond_training_length for p in absolute)
    # a context-extension method's claimed length (yarn x4 on 8k) is the top, inputs past it are probes
    yarn = plan_lengths(options, ModelLengths(8192, 32768, 32768, None))
    assert yarn[-1].length == 32768 and yarn[-1].beyond_context_length


def test_absolute_position_model_stops_at_half_and_reports_longer_lengths(tiny_gpt2_dir, corpus_file):
    assert fc_task(tiny_gpt2_dir, corpus_file).lengths[-1] == 63
    task = fc_task(tiny_gpt2_dir, corpus_file, fc_lengths=[40, 100])
    assert task.lengths == [40]  # 100 needs 201 tokens: past the 128-entry position table
    plan = {p["length"]: p for p in task.config.metadata["protocol"]["length_plan"]}
    assert plan[100]["status"] == "model_limit" and "201 input tokens" in plan[100]["reason"]
    assert task.config.metadata["protocol"]["relative_positions"] is False
    curve = task.aggregation()["curve"]([{"length": 40, "copy": 1.0, "lm": 0.0}])
    assert [(p["length"], p["status"]) for p in curve.field("lengths")] == [(40, "ok"), (100, "model_limit")]
    assert curve.field("failed_lengths") == [100] and [p["length"] for p in curve.field("points")] == [40]


def test_memory_lengths_on_the_full_grid_and_failed_lengths_kept():
    plans = plan_lengths(Options.from_metadata({"fc_lengths": [8, 64, 100, 200]}), ModelLengths(128, 128, 128, None))
    records = [
        {"length": 8, "copy": 1.0, "lm": 0.2},
        {"length": 64, "copy": 1.0, "lm": 0.2},  # input 129: past the training length, still counted
        {"length": 100, "copy": 0.5, "lm": 0.2},
        {"length": 200, "status": "out_of_memory", "detail": "Out of memory scoring 1 input(s) of 401 tokens"},
    ]
    curve = metrics.curve(records, plans)
    assert curve.field("fine_memory_length") == 64 and curve.field("coarse_memory_length") == 100
    assert curve.field("coarse_is_lower_bound") and not curve.field("fine_is_lower_bound")  # 100: largest with numbers
    by_length = {p["length"]: p for p in curve.field("lengths")}
    assert by_length[200]["status"] == "out_of_memory" and "401 tokens" in by_length[200]["detail"]
    assert by_length[64]["beyond_training_length"] and by_length[8]["status"] == "ok"
    assert curve.field("failed_lengths") == [200] and "1 length(s) without numbers" in str(curve)
    assert metrics.aggregate_fine(records) == 64 and metrics.aggregate_coarse(records) == 100


def test_task_reports_a_failed_score_and_a_length_another_model_would_cut(tiny_model_dir, corpus_file, caplog):
    task = fc_task(tiny_model_dir, corpus_file, fc_lengths=[20, 100])
    long_doc = next(d for d in task.test_docs() if d["length"] == 100)
    failed = task.process_results(
        long_doc, [ScoreFailure("out_of_memory", "no room"), ScoreFailure("out_of_memory", "no room")]
    )
    assert set(failed) == {"curve", "fine_memory_length", "coarse_memory_length"}
    assert failed["curve"]["status"] == "out_of_memory"
    with caplog.at_level(logging.WARNING):
        cut = task.process_results(long_doc, [(-1.0, True), (-2.0, False)])  # --model hf: 201 tokens > 128
    assert cut == {"curve": {"length": 100, "status": "cut_by_model"}} and "cut_by_model" in caplog.text
    requests = task.construct_requests(long_doc, "", metadata=("forgetting_curve", 0, 1))
    assert all(isinstance(a, LengthProbe) for r in requests for a in r.args)


# --- the wrapper --------------------------------------------------------------------------
def _request(ids, split, probe=True):
    make = LengthProbe if probe else (lambda text, _ids: text)
    return Instance("loglikelihood", {}, (make("ctx " * len(ids[:split]), ids[:split]), make(" cont", ids[split:])), 0)


@pytest.fixture(scope="module")
def tiny_vanilla(tiny_model_dir):
    return LongMemLM(pretrained=str(tiny_model_dir), device="cpu", batch_size=2)


def test_probes_run_past_max_length_plain_requests_do_not(tiny_vanilla):
    ids = [4 + i % 50 for i in range(202)]
    (score,) = tiny_vanilla.loglikelihood([_request(ids, 190)])  # 201 inputs > max_length 128: RoPE runs it
    assert score.num_tokens == 12
    plain = Instance("loglikelihood", {}, (" ".join(["the"] * 190), " the"), 0)
    with pytest.raises(ContextTooLongError, match="longer than the 128 tokens"):
        tiny_vanilla.loglikelihood([plain])


def test_probes_past_an_absolute_position_table_are_refused(tiny_gpt2_dir):
    lm = LongMemLM(pretrained=str(tiny_gpt2_dir), device="cpu")
    with pytest.raises(ContextTooLongError, match="cannot run: this model takes at most 128"):
        lm.loglikelihood([_request([5] * 202, 190)])


def test_out_of_memory_on_a_probe_is_a_failed_score_not_a_crash(tiny_vanilla, monkeypatch):
    real = tiny_vanilla.scorer.score
    cached = []

    def score(batch, spans):
        if batch.shape[1] > 100:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(batch, spans)

    monkeypatch.setattr(tiny_vanilla.scorer, "score", score)
    monkeypatch.setattr(tiny_vanilla.cache_hook, "add_partial", lambda *args: cached.append(args))
    ids = [4 + i % 50 for i in range(202)]
    big, small = tiny_vanilla.loglikelihood([_request(ids, 190), _request(ids[:41], 30)])  # one batch of 2
    assert isinstance(big, ScoreFailure) and big.reason == "out_of_memory" and "201 tokens" in big.detail
    assert small.num_tokens == 11 and len(cached) == 1  # the failure is never cached as a score
    with pytest.raises(ScoringOutOfMemoryError):  # an ordinary request still stops the run
        tiny_vanilla.loglikelihood([_request(ids[:120], 110, probe=False)])


# --- bounded memory: one property, read by every task -------------------------------------
@pytest.mark.parametrize("method", BOUNDED)
def test_bounded_memory_methods_take_any_length_and_size_grids_by_the_base(tiny_model_dir, method):
    view = model_view({"pretrained": str(tiny_model_dir), "method": method, **SMALL_ARGS.get(method, {})})
    assert view.bounded_memory and view.context_length >= 1 << 20 and view.sizing_length == 128
    assert view.hard_input_limit is None
    assert not model_view({"pretrained": str(tiny_model_dir), "method": "vanilla"}).bounded_memory


def _topicret_documents():
    rows = topicret_rows(3, topics_per_document=4, turns_per_topic=1)
    rows["input"][1] = topicret_record(["the history of jazz"] * 4, turns_per_topic=40)  # far past 128 tokens
    return [
        TopicDocument(i, tuple(q), tuple(o)) for i, q, o in zip(rows["input"], rows["instructions"], rows["outputs"])
    ]


@pytest.mark.parametrize("method, skipped", [("vanilla", 3), ("streamingllm", 0), ("infini", 0)])
def test_topicret_skips_only_for_methods_with_limited_attention(tiny_model_dir, method, skipped):
    view = model_view({"pretrained": str(tiny_model_dir), "method": method, **SMALL_ARGS.get(method, {})})
    budget = PromptBudget(view.tokenizer, view.context_length, 50)
    if skipped == 3:
        with pytest.raises(Exception, match="none of the 3 records fits"):
            prepare(_topicret_documents(), budget, "skip")
        return
    kept, count = prepare(_topicret_documents(), budget, "truncate")
    assert count == 0 and not any(d.truncated for d in kept) and len(kept) == 3


def test_passkey_and_forgetting_curve_take_long_inputs_with_a_bounded_method(tiny_model_dir, corpus_file):
    from lm_eval_longmem.tasks.passkey.protocol import PasskeyConfigError
    from lm_eval_longmem.tasks.passkey.task import PasskeyTask

    def passkey(method):
        metadata = {
            "pretrained": str(tiny_model_dir),
            "method": method,
            **SMALL_ARGS.get(method, {}),
            "pk_lengths": [400],
            "pk_depths": [50],
            "pk_samples": 1,
        }
        return PasskeyTask(config={"metadata": metadata})

    with pytest.raises(PasskeyConfigError, match="do not fit"):
        passkey("vanilla")
    task = passkey("streamingllm")
    assert task.config.metadata["protocol"]["bounded_memory"] and task.test_docs()[0]["prompt_tokens"] > 128
    fc = fc_task(tiny_model_dir, corpus_file, method="statedclm", **BUDGET, fc_lengths=[300])
    (plan,) = fc.config.metadata["protocol"]["length_plan"]
    assert plan["status"] == "planned" and plan["beyond_training_length"] and not plan["beyond_context_length"]
