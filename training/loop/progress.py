"""What a run reports: a tqdm bar with loss and tokens/s, the accelerate trackers, and
`metrics.jsonl` in the run folder (one line per logged step, cut back to the checkpoint on resume
so the file always holds one trajectory)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tqdm import tqdm

from lm_eval_longmem.common.atomic_files import fixed_partial_path, write_text

METRICS_FILE = "metrics.jsonl"


class TrainingLog:
    def __init__(self, accelerator, output_dir: Path, first_step: int, max_steps: int, show_bar: bool):
        self.accelerator = accelerator
        self.path = output_dir / METRICS_FILE
        self.main = accelerator.is_main_process
        if self.main:
            keep_metrics_before(self.path, first_step)
        self.bar = tqdm(
            total=max_steps,
            initial=first_step,
            desc="training",
            unit="step",
            disable=not (self.main and show_bar),
            dynamic_ncols=True,
        )
        self.clock = time.perf_counter()

    def step(
        self, step: int, loss: float, lr: float, tokens: int, total_tokens: int, write: bool, grad_norm=None
    ) -> None:
        now = time.perf_counter()
        tokens_per_second = tokens / max(now - self.clock, 1e-9)
        self.clock = now
        self.bar.update(1)
        self.bar.set_postfix(loss=f"{loss:.4f}", tok_s=f"{tokens_per_second:,.0f}", lr=f"{lr:.2e}")
        if not write:
            return
        record = {"step": step, "loss": loss, "lr": lr, "tokens_per_second": tokens_per_second, "tokens": total_tokens}
        if grad_norm is not None:  # before clipping
            record["grad_norm"] = grad_norm
        self.accelerator.log({k: v for k, v in record.items() if k != "step"}, step=step)
        if self.main:
            with self.path.open("a") as out:
                out.write(json.dumps(record) + "\n")

    def close(self) -> None:
        self.bar.close()


def keep_metrics_before(path: Path, first_step: int) -> None:
    """Drop lines of steps after `first_step` (a killed run logged past its last checkpoint),
    and a last line cut short by the kill; the file is replaced in one rename."""
    if not path.is_file():
        return
    lines = path.read_text().splitlines()
    kept = [line for line in lines if (step := step_of_line(line)) is not None and step <= first_step]
    if kept != lines:
        write_text(path, "".join(line + "\n" for line in kept), partial=fixed_partial_path(path))


def step_of_line(line: str) -> int | None:
    try:
        return int(json.loads(line)["step"])
    except (ValueError, KeyError, TypeError):
        return None


def read_metrics(output_dir: Path) -> list[dict]:
    path = Path(output_dir) / METRICS_FILE
    return [json.loads(line) for line in path.read_text().splitlines() if line]
