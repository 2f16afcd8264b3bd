"""The warm runs most end-to-end tests use (tests/helpers/warm_commands.py) answer as a fresh
`lm_eval` process does: same exit status, stdout and stderr, byte for byte after decoding, the
start-up hook's one-line messages included; and no run's changes reach the next."""

import os
import subprocess

from tests.helpers import warm_commands
from tests.helpers.cli_runs import BIN


def fresh_and_warm(args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    fresh = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    return fresh, warm_commands.run(args, env=env, timeout=300)


def test_a_warm_run_prints_and_exits_as_a_fresh_process():
    for args in (
        [str(BIN / "lm_eval"), "--model", "longmem", "--tasks", "forgeting_curve"],  # the hook's one line, exit 2
        [str(BIN / "lm_eval"), "--model", "longmem", "--tasks", "forgetting_curve", "--metadata", '{"fc_samples": 3'],
        [str(BIN / "lm_eval"), "--help"],  # exit 0 through SystemExit
    ):
        fresh, warm = fresh_and_warm(args)
        assert (warm.returncode, warm.stdout, warm.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr), args
    assert fresh.returncode == 0 and "usage: lm-eval" in fresh.stdout


SCRIPT = """import json, os, sys
seen = getattr(json, "touched_by", None)
json.touched_by = sys.argv[1]  # a change to an imported module, which must die with this run
print(seen, sys.argv[1:], os.getcwd(), os.environ.get("ONE_RUN"), repr(sys.stdin.read()), sys.path[0])
print("to stderr", file=sys.stderr)
{ending}
"""


def test_each_run_is_a_fork_of_the_same_start_and_ends_as_the_interpreter_ends(tmp_path):
    env = {**os.environ, "ONE_RUN": "set"}
    cases = {
        "exit": ("raise SystemExit(3)", 3, "to stderr\n"),
        "message": ("raise SystemExit('a message')", 1, "\na message\n"),
        # an uncaught error goes through sys.excepthook: the traceback, then the error
        "error": ("raise ValueError('broken')", 1, "Traceback (most recent call last):\n"),
        "end": ("", 0, "to stderr\n"),
    }
    for name, (ending, status, stderr_has) in cases.items():
        script = tmp_path / name
        script.write_text(SCRIPT.format(ending=ending))
        server = warm_commands.WarmServer(str(script), env, ["json"])
        try:
            for word in ("first", "second"):
                returncode, out, err = server.run([str(script), word], env, timeout=60)
                assert returncode == status, (name, err)
                assert out.decode() == f"None ['{word}'] {os.getcwd()} set '' {tmp_path}\n"
                assert err.decode().startswith("to stderr\n") and stderr_has in err.decode(), err
        finally:
            server.close()
