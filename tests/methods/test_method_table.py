"""The registry's table of methods (`method_registry/table.py`: name -> "module:Class") against
the method classes themselves, and what the table is for: naming and refusing methods, and
labelling results, without importing torch."""

from __future__ import annotations

import json
import subprocess
import sys

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


def test_the_table_names_every_method_class_and_no_other():
    """Fails for a new method file without its line in the table (or a line left behind)."""
    found = {name: f"{cls.__module__}:{cls.__qualname__}" for name, cls in _method_classes().items()}
    assert METHODS == found, "method_registry/table.py must list exactly the method classes of models/methods/"


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
