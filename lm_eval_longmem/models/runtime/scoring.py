"""Teacher-forced scoring that never builds logits for positions nobody scores.

lm-eval's HFLM computes a full-vocabulary log-softmax over every input position (a 64k-token
input with a 150k vocabulary is ~20 GB of logits) to then keep a few of them. Here the model
body runs once, the output head is applied only to the scored positions, and a fixed-size
chunk of positions at a time, so peak memory is independent of length x vocabulary.

The split "body then head" must give the model's own logits: some architectures post-process
logits (soft-capping, scaling). A one-off probe on a few tokens compares both; when they
differ we fall back to the model's `logits_to_keep` argument (still only scored positions),
and to full logits for models that accept neither.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

from lm_eval_longmem.models.runtime.requests import ScoredContinuation

logger = logging.getLogger(__name__)

CHUNK_BYTES = 64 * 2**20  # fp32 logits held at once while scoring
_PROBE_TOKENS = 16


@dataclass(frozen=True)
class ScoredSpan:
    """Predictions at input positions [start, start + len(targets)) are scored against targets."""

    start: int
    targets: tuple[int, ...]


class TeacherForcedScorer:
    def __init__(self, model, chunk_bytes: int = CHUNK_BYTES):
        self.model = model
        self.chunk_bytes = chunk_bytes
        self.strategy: str | None = None  # "split" | "logits_to_keep" | "full", chosen on first use

    # --- public --------------------------------------------------------------------------
    @torch.no_grad()
    def score(self, input_ids: torch.Tensor, spans: list[ScoredSpan]) -> list[ScoredContinuation]:
        """Score one right-padded batch `input_ids` [B, T]; one span per row."""
        if self.strategy is None:
            self.strategy = self._choose_strategy(input_ids[:1, :_PROBE_TOKENS])
        if self.strategy == "split":
            hidden = self._body(input_ids)
            return [
                self._score_hidden(hidden[b, s.start : s.start + len(s.targets)], s.targets)
                for b, s in enumerate(spans)
            ]
        if self.strategy == "logits_to_keep":
            positions = sorted({s.start + i for s in spans for i in range(len(s.targets))})
            index = torch.tensor(positions, device=input_ids.device)
            logits = self.model(input_ids, logits_to_keep=index, use_cache=False).logits
            where = {p: i for i, p in enumerate(positions)}
            rows = [logits[b, [where[s.start + i] for i in range(len(s.targets))]] for b, s in enumerate(spans)]
        else:
            logits = self.model(input_ids, use_cache=False).logits
            rows = [logits[b, s.start : s.start + len(s.targets)] for b, s in enumerate(spans)]
        return [self._score_logits_chunked(row, s.targets) for row, s in zip(rows, spans)]

    # --- strategies ----------------------------------------------------------------------
    def _body(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model.base_model(input_ids=input_ids, use_cache=False).last_hidden_state

    def _head(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.model.get_output_embeddings()(hidden)

    def _choose_strategy(self, probe_ids: torch.Tensor) -> str:
        reference = self.model(probe_ids, use_cache=False).logits.float()
        try:
            split = self._head(self._body(probe_ids)).float()
            if split.shape == reference.shape and torch.allclose(split, reference, rtol=1e-3, atol=1e-3):
                return "split"
        except Exception as err:  # noqa: BLE001 - any failure means "not this strategy"
            logger.debug("body/head split unavailable: %s", err)
        try:
            last = torch.tensor([probe_ids.shape[1] - 1], device=probe_ids.device)
            kept = self.model(probe_ids, logits_to_keep=last, use_cache=False).logits.float()
            if torch.allclose(kept[:, -1], reference[:, -1], rtol=1e-3, atol=1e-3):
                logger.info("Scoring with logits_to_keep (model post-processes its logits).")
                return "logits_to_keep"
        except Exception as err:  # noqa: BLE001
            logger.debug("logits_to_keep unavailable: %s", err)
        logger.warning(
            "This model accepts neither a body/head split nor logits_to_keep: scoring with full "
            "logits, whose memory grows with sequence length x vocabulary."
        )
        return "full"

    # --- per-span statistics -------------------------------------------------------------
    def _chunk_len(self, vocab_size: int) -> int:
        return max(1, self.chunk_bytes // (4 * vocab_size))

    def _score_hidden(self, hidden: torch.Tensor, targets: tuple[int, ...]) -> ScoredContinuation:
        vocab = self.model.get_output_embeddings().weight.shape[0]
        step = self._chunk_len(vocab)
        totals = SpanTotals()
        target_ids = torch.tensor(targets, device=hidden.device)
        for i in range(0, len(targets), step):
            totals.add(self._head(hidden[i : i + step]), target_ids[i : i + step])
        return totals.result(len(targets))

    def _score_logits_chunked(self, logits: torch.Tensor, targets: tuple[int, ...]) -> ScoredContinuation:
        step = self._chunk_len(logits.shape[-1])
        totals = SpanTotals()
        target_ids = torch.tensor(targets, device=logits.device)
        for i in range(0, len(targets), step):
            totals.add(logits[i : i + step], target_ids[i : i + step])
        return totals.result(len(targets))


class SpanTotals:
    """Running log-likelihood, argmax hits and per-token losses over chunks of one span."""

    def __init__(self):
        self.loglikelihood = 0.0
        self.correct = 0
        self.token_nll: list[torch.Tensor] = []  # float32 on the CPU: one value per scored token

    def add(self, logits: torch.Tensor, targets: torch.Tensor) -> None:
        logits = logits.float()
        log_norm = torch.logsumexp(logits, dim=-1)
        target_logits = logits.gather(-1, targets[:, None]).squeeze(-1)
        token_loglik = target_logits - log_norm
        self.loglikelihood += float(token_loglik.sum())
        self.correct += int((logits.argmax(dim=-1) == targets).sum())
        self.token_nll.append((-token_loglik).detach().to("cpu", torch.float32))

    def result(self, num_tokens: int) -> ScoredContinuation:
        nll = torch.cat(self.token_nll).numpy() if self.token_nll else None
        return ScoredContinuation(self.loglikelihood, self.correct == num_tokens, self.correct, num_tokens, nll)
