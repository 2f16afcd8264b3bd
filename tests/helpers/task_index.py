"""lm-eval's task index with and without our parse cache, and a small folder of task YAMLs to
index. `installed` is a fixture, available to every test module through `pytest_plugins` in
tests/conftest.py (no import needed)."""

import lm_eval.tasks._index as index_module
import pytest

from lm_eval_longmem.harness import task_index_cache


@pytest.fixture
def installed(monkeypatch, tmp_path):
    monkeypatch.setenv("LM_EVAL_LONGMEM_CACHE", str(tmp_path / "cache"))
    task_index_cache.install(index_module)  # idempotent: the start-up hook may have done it already
    return index_module.TaskIndex.build


def uncached_build(paths):
    """lm-eval's own index build, around our wrappers."""
    build = index_module.TaskIndex.build
    load = index_module.load_yaml
    original_build = getattr(build, "__wrapped__", build)
    original_load = getattr(load, "__wrapped__", load)
    index_module.load_yaml = original_load
    try:
        return original_build(paths)
    finally:
        index_module.load_yaml = load


def as_data(index):
    return {name: (e.name, e.kind, str(e.yaml_path), repr(e.cfg), sorted(e.tags)) for name, e in index.items()}


def write_tasks(folder):
    (folder / "family").mkdir(parents=True)
    (folder / "family" / "_common.yaml").write_text(
        "output_type: loglikelihood\ntest_split: test\nmetric_list:\n  - metric: acc\n"
    )
    (folder / "family" / "one.yaml").write_text(
        "include: _common.yaml\ntask: toy_one\ntag: [toys]\ndataset_path: a\nprocess_docs: !function utils.process\n"
    )
    (folder / "family" / "two.yaml").write_text("include: _common.yaml\ntask: toy_two\ndataset_path: b\n")
    (folder / "group.yaml").write_text("group: toy_group\ntask: [toy_one, toy_two]\n")
