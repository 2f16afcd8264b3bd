"""TeacherForcedScorer against lm-eval's full-logits path, on a tiny model built here."""

import pytest
import torch
from lm_eval.api.instance import Instance
from lm_eval.models.huggingface import HFLM
from transformers import AutoModelForCausalLM, LlamaForCausalLM

from lm_eval_longmem.models.runtime.scoring import ScoredSpan, TeacherForcedScorer

REQUESTS = [
    ("the king of the sea", " had a ship and a house"),
    ("night", " day"),
    ("old man river and the stone water that it was", " gold light of the dark heart"),
]


@pytest.fixture(scope="module")
def hflm(tiny_model_dir):
    return HFLM(pretrained=str(tiny_model_dir), device="cpu", batch_size=2)


def _instances():
    return [Instance("loglikelihood", {}, pair, 0) for pair in REQUESTS]


@torch.no_grad()
def _manual(model, ids, start, targets):
    logits = model(torch.tensor([ids])).logits[0].float()
    rows = logits[start : start + len(targets)]
    logprobs = torch.log_softmax(rows, -1)[range(len(targets)), targets]
    return float(logprobs.sum()), int((rows.argmax(-1) == torch.tensor(targets)).sum())


def test_matches_lm_evals_full_logits_path(tiny_model_dir, hflm):
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    ours = LongMemLM(pretrained=str(tiny_model_dir), device="cpu", batch_size=2)
    expected = hflm.loglikelihood(_instances())
    got = ours.loglikelihood(_instances())
    assert ours.scorer.strategy == "split"
    for (ll, greedy), score in zip(expected, got):
        assert score[0] == pytest.approx(ll, abs=1e-4) and score[1] == greedy


def test_counts_argmax_hits_per_token(tiny_model_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    ids = list(range(4, 40))
    start, targets = 20, tuple(ids[21:30])
    (score,) = TeacherForcedScorer(model).score(torch.tensor([ids[:30]]), [ScoredSpan(start, targets)])
    ll, hits = _manual(model, ids[:30], start, list(targets))
    assert score.num_tokens == 9 and score.num_correct == hits
    assert score[0] == pytest.approx(ll, abs=1e-4)
    assert score[1] == (hits == 9)


def test_chunking_does_not_change_results(tiny_model_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    ids = torch.tensor([list(range(4, 60))])
    span = [ScoredSpan(10, tuple(range(15, 55)))]
    whole = TeacherForcedScorer(model).score(ids, span)[0]
    one_row_at_a_time = TeacherForcedScorer(model, chunk_bytes=1).score(ids, span)[0]
    assert one_row_at_a_time.num_correct == whole.num_correct
    assert one_row_at_a_time[0] == pytest.approx(whole[0], abs=1e-4)


def test_padded_batch_equals_single_rows(tiny_model_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    scorer = TeacherForcedScorer(model)
    short, long = list(range(4, 20)), list(range(30, 70))
    batch = torch.full((2, len(long)), 3)
    batch[0, : len(short)] = torch.tensor(short)
    batch[1] = torch.tensor(long)
    spans = [ScoredSpan(8, tuple(range(50, 57))), ScoredSpan(20, tuple(range(5, 24)))]
    together = scorer.score(batch, spans)
    alone = [scorer.score(torch.tensor([short]), spans[:1])[0], scorer.score(torch.tensor([long]), spans[1:])[0]]
    for a, b in zip(together, alone):
        assert a.num_correct == b.num_correct and a[0] == pytest.approx(b[0], abs=1e-4)


class SoftCappedLlama(LlamaForCausalLM):
    """A model that post-processes its logits (like Gemma's soft-capping)."""

    def forward(self, *args, **kwargs):
        out = super().forward(*args, **kwargs)
        out.logits = 3.0 * torch.tanh(out.logits / 3.0)
        return out


def test_models_that_post_process_logits_fall_back_and_stay_exact(tiny_model_dir):
    model = SoftCappedLlama.from_pretrained(tiny_model_dir).eval()
    scorer = TeacherForcedScorer(model)
    ids = list(range(4, 40))
    (score,) = scorer.score(torch.tensor([ids[:30]]), [ScoredSpan(20, tuple(ids[21:30]))])
    assert scorer.strategy == "logits_to_keep"
    ll, hits = _manual(model, ids[:30], 20, ids[21:30])
    assert score[0] == pytest.approx(ll, abs=1e-4) and score.num_correct == hits
