"""Ctrl-C ends an `lm_eval` or `lm-eval-longmem` run with one line saying what is kept, not the
traceback of wherever the run happened to be (it still exits as interrupted)."""

import os
import signal
import subprocess
import threading
import time

from tests.helpers.cli_runs import BIN
from tests.helpers.training_helpers import tiny_overrides


def interrupt_when(command, ready_text, timeout=120):
    """Run `command`, send SIGINT once `ready_text` shows on its stderr; (returncode, stderr)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    # A job started in the background of a shell without job control (`cmd &`, nohup) inherits
    # SIGINT ignored, and so would the command: it gets Ctrl-C's default back, as in a terminal.
    proc = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    seen, ready = [], threading.Event()

    def read():
        for line in iter(proc.stderr.readline, ""):
            seen.append(line)
            if ready_text in line:
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert ready.wait(timeout) and proc.poll() is None, "".join(seen)[-3000:]
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    reader.join(timeout=10)
    return proc.returncode, "".join(seen)


def test_ctrl_c_during_lm_eval_scoring_is_one_line(tiny_model_dir, corpus_file):
    code, stderr = interrupt_when(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_model_dir}",
            "--tasks",
            "forgetting_curve",
            "--metadata",
            f"fc_corpus={corpus_file}",
            "fc_max_length=100",
            "fc_points=4",
            "fc_samples=500",
        ],
        ready_text="longmem scoring",
    )
    assert code == -signal.SIGINT, stderr[-3000:]  # Python's own ending: killed by SIGINT, 130 in a shell
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-3000:]
    assert stderr.rstrip().splitlines()[-1] == (
        "lm_eval: interrupted; requests already scored are kept in the --use_cache database if you passed one: "
        "rerun the same command to resume."
    )


def test_ctrl_c_during_training_is_one_line(tiny_model_dir, corpus_file, tmp_path):
    code, stderr = interrupt_when(
        [
            str(BIN / "lm-eval-longmem"),
            "train",
            "tiny-pi",
            *tiny_overrides(
                tiny_model_dir, corpus_file, tmp_path / "run", max_steps=100000, save_every=0, progress_bar=True
            ),
        ],
        ready_text="training:",
    )
    assert code == 130, stderr[-3000:]  # was 1
    assert "Traceback" not in stderr, stderr[-3000:]
    assert stderr.rstrip().splitlines()[-1].startswith("lm-eval-longmem: interrupted; rerun the same command")
