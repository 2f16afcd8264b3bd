"""Shared fixtures: a tiny Llama with a word-level tokenizer, a small text corpus, offline env.

Helpers that are not fixtures live in tests/helpers/ (import them from there, never from here).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

from tests.helpers.corpus import make_corpus_text
from tests.helpers.devices import DEVICES
from tests.helpers.markers import KVPRESS_MISSING_REASON
from tests.helpers.tiny_llama import build_tiny_model

# Fixtures shared by several test modules, defined beside their helpers.
pytest_plugins = ["tests.helpers.figures", "tests.helpers.method_checkpoints", "tests.helpers.task_index"]

TESTS = Path(__file__).resolve().parent
# The test files that meet transformers' version-specific surface, run again in the kvpress venv
# (transformers 5.2): the name of the cache argument and output field, attention functions'
# signatures (kvpress wraps them positionally), rope_parameters and HF's dynamic rope, tokenizer
# mappings (FoX's), cache cropping (prefix reuse), generation, and lm-eval's HFLM around them.
# Pure arithmetic, parsing, reports and the command line are the same under either version.
# Every kvpress test joins them (found by its skip reason).
TRANSFORMERS_SURFACE = {
    "methods/test_method_matrix.py",  # every method: build, score, generate, record, bfloat16
    "methods/test_dynamic_ntk_hf.py",
    "methods/test_landmark_study_format.py",  # a model type registered with transformers' Auto classes
    "methods/test_model_object.py",  # every method on a loaded model object: rotary embeddings rebuilt
    "methods/test_rope_frequencies.py",
    "methods/test_self_extend_and_lm_infinite.py",
    "models/test_bounded_cache.py",
    "models/test_cache_argument.py",
    "models/test_compressive_memory.py",
    "models/test_fox.py",
    "models/test_fox_checkpoint_conventions.py",
    "models/test_generation.py",
    "models/test_scoring.py",
    "lm_eval_model/test_longmem_lm.py",
}


def _run_triton_in_its_interpreter_without_a_gpu() -> None:
    """Kernel tests run Triton's interpreter on CPU tensors. triton 3.x fixes interpreter mode
    when its library is first imported (any test module may import it, e.g. through fla), so
    the switch is set here, before any test module is collected."""
    import torch

    if "TRITON_INTERPRET" not in os.environ and not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"


_run_triton_in_its_interpreter_without_a_gpu()


@pytest.fixture(scope="session", autouse=True)
def _isolated_environment(tmp_path_factory):
    """Offline, and a private cache for token streams (the real default model cache is kept)."""
    saved = dict(os.environ)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # One worker per core already: a worker's (and its subprocesses') extra torch threads only
        # spin against the other workers on tiny models (one_torch_thread's measurements).
        import torch

        torch.set_num_threads(1)
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models run fastest on one thread; with another job on the cores, torch's spinning threads
    made the family matrix 50x slower (measured: 170 s against 3 s). `pytestmark =
    pytest.mark.usefixtures("one_torch_thread")` in a module of tiny-model tests."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "words.txt"
    path.write_text(make_corpus_text(), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny_llama"))


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def pytest_addoption(parser):
    parser.addoption(
        "--surface-files-only",
        action="store_true",
        help="collect only the files that can hold transformers_surface tests (TRANSFORMERS_SURFACE and "
        "the files that name requires_kvpress): test.sh's kvpress tier, which imports no other test module",
    )


def _relative_name(path) -> str:
    path = Path(str(path)).resolve()
    return path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else ""


@functools.cache
def _names_requires_kvpress(path: str) -> bool:
    return "requires_kvpress" in Path(path).read_text()


def _may_hold_surface_tests(path) -> bool:
    """Read from the file's text (once per file), before it is imported: kvpress tests are marked
    `requires_kvpress`."""
    return _relative_name(path) in TRANSFORMERS_SURFACE or _names_requires_kvpress(str(path))


def pytest_ignore_collect(collection_path, config):
    name = collection_path.name
    if config.getoption("surface_files_only") and name.startswith("test_") and name.endswith(".py"):
        return not _may_hold_surface_tests(collection_path) or None
    return None


def pytest_collection_modifyitems(config, items):
    """Mark the tests `./scripts/test.sh` runs again under the kvpress extra's transformers."""
    for item in items:
        needs_kvpress = any(mark.kwargs.get("reason") == KVPRESS_MISSING_REASON for mark in item.iter_markers("skipif"))
        if _relative_name(item.path) in TRANSFORMERS_SURFACE or needs_kvpress:
            if not _may_hold_surface_tests(item.path):
                raise pytest.UsageError(
                    f"{item.nodeid} needs kvpress, but its file neither names requires_kvpress nor is in "
                    "TRANSFORMERS_SURFACE (tests/conftest.py): the kvpress tier would not collect it"
                )
            item.add_marker(pytest.mark.transformers_surface)
