"""A process that imports what a console script (`lm_eval`) would, then forks a
child per request that runs the script itself, as a fresh process of that script would.

Started by tests/helpers/warm_commands.py as `python warm_command_server.py SCRIPT FOLDER
MODULE...` (FOLDER for its files, MODULE... what to import first) with the environment of the runs
it serves, and never runs a command itself: every run is a fork of the
same freshly imported state, so nothing one run changes (registries, lm-eval patches, globals)
reaches another. Fresh-process fidelity, point by point:

* the start-up hook (lm_eval_longmem/harness/startup.py) is activated for SCRIPT's command line
  before any import, as the `.pth` file activates it in a process started as SCRIPT, so each lm-eval
  module is patched right after it loads, exactly as there;
* `sys.path[0]` is the script's folder, `sys.argv`/`sys.orig_argv` the run's command line, the
  script runs as `__main__` (runpy), in the run's working directory, with stdin on /dev/null and
  stdout/stderr on the run's files (file descriptors 0-2, so C-level output is captured too);
* what the imports printed is written at the top of each run's stdout/stderr, where a fresh
  process would have printed it;
* the exit follows the interpreter's: SystemExit's code, an uncaught exception through
  `sys.excepthook` and status 1, KeyboardInterrupt as death by SIGINT, then the atexit functions
  and non-daemon threads, then stdio flushed.

Protocol: one JSON request per line on stdin (argv, env, cwd, stdout and stderr paths, timeout),
one JSON answer per line on stdout ({"returncode": n} or {"timeout": true}). Imports only the
standard library until the warm-up.
"""

import json
import os
import runpy
import signal
import sys
import time

SCRIPT = os.path.abspath(sys.argv[1])


def _warm_up(log_dir: str, modules: list[str]) -> tuple[bytes, bytes]:
    """Import `modules` as SCRIPT's process would; return what the imports printed."""
    sys.path[0] = os.path.dirname(SCRIPT)  # a console script's own folder, never this file's
    sys.argv = [SCRIPT]
    from lm_eval_longmem.harness import startup

    startup.activate([sys.executable, SCRIPT])  # what the .pth file does for SCRIPT's command line
    out_path, err_path = os.path.join(log_dir, "warm.out"), os.path.join(log_dir, "warm.err")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # not in this environment's versions: a run that needs it fails on it as a fresh one would
    sys.stdout.flush()
    sys.stderr.flush()
    with open(out_path, "rb") as out, open(err_path, "rb") as err:
        return out.read(), err.read()


def _exit_like_the_interpreter(run) -> None:
    """Run `run()` as a script's main code and end the process as CPython ends it."""
    import atexit
    import threading

    code = 0
    try:
        run()
    except SystemExit as exc:
        code = exc.code
        if code is None:
            code = 0
        elif not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        code = -signal.SIGINT
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    threading._shutdown()  # what Py_Finalize does: wait for non-daemon threads
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    if code == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


def _child(request: dict, warm_out: bytes, warm_err: bytes) -> None:
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, path, head in ((1, request["stdout"], warm_out), (2, request["stderr"], warm_err)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(target, head)
        os.dup2(target, fd)
        os.close(target)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    argv = request["argv"]
    sys.argv = list(argv)
    sys.orig_argv = [sys.executable, *argv]
    _exit_like_the_interpreter(lambda: runpy.run_path(argv[0], run_name="__main__"))


def _wait(pid: int, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return {"returncode": os.waitstatus_to_exitcode(status)}
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"timeout": True}
        time.sleep(0.01)


def main() -> None:
    requests = os.fdopen(os.dup(0), "r")
    answers = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    warm_out, warm_err = _warm_up(sys.argv[2], sys.argv[3:])
    answers.write(json.dumps({"ready": True}) + "\n")
    answers.flush()
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                requests.close()
                answers.close()
                _child(request, warm_out, warm_err)
            finally:
                os._exit(70)  # never back into this loop, whatever failed before the script ran
        answers.write(json.dumps(_wait(pid, request["timeout"])) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
