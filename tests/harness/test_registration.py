"""The start-up hook and registration: only in lm-eval CLI processes, idempotent, built-ins kept."""

import itertools
import os
import subprocess
import sys

import pytest

from lm_eval_longmem.harness import registration, startup


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["/venv/bin/python3", "/venv/bin/lm_eval", "--model", "longmem"], True),
        (["python", "/usr/local/bin/lm-eval", "ls", "tasks"], True),
        (["python", "-m", "lm_eval", "--tasks", "x"], True),
        (["python", "-u", "-m", "lm_eval"], True),
        (["python", "-m", "pytest"], False),
        (["python", "-c", "import lm_eval"], False),
        (["python", "train.py", "lm_eval"], False),
        (["python"], False),
        (
            ["/venv/bin/python3", "/venv/bin/accelerate", "launch", "-m", "lm_eval"],
            False,
        ),  # its children run `-m lm_eval`
    ],
)
def test_cli_detection(argv, expected):
    assert startup.is_lm_eval_cli(argv) is expected


def test_opt_out_and_other_processes_do_nothing(monkeypatch):
    monkeypatch.setenv(startup.OPT_OUT_ENV, "0")
    assert startup.activate(["python", "/bin/lm_eval"]) is False
    monkeypatch.delenv(startup.OPT_OUT_ENV)
    assert startup.activate(["python", "script.py"]) is False


def test_hook_is_inert_in_unrelated_processes():
    code = (
        "import sys; print(any(type(f).__name__ == '_AfterImport' for f in sys.meta_path), "
        "'lm_eval' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "False"]


def test_hook_installs_its_watcher_in_the_cli_only():
    code = (
        "import lm_eval_longmem.harness.startup as a, sys; "
        "print(a.activate(['python', '/x/lm_eval']), a.activate(['python', '/x/lm_eval']), "
        "sum(type(f).__name__ == '_AfterImport' for f in sys.meta_path))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True", "1"]  # idempotent: one watcher


def test_watcher_registers_after_the_builtin_models():
    code = (
        "import lm_eval_longmem.harness.startup as a; a.activate(['python', '/x/lm_eval']);"
        "from lm_eval.api.registry import get_model;"
        "print(get_model('longmem').__name__, get_model('hf').__name__, get_model('dummy').__name__)"
    )
    env = {**os.environ, startup.OPT_OUT_ENV: "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.split() == ["LongMemLM", "HFLM", "DummyLM"]


def test_register_is_idempotent_and_keeps_builtins():
    from lm_eval.api.registry import get_model

    import lm_eval_longmem

    lm_eval_longmem.register()
    lm_eval_longmem.register()
    assert registration.is_registered()
    assert get_model("longmem").__name__ == "LongMemLM"
    assert get_model("hf").__name__ == "HFLM" and get_model("dummy").__name__ == "DummyLM"


def test_include_path_gets_our_tasks_once():
    ours = registration.tasks_dir()
    assert registration._with_our_tasks(None) == [ours]
    assert registration._with_our_tasks("/mine") == [ours, "/mine"]
    assert registration._with_our_tasks([str(ours)]) == [str(ours)]


def test_stands_down_when_lm_eval_discovers_plugins_itself():
    source = "from importlib.metadata import entry_points\nPLUGINS = entry_points(group='lm_eval.tasks')\n"
    assert registration.lm_eval_loads_entry_points(_module_from_source(source))
    assert not registration.lm_eval_loads_entry_points(_module_from_source("x = 1\n"))
    assert registration.install_task_folder(_module_from_source(source)) is False


_MODULE_NUMBERS = itertools.count(1)


def _module_from_source(source):
    import importlib.util
    import tempfile

    name = f"fake_lm_eval_mod_{next(_MODULE_NUMBERS)}"
    path = os.path.join(tempfile.mkdtemp(), f"{name}.py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
