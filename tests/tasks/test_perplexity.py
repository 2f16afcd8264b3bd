"""`longmem_perplexity`: windows, requests, perplexity against a direct torch computation on the
tiny model, position binning by hand, option errors, and one real `lm_eval` run."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lm_eval_longmem.data.corpora import CorpusUnavailableError
from lm_eval_longmem.models.runtime.requests import ScoredContinuation, token_ids_of
from lm_eval_longmem.tasks.perplexity import metrics
from lm_eval_longmem.tasks.perplexity.protocol import PerplexityConfigError, book_windows, halving_grid
from lm_eval_longmem.tasks.perplexity.task import PerplexityTask
from tests.helpers.cli_runs import BIN, results_of, run


def make_task(tiny_model_dir, corpus_file, extra_metadata=None, **options):
    metadata = {"pretrained": str(tiny_model_dir), "method": "vanilla", "ppl_corpus": str(corpus_file)}
    metadata.update({f"ppl_{k}": v for k, v in options.items()})
    metadata.update(extra_metadata or {})
    return PerplexityTask(config={"task": "longmem_perplexity", "metadata": metadata})


def test_default_grid_halves_down_from_the_claimed_length(tiny_model_dir, corpus_file):
    task = make_task(tiny_model_dir, corpus_file)
    assert task.lengths == [16, 32, 64, 128]  # C = 128: a window of 128 tokens reads 127
    docs = list(task.test_docs())
    assert len(docs) == 16 and [d["length"] for d in docs[:4]] == [16, 32, 64, 128]  # round-robin for --limit
    protocol = task.config.metadata["protocol"]
    assert protocol["windows"] == 4 and not any(p["beyond_context_length"] for p in protocol["length_plan"])
    assert halving_grid(8192, 4) == [1024, 2048, 4096, 8192] and halving_grid(3, 4) == [2, 3]


def test_windows_are_corpus_spans_that_never_overlap(tiny_model_dir, corpus_file):
    from lm_eval_longmem.data.corpora import load_corpus
    from lm_eval_longmem.data.token_stream import corpus_documents

    task = make_task(tiny_model_dir, corpus_file, lengths=[64], windows=6, seed=3)
    (tokens,) = corpus_documents(load_corpus(str(corpus_file)), task.tokenizer)
    docs = list(task.test_docs())
    starts = sorted(d["start"] for d in docs)
    assert all(b - a >= 64 for a, b in zip(starts, starts[1:])) and all(s % 64 == 0 for s in starts)
    assert all(d["ids"] == tokens[d["start"] : d["start"] + 64].tolist() for d in docs)
    again = list(make_task(tiny_model_dir, corpus_file, lengths=[64], windows=6, seed=3).test_docs())
    other = list(make_task(tiny_model_dir, corpus_file, lengths=[64], windows=6, seed=4).test_docs())
    assert docs == again and docs != other


def test_book_windows_stay_inside_documents():
    documents = [np.arange(10), np.arange(100, 125), np.arange(200, 203)]
    windows = book_windows(documents, 8, 4, np.random.default_rng(0))
    assert sorted(windows) == [(0, 0), (1, 0), (1, 8), (1, 16)]  # 1 + 3 slots; the 3-token book has none
    with pytest.raises(PerplexityConfigError, match="4 non-overlapping windows of 8 tokens.*5 are asked"):
        book_windows(documents, 8, 5, np.random.default_rng(0))


def test_one_request_per_window_scoring_every_token_but_the_first(tiny_model_dir, corpus_file):
    task = make_task(tiny_model_dir, corpus_file, lengths=[16], windows=1)
    doc = task.test_docs()[0]
    (request,) = task.construct_requests(doc, "", metadata=("longmem_perplexity", 0, 1))
    assert list(token_ids_of(request.args[0])) == doc["ids"][:1]
    assert list(token_ids_of(request.args[1])) == doc["ids"][1:]


@pytest.mark.parametrize(
    "method_args",
    [{"method": "vanilla"}, {"method": "streamingllm", "max_context_length": 24, "chunk_size": 8, "sink_length": 4}],
)
def test_perplexity_equals_a_direct_torch_computation(tiny_model_dir, corpus_file, method_args):
    """Through the wrapper's loglikelihood (the path every task uses) vs the model's own logits.
    With a budget of 24 StreamingLLM evicts, so it is held to its own per-token losses only.
    The 160-token window reads past the 128-token context (a length probe; RoPE runs on)."""
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    task = make_task(tiny_model_dir, corpus_file, extra_metadata=method_args, lengths=[40, 80, 160], windows=2, bins=4)
    lm = LongMemLM(pretrained=str(tiny_model_dir), device="cpu", **{k: v for k, v in method_args.items()})
    docs = list(task.test_docs())
    instances = [r for d in docs for r in task.construct_requests(d, "", metadata=("longmem_perplexity", 0, 1))]
    scores = lm.loglikelihood(instances, disable_tqdm=True)
    per_doc = [task.process_results(d, [s]) for d, s in zip(docs, scores)]
    table = task.aggregation()
    model = lm.model
    assert task._tag(40) == "040"  # zero-padded to one width, as every task's buckets
    for length in (40, 80, 160):
        key = f"ppl@{task._tag(length)}"
        records = [r[key] for r in per_doc if key in r]
        assert len(records) == 2
        ppl = table[key](records)
        own = [r["token_nll"] for r in records]
        assert ppl == pytest.approx(math.exp(np.concatenate(own).mean()), rel=1e-5)  # exp of mean token NLL
        if method_args["method"] == "vanilla":
            with torch.no_grad():
                direct = []
                for d in docs:
                    if d["length"] == length:
                        ids = torch.tensor(d["ids"])
                        logits = model(ids[None]).logits[0].float()
                        direct.append(F.cross_entropy(logits[:-1], ids[1:], reduction="none"))
            direct = torch.cat(direct)
            assert ppl == pytest.approx(math.exp(float(direct.mean())), rel=1e-5)
            assert np.allclose(np.concatenate(own), direct.numpy(), atol=1e-5)
    curve = table["loss_curve"]([r["loss_curve"] for r in per_doc])
    assert curve["length"] == 160 and curve["edges"] == [1, 41, 80, 120, 160] and len(curve["loss"]) == 4
    assert set(curve["by_length"]) == {"40", "80", "160"} and curve["by_length"]["80"]["edges"] == [1, 21, 40, 60, 80]


def test_sliding_window_stride_scores_each_windows_last_tokens_after_the_rest(tiny_model_dir, corpus_file):
    """ppl_stride=S (Press et al.'s sliding window): a window of L reads its first L - S tokens as
    context and scores its last S; perplexity is over those tokens only, held to the model's own
    logits on the whole window, and the loss curve bins only the scored positions."""
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    task = make_task(tiny_model_dir, corpus_file, lengths=[40], windows=2, stride=8, bins=4)
    docs = list(task.test_docs())
    instances = [r for d in docs for r in task.construct_requests(d, "", metadata=("longmem_perplexity", 0, 1))]
    assert [list(token_ids_of(a)) for a in instances[0].args] == [docs[0]["ids"][:32], docs[0]["ids"][32:]]
    lm = LongMemLM(pretrained=str(tiny_model_dir), device="cpu", method="vanilla")
    per_doc = [task.process_results(d, [s]) for d, s in zip(docs, lm.loglikelihood(instances, disable_tqdm=True))]
    ppl = task.aggregation()["ppl@40"]([r["ppl@40"] for r in per_doc])
    with torch.no_grad():
        direct = []
        for d in docs:
            ids = torch.tensor(d["ids"])
            logits = lm.model(ids[None]).logits[0].float()
            direct.append(F.cross_entropy(logits[31:-1], ids[32:], reduction="none"))  # positions 32..39
    assert ppl == pytest.approx(math.exp(float(torch.cat(direct).mean())), rel=1e-5)
    assert per_doc[0]["ppl@40"]["tokens"] == 8
    curve = task.aggregation()["loss_curve"]([r["loss_curve"] for r in per_doc])
    assert curve["edges"] == [32, 34, 36, 38, 40] and curve["tokens"] == [4, 4, 4, 4]
    assert task.config.metadata["protocol"]["stride"] == 8
    with pytest.raises(PerplexityConfigError, match="ppl_stride=40 scores more tokens than a window of 40"):
        make_task(tiny_model_dir, corpus_file, lengths=[40, 80], stride=40)


def test_position_bins_by_hand():
    # length 9: positions 1..8 predicted; 4 bins -> edges 1, 3, 5, 7, 9: {1,2} {3,4} {5,6} {7,8}
    a = np.array([1.0, 3.0, 2.0, 2.0, 4.0, 0.0, 1.0, 1.0])
    b = np.array([3.0, 1.0, 0.0, 0.0, 2.0, 2.0, 5.0, 1.0])
    records = [{"length": 9, "nll_sum": float(t.sum()), "tokens": 8, "token_nll": t} for t in (a, b)]
    curve = metrics.loss_curve(records, bins=4)
    assert curve["edges"] == [1, 3, 5, 7, 9]
    assert curve["positions"] == [1.5, 3.5, 5.5, 7.5]
    assert curve["loss"] == pytest.approx([2.0, 1.0, 2.0, 2.0])
    assert curve["tokens"] == [4, 4, 4, 4]
    assert metrics.perplexity(records) == pytest.approx(math.exp(28 / 16))
    # more bins than positions: one bin per position
    assert metrics.loss_curve(records, bins=50)["edges"] == list(range(1, 10))


def test_models_without_token_losses_get_perplexity_and_an_empty_curve(tiny_model_dir, corpus_file):
    task = make_task(tiny_model_dir, corpus_file, lengths=[16], windows=1)
    doc = task.test_docs()[0]
    plain = task.process_results(doc, [(-30.0, False)])
    assert task.aggregation()["ppl@16"]([plain["ppl@16"]]) == pytest.approx(math.exp(2.0))
    curve = task.aggregation()["loss_curve"]([plain["loss_curve"]])
    assert curve["loss"] == [] and "longmem" in str(curve)
    exact = task.process_results(doc, [ScoredContinuation(-30.0, False, 0, 15, np.full(15, 2.0))])
    assert set(exact) == set(plain) and set(task.aggregation()) == set(task.higher_is_better())


def test_failed_and_cut_lengths_are_reported_not_dropped(tiny_model_dir, corpus_file):
    from lm_eval_longmem.models.runtime.length_probes import ScoreFailure

    task = make_task(tiny_model_dir, corpus_file, lengths=[16, 200], windows=1)
    short, long = sorted(task.test_docs(), key=lambda d: d["length"])
    failed = task.process_results(long, [ScoreFailure("out_of_memory", "no room")])
    cut = task.process_results(long, [(-300.0, False)])  # a non-longmem model past its context
    ok = task.process_results(short, [ScoredContinuation(-30.0, False, 0, 15, np.full(15, 2.0))])
    assert set(failed) == set(cut) == {"ppl_curve"} and cut["ppl_curve"]["status"] == "cut_by_model"
    curve = task.aggregation()["ppl_curve"]([ok["ppl_curve"], failed["ppl_curve"]])
    assert curve["lengths"] == [16, 200] and curve["status"] == ["ok", "out_of_memory"]
    assert curve["ppl"][0] == pytest.approx(math.exp(2.0)) and curve["ppl"][1] is None
    loss = task.aggregation()["loss_curve"]([ok["loss_curve"], failed["ppl_curve"]])
    assert loss["length"] == 16


def test_options_are_checked(tiny_model_dir, corpus_file):
    with pytest.raises(PerplexityConfigError, match="ppl_window.*valid: .*ppl_windows"):
        make_task(tiny_model_dir, corpus_file, window=3)
    with pytest.raises(PerplexityConfigError, match="longest window that can run is 101"):
        make_task(tiny_model_dir, corpus_file, extra_metadata={"max_length": 100}, lengths=[200])
    # RoPE has no hard limit: a window past the context length runs as a length probe
    beyond = make_task(tiny_model_dir, corpus_file, lengths=[64, 200], windows=1).config.metadata["protocol"]
    assert [(p["length"], p["beyond_context_length"], p["beyond_training_length"]) for p in beyond["length_plan"]] == [
        (64, False, False),
        (200, True, True),
    ]
    with pytest.raises(PerplexityConfigError, match="not both"):
        make_task(tiny_model_dir, corpus_file, lengths=[16], max_length=64)
    with pytest.raises(PerplexityConfigError, match="ppl_bins=0 is out of range"):
        make_task(tiny_model_dir, corpus_file, bins=0)
    task = make_task(tiny_model_dir, corpus_file, extra_metadata={"max_length": 512}, lengths=[300], windows=1)
    assert task.config.metadata["protocol"]["length_plan"][0]["beyond_training_length"]


def test_missing_pg19_offline_names_the_fix(tiny_model_dir):
    metadata = {"pretrained": str(tiny_model_dir), "ppl_corpus": "pg19"}
    with pytest.raises(CorpusUnavailableError, match="ppl_corpus=shakespeare"):
        PerplexityTask(config={"task": "longmem_perplexity", "metadata": metadata})


def test_lm_eval_cli_bounded_method(tiny_model_dir, corpus_file, tmp_path):
    """The stock command, a bounded-memory method whose cache really evicts (budget 24 < 63)."""
    out = tmp_path / "out"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_model_dir},method=streamingllm,max_context_length=24,chunk_size=8,sink_length=4",
            "--tasks",
            "longmem_perplexity",
            "--metadata",
            f"ppl_corpus={corpus_file}",
            "ppl_max_length=64",
            "ppl_points=2",
            "ppl_windows=2",
            "ppl_bins=4",
            "--output_path",
            str(out),
        ]
    )
    results = results_of(out)
    got = results["results"]["longmem_perplexity"]
    assert {"ppl@32,none", "ppl@64,none", "nll@32,none", "nll@64,none"} <= set(got)
    for tag in ("32", "64"):
        assert got[f"ppl@{tag},none"] == pytest.approx(math.exp(got[f"nll@{tag},none"]))
    curve = got["loss_curve,none"]
    assert curve["length"] == 64 and len(curve["positions"]) == len(curve["loss"]) == 4
    assert got["ppl_curve,none"]["lengths"] == [32, 64]
    assert results["config"]["longmem_scoring"] == "bounded_cache:streamingllm"


def test_token_losses_survive_the_request_cache_pickle():
    import pickle

    scored = ScoredContinuation(-3.0, False, 1, 3, np.array([1.0, 0.5, 1.5]))
    again = pickle.loads(pickle.dumps(scored))
    assert again == (-3.0, False) and again.num_correct == 1 and np.array_equal(again.token_nll, scored.token_nll)
    assert pickle.loads(pickle.dumps(ScoredContinuation(-1.0, True, 1, 1))).token_nll is None


EVERY_KIND = [
    ("infini", {"segment_length": 16, "update": "delta"}),
    ("statedclm", {"max_context_length": 24, "chunk_size": 8, "sink_length": 4}),
    ("longcache", {"max_context_length": 24, "chunk_size": 8, "sink_length": 4, "top_k_prime": 2, "span_size": 2}),
    ("dynamic_ntk", {"variant": "hf"}),
    ("fox", {}),
]


@pytest.mark.parametrize("method, args", EVERY_KIND, ids=[m for m, _ in EVERY_KIND])
def test_every_kind_of_method_gives_perplexity_and_a_curve(method, args, tiny_model_dir, corpus_file, tmp_path_factory):
    """Segment recurrence, cache compression, recall, HF's dynamic RoPE and the FoX architecture
    all answer the task's requests with per-token losses, at a length past the base context."""
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    if method == "fox":
        from tests.helpers.fox_fixtures import build_tiny_fox

        pretrained, model_args = str(build_tiny_fox(tmp_path_factory.mktemp("tiny_fox_ppl"))), {}
    else:
        pretrained, model_args = str(tiny_model_dir), {"method": method, **args}
    metadata = {
        "pretrained": pretrained,
        "ppl_corpus": str(corpus_file),
        "ppl_lengths": [48, 160],
        "ppl_windows": 1,
        "ppl_bins": 4,
        **model_args,
    }
    task = PerplexityTask(config={"task": "longmem_perplexity", "metadata": metadata})
    lm = LongMemLM(pretrained=pretrained, device="cpu", **model_args)
    docs = list(task.test_docs())
    instances = [r for d in docs for r in task.construct_requests(d, "", metadata=("longmem_perplexity", 0, 1))]
    per_doc = [task.process_results(d, [s]) for d, s in zip(docs, lm.loglikelihood(instances, disable_tqdm=True))]
    table = task.aggregation()
    curve = table["ppl_curve"]([r["ppl_curve"] for r in per_doc])
    assert curve["status"] == ["ok", "ok"] and all(math.isfinite(p) and p > 1 for p in curve["ppl"])
    loss = table["loss_curve"]([r["loss_curve"] for r in per_doc])
    assert loss["length"] == 160 and len(loss["loss"]) == 4 and all(math.isfinite(v) for v in loss["loss"])
