"""Which chunks each process reads at each step, as a pure function of the step.

Sample g of the run (counted over all processes) is chunk perm_e[g mod n] of epoch e = g // n, each
epoch a fresh seeded permutation. A micro-batch is a contiguous slice of the global batch, one
slice per process, so one process with micro-batch 2B reads exactly what two processes with B
read between them, and the data position of a checkpoint is simply its step."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class BatchOrder:
    chunks: np.ndarray  # [num_chunks, seq_len]
    micro_batch_size: int
    grad_accum_steps: int
    num_processes: int
    process_index: int
    seed: int

    def __post_init__(self):
        self._permutations: dict[int, np.ndarray] = {}

    @property
    def samples_per_step(self) -> int:
        return self.micro_batch_size * self.num_processes * self.grad_accum_steps

    def chunk_index(self, sample: int) -> int:
        epoch, offset = divmod(sample, len(self.chunks))
        if epoch not in self._permutations:
            self._permutations = {epoch: np.random.default_rng([self.seed, epoch]).permutation(len(self.chunks))}
        return int(self._permutations[epoch][offset])

    def micro_batch(self, step: int, micro: int) -> torch.Tensor:
        """[micro_batch_size, seq_len] token ids of this process for (optimizer step, micro-step)."""
        per_micro = self.micro_batch_size * self.num_processes
        first = (step * self.grad_accum_steps + micro) * per_micro + self.process_index * self.micro_batch_size
        rows = [self.chunks[self.chunk_index(first + j)] for j in range(self.micro_batch_size)]
        return torch.from_numpy(np.stack(rows).astype(np.int64))
