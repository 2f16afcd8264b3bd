"""Run `lm_eval` as forks of a process that has already imported torch, transformers and lm-eval
(tests/helpers/warm_command_server.py), instead of paying 7-10 s of imports in each fresh process.
`lm-eval-longmem` stays a fresh process: its commands import little (0.1 s of CPU for `plot`).

One server per (script, environment) in each test process, started on first use: the server is
started with the run's exact environment, so whatever a library reads from the environment at
import time is what a fresh process would have read. Each run is a fork of the server's freshly
imported state (never of this pytest process), so neither this process's state nor another run's
reaches it. `LONGMEM_TESTS_FRESH=1` runs every command in a fresh process instead (the
pre-fork way, for comparing).
"""

from __future__ import annotations

import atexit
import io
import json
import locale
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SERVER = Path(__file__).with_name("warm_command_server.py")
BIN = Path(sys.executable).absolute().parent
# What a run of each script imports at its start and for a model run on the CPU, in the order a
# fresh run meets them (lm-eval's CLI, then torch, transformers and the model code); each run
# imports whatever is missing here itself.
WARM_UP = {
    str(BIN / "lm_eval"): (
        "lm_eval.__main__",
        "torch",
        "transformers",
        "transformers.modeling_utils",
        "transformers.models.llama.modeling_llama",
        "datasets",
        "accelerate",
        "lm_eval.evaluator",
        "lm_eval.api.registry",
        "lm_eval.models",
        "lm_eval.models.huggingface",
        "lm_eval.tasks",
        "lm_eval_longmem.lm_eval_model.longmem",
    ),
}
# Variables read only while a run runs, never at import: pytest's per-test one, and ours for the
# cache folder (common/paths.cache_dir reads it on each call) and the time estimate
# (test_cost_plan fails if it is read at import). A run may set them without a server of its own.
RUN_TIME_VARIABLES = ("PYTEST_CURRENT_TEST", "LM_EVAL_LONGMEM_CACHE", "LM_EVAL_LONGMEM_ESTIMATE_ABOVE")
_MAX_SERVERS = 2  # a server holds torch and transformers (some 400 MB); the oldest goes first


def wanted(args) -> bool:
    """True when `args` runs one of the console scripts a warm server can serve."""
    return bool(args) and str(args[0]) in WARM_UP and os.environ.get("LONGMEM_TESTS_FRESH") != "1"


class WarmServer:
    """One warm_command_server.py process for SCRIPT, started with `env`; `run` forks it once."""

    def __init__(self, script: str, env: dict[str, str], modules):
        self.folder = tempfile.mkdtemp(prefix="warm-command-")
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), script, self.folder, *modules],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        ready = self.process.stdout.readline()
        if not ready:
            raise RuntimeError(
                f"the warm command server for {script} died while importing (exit {self.process.wait()})"
            )
        self.runs = 0

    def run(
        self, argv: list[str], env: dict[str, str], timeout: float, cwd: str | None = None
    ) -> tuple[int | None, bytes, bytes]:
        self.runs += 1
        out, err = (os.path.join(self.folder, f"{self.runs}.{name}") for name in ("out", "err"))
        cwd = os.path.abspath(cwd or os.getcwd())
        request = {"argv": argv, "env": env, "cwd": cwd, "stdout": out, "stderr": err, "timeout": timeout}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError(f"the warm command server died (exit {self.process.wait()}) running {argv}")
        with open(out, "rb") as o, open(err, "rb") as e:
            outputs = o.read(), e.read()
        os.remove(out)
        os.remove(err)
        return json.loads(answer).get("returncode"), *outputs

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()
        self.process.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)


_servers: dict[tuple, WarmServer] = {}


def _server(script: str, env: dict[str, str]) -> WarmServer:
    key = (script, tuple(sorted((k, v) for k, v in env.items() if k not in RUN_TIME_VARIABLES)))
    server = _servers.pop(key, None)
    if server is None or server.process.poll() is not None:
        server = WarmServer(script, env, WARM_UP[script])
    _servers[key] = server  # most recently used last
    while len(_servers) > _MAX_SERVERS:
        _servers.pop(next(iter(_servers))).close()
    return server


@atexit.register
def _close_all() -> None:
    while _servers:
        _servers.popitem()[1].close()


def _text(data: bytes) -> str:
    """Decoded as `subprocess.run(..., text=True)` decodes: locale encoding, universal newlines."""
    return io.TextIOWrapper(io.BytesIO(data), encoding=locale.getpreferredencoding(False)).read()


def run(args, env: dict[str, str], timeout: float, cwd=None) -> subprocess.CompletedProcess:
    """`subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)`
    for a console script in WARM_UP, as a fork of a warm server."""
    args = [str(a) for a in args]
    returncode, out, err = _server(args[0], env).run(args, env, timeout, cwd)
    if returncode is None:
        raise subprocess.TimeoutExpired(args, timeout, _text(out), _text(err))
    return subprocess.CompletedProcess(args, returncode, _text(out), _text(err))
