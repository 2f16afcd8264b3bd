"""lm-eval's task index served from our parse cache is the index lm-eval builds itself, and an
edited, added or removed YAML is seen at once (task_index_cache.py)."""

import os
import time

import lm_eval.tasks._index as index_module
import pytest

from lm_eval_longmem.harness import task_index_cache
from tests.helpers.task_index import as_data, uncached_build, write_tasks


def test_cached_index_equals_lm_evals_and_follows_edits(installed, monkeypatch, tmp_path):
    folder = tmp_path / "builtin"
    write_tasks(folder)
    monkeypatch.setattr(task_index_cache, "builtin_tasks_dir", lambda: folder)
    expected = as_data(uncached_build([folder]))
    assert as_data(installed([folder])) == expected  # cold: parsed and stored
    (cache_file,) = (tmp_path / "cache" / "task_index").iterdir()
    stored = task_index_cache.ParsedYamlStore(folder, cache_file).entries
    assert {os.path.basename(p) for p in stored} == {"one.yaml", "two.yaml", "group.yaml", "_common.yaml"}

    parsed = []
    with monkeypatch.context() as patch:
        patch.setattr("lm_eval.tasks._yaml_loader.yaml.load", lambda *a, **k: parsed.append(a) or {})
        assert as_data(installed([folder])) == expected  # warm: nothing parsed
    assert parsed == []

    time.sleep(0.01)
    (folder / "family" / "two.yaml").write_text("include: _common.yaml\ntask: toy_two_renamed\ndataset_path: b\n")
    (folder / "three.yaml").write_text("task: toy_three\ndataset_path: c\noutput_type: generate_until\n")
    edited = as_data(installed([folder]))
    assert "toy_two_renamed" in edited and "toy_three" in edited and "toy_two" not in edited
    assert edited == as_data(uncached_build([folder]))


def test_folders_outside_lm_eval_are_never_cached(installed, monkeypatch, tmp_path):
    builtin, users = tmp_path / "builtin", tmp_path / "users"
    write_tasks(builtin)
    write_tasks(users)
    monkeypatch.setattr(task_index_cache, "builtin_tasks_dir", lambda: builtin)
    assert as_data(installed([users])) == as_data(uncached_build([users]))
    assert not any((tmp_path / "cache" / "task_index").glob("*.pickle"))


def test_switched_off_by_environment(monkeypatch):
    monkeypatch.setenv(task_index_cache.OPT_OUT_ENV, "0")
    assert not task_index_cache.enabled() and task_index_cache.install(index_module) is False


@pytest.mark.slow  # 15 s: it builds lm-eval's index of ~14k task files the slow way
def test_lm_evals_real_index_is_unchanged(installed):
    """The whole built-in index (~14,700 entries), lm-eval's build against ours, cold and warm."""
    folder = task_index_cache.builtin_tasks_dir()
    expected = as_data(uncached_build([folder]))
    assert len(expected) > 1000
    assert as_data(installed([folder])) == expected
    start = time.perf_counter()
    assert as_data(installed([folder])) == expected
    assert time.perf_counter() - start < 30  # ~1 s warm on 2 cores, ~10 s without the cache


def test_only_the_most_recently_used_cache_files_are_kept(tmp_path):
    for age, name in enumerate(["a", "b", "c", "d", "e", "f"]):
        path = tmp_path / f"lm_eval-0.4.13-{name}-v1.pickle"
        path.write_bytes(b"x")
        os.utime(path, (1_000_000 - age, 1_000_000 - age))  # "a" newest
    (tmp_path / "unrelated.txt").write_text("kept")
    task_index_cache.prune(tmp_path, 4)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "lm_eval-0.4.13-a-v1.pickle",
        "lm_eval-0.4.13-b-v1.pickle",
        "lm_eval-0.4.13-c-v1.pickle",
        "lm_eval-0.4.13-d-v1.pickle",
        "unrelated.txt",
    ]
