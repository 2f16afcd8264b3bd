"""The registry's table of methods (`method_registry/table.py`: each file of models/methods/ by
its name) against the method classes themselves, and what the table is for: naming and refusing methods, and
labelling results, without importing torch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lm_eval_longmem.common.named_subclasses import import_every_module
from lm_eval_longmem.models import methods
from lm_eval_longmem.models.method_framework.base import LongMemMethod, registered_methods
from lm_eval_longmem.models.method_registry import available_methods
from lm_eval_longmem.models.method_registry.table import METHODS, NAMES_ITS_CHECKPOINT


def _method_classes() -> dict[str, type[LongMemMethod]]:
    """Every method class a file of `models/methods/` defines, found by importing them all."""
    import_every_module(methods.__name__, methods.__path__)
    prefix = f"{methods.__name__}."
    return {name: cls for name, cls in registered_methods().items() if cls.__module__.startswith(prefix)}


def test_each_method_file_defines_the_method_named_after_it():
    """Fails for a method class in a file named otherwise, or a file of models/methods/ defining none."""
    found = {name: cls.__module__ for name, cls in _method_classes().items()}
    assert METHODS == found, "each file of models/methods/ defines the one method named after it, and nothing else"


def test_the_table_loads_each_class_it_names():
    assert available_methods() == dict(sorted(_method_classes().items()))


def test_the_methods_that_name_their_checkpoint_are_the_ones_overriding_the_hook():
    base_hook = LongMemMethod.checkpoint_identity.__func__
    overriding = {name for name, cls in _method_classes().items() if cls.checkpoint_identity.__func__ is not base_hook}
    assert overriding == NAMES_ITS_CHECKPOINT


def test_names_refusals_and_run_names_need_no_method_imported():
    """In a fresh process: the names, an unknown method's message and a run's checkpoint identity
    come out with no method file, torch, transformers or lm-eval imported."""
    code = (
        "import json, sys\n"
        "from lm_eval_longmem.models.method_registry import UnknownMethodError, get_method, method_names\n"
        "from lm_eval_longmem.models.method_registry.checkpoint_identity import checkpoint_identity_of\n"
        "try:\n    get_method('yrn')\nexcept UnknownMethodError as error:\n    message = str(error)\n"
        "identity = checkpoint_identity_of('yarn', lambda: {})\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'lm_eval')\n"
        "               or m.startswith('lm_eval_longmem.models.methods.'))\n"
        "print(json.dumps([method_names(), message, identity, heavy]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    names, message, identity, heavy = json.loads(out)
    assert names == sorted(METHODS) and identity == {} and heavy == []
    assert "Did you mean method=yarn?" in message and ", ".join(names) in message


def test_a_file_that_does_not_define_its_namesake_is_named():
    from lm_eval_longmem.models.method_registry import _load

    with pytest.raises(TypeError, match=r"lm_eval_longmem/models/methods/yarn\.py defines 0 LongMemMethod classes"):
        _load("warp", "lm_eval_longmem.models.methods.yarn")
