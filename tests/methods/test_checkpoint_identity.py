"""`LongMemMethod.checkpoint_identity`, the hook through which a method names the checkpoint it runs
in run-folder names and report labels (`fox`: its architecture), asked by the registry
(`method_registry/checkpoint_identity.py`) without importing every method: reports must not
import torch, and the registry imports only the methods its table lists as naming their checkpoint."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lm_eval_longmem.models.method_registry import available_methods
from lm_eval_longmem.models.method_registry.checkpoint_identity import checkpoint_identity_of

PRO = {"use_output_gate": True, "use_output_norm": True, "qk_norm": True, "use_k_shift": True, "use_v_shift": True}
CONFIGS = {  # config.json dicts of the architectures a method may be asked about
    "fox-pro": {"model_type": "forgetting_transformer-project_fox", "fgate_type": "full", "use_rope": False, **PRO},
    "transformer-llama": {"model_type": "transformer-project_fox"},
    "llama": {"model_type": "llama", "max_position_embeddings": 128},
}


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("method", list(available_methods()))
def test_the_registry_gives_each_methods_own_answer(method, config):
    """Fails for a method whose hook the table's `NAMES_ITS_CHECKPOINT` misses: the registry would
    then answer {} where the method names its checkpoint."""
    cls = available_methods()[method]
    assert checkpoint_identity_of(method, lambda: CONFIGS[config]) == cls.checkpoint_identity(CONFIGS[config])


def test_a_method_that_names_no_checkpoint_never_reads_its_config():
    """Run-folder names read the config (maybe from the Hub) only for a method that uses it."""

    def unreadable():
        raise AssertionError("read the config of a method that names no checkpoint")

    names = [name for name, cls in available_methods().items() if not cls.checkpoint_identity(CONFIGS["fox-pro"])]
    assert names  # the default hook names nothing
    for name in [*names, "hf"]:
        assert checkpoint_identity_of(name, unreadable) == {}


def test_reports_label_every_method_without_importing_torch():
    """A results file of each method (the `fox` one with the switches it records) is described
    in a fresh process: labels come out, and torch, transformers, numpy and lm-eval stay unloaded."""
    results = [
        {
            "config": {
                "model": "longmem",
                "model_args": {},
                "longmem_method": name,
                "longmem_method_args": CONFIGS["fox-pro"],
            }
        }
        for name in available_methods()
    ]
    code = (
        "import json, sys\nfrom pathlib import Path\nfrom lm_eval_longmem.report.runs import describe_run\n"
        f"labels = [describe_run(data, Path()).variant for data in json.loads({json.dumps(results)!r})]\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'numpy', 'lm_eval') if m in sys.modules)\n"
        "print(json.dumps([labels, heavy]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    labels, heavy = json.loads(out)
    assert heavy == []
    assert "fox (architecture=fox-pro)" in labels and "vanilla" in labels
