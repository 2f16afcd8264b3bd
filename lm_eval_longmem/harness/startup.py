"""Start-up shim: teaches the stock `lm_eval` command about `longmem` and our tasks.

It runs from `lm_eval_longmem_autoload.pth` (or the PEP 829 `.start` file on Python >=
3.15) in *every* Python process of the environment, so it imports nothing but `os` and
`sys` and returns at once unless the process is the lm-eval CLI. There it installs an
import watcher that installs each row of the table of lm-eval patches (lm_eval_patches.py) right
after lm-eval has executed the module the row waits for: `longmem` registered after lm-eval's
built-in models (registering earlier would hide them: lm-eval only imports its model table when
the registry is empty), our task folder in every `TaskManager`, lm-eval's own task YAMLs served
from a parse cache, results folders named after model and method, the start-up checks, one-line
answers to common command-line mistakes, the known-harmless-message filters and the count of
empty generated answers.

Set LM_EVAL_LONGMEM_AUTOLOAD=0 to switch it off.
"""

import os
import sys

OPT_OUT_ENV = "LM_EVAL_LONGMEM_AUTOLOAD"
_CLI_NAMES = ("lm_eval", "lm-eval")


def is_lm_eval_cli(argv) -> bool:
    """True when `argv` (an interpreter command line) runs the lm-eval CLI."""
    args = list(argv[1:4])
    for i, arg in enumerate(args):
        if arg == "-m":
            return i + 1 < len(args) and args[i + 1] in ("lm_eval", "lm_eval.__main__")
        if not arg.startswith("-"):
            name = os.path.basename(arg)
            if name.endswith(".py") or name.endswith(".exe"):
                name = name.rsplit(".", 1)[0]
            return name in _CLI_NAMES
    return False


def opted_out() -> bool:
    return os.environ.get(OPT_OUT_ENV, "1").strip().lower() in ("0", "false", "no", "off")


class _AfterImport:
    """Meta-path finder that runs a callback right after a watched module has executed."""

    def __init__(self, callbacks):
        self.callbacks = dict(callbacks)

    def find_spec(self, fullname, path=None, target=None):
        callback = self.callbacks.pop(fullname, None)
        if callback is None:
            return None
        if not self.callbacks and self in sys.meta_path:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original_exec = loader.exec_module

        def exec_then_callback(module):
            original_exec(module)
            callback(module)

        # Per-module loader instance: shadow exec_module on it, keep everything else.
        loader.exec_module = exec_then_callback
        return spec


def activate(argv=None) -> bool:
    """Install the import watcher when this process is the lm-eval CLI. Idempotent."""
    if opted_out():
        return False
    if not is_lm_eval_cli(argv if argv is not None else getattr(sys, "orig_argv", sys.argv)):
        return False
    from lm_eval_longmem.errors import install_concise_excepthook  # os and sys only

    install_concise_excepthook()  # our errors print as one message, not a traceback
    watch_lm_eval()
    return True


def watch_lm_eval() -> None:
    """Hook our callbacks onto lm-eval's modules (now if already imported, else when they
    load). Also used by `lm-eval-longmem`'s pass-through, which works even with the hook off."""
    if any(isinstance(f, _AfterImport) for f in sys.meta_path):
        return
    from lm_eval_longmem.harness import lm_eval_patches

    callbacks = {}
    for name in lm_eval_patches.trigger_modules():
        rows = lm_eval_patches.triggered_by(name)
        if name in sys.modules:
            lm_eval_patches.install(rows)
        else:
            callbacks[name] = lambda _module, rows=rows: lm_eval_patches.install(rows)
    if callbacks:
        sys.meta_path.insert(0, _AfterImport(callbacks))
