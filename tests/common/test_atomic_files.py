"""atomic_files.py: a file or folder appears whole under its name or not at all; a writer that
fails leaves the old one; partial files of dead writers are cleared; a folder that loses or
truncates a file afterwards is recognised."""

import json
import os
import subprocess
import sys

import pytest

from lm_eval_longmem.common import atomic_files
from lm_eval_longmem.common.atomic_files import (
    FOLDER_MANIFEST,
    atomic_directory,
    atomic_write,
    folder_problem,
    write_json,
)


def test_a_failed_write_leaves_the_old_file_and_no_partial(tmp_path):
    path = tmp_path / "cache.bin"
    with atomic_write(path) as handle:
        handle.write(b"old")
    with pytest.raises(RuntimeError):
        with atomic_write(path) as handle:
            handle.write(b"new, half")
            assert path.read_bytes() == b"old"  # nothing under the name until the end
            raise RuntimeError("killed here")
    assert path.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["cache.bin"]
    write_json(path, {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}


def test_partials_of_dead_writers_on_this_host_are_removed_by_the_next_writer(tmp_path):
    path = tmp_path / "results.json"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    host = atomic_files._HOST
    left_by_dead = tmp_path / f"results.json.{host}-{dead_pid}-0123abcd.partial"
    left_by_dead.write_text("{half")
    dead_folder = tmp_path / f"results.json.{host}-{dead_pid}-0123abce.partial"
    dead_folder.mkdir()
    alive = tmp_path / f"results.json.{host}-{os.getppid()}-0123abcf.partial"  # our parent: alive
    alive.write_text("{in progress")
    elsewhere = tmp_path / f"results.json.otherhost-{dead_pid}-0123abd0.partial"  # can't tell: kept
    elsewhere.write_text("{")
    write_json(path, [1])
    assert not left_by_dead.exists() and not dead_folder.exists()
    assert alive.exists() and elsewhere.exists() and json.loads(path.read_text()) == [1]


def test_a_folder_appears_whole_and_a_lost_or_cut_file_is_named(tmp_path):
    target = tmp_path / "model"
    with pytest.raises(RuntimeError):
        with atomic_directory(target) as staging:
            (staging / "config.json").write_text("{}")
            raise RuntimeError("killed while saving")
    assert not target.exists() and list(tmp_path.iterdir()) == []
    with atomic_directory(target) as staging:
        (staging / "config.json").write_text("{}")
        (staging / "sub").mkdir()
        (staging / "sub" / "weights.bin").write_bytes(b"x" * 100)
    assert folder_problem(target) is None
    assert json.loads((target / FOLDER_MANIFEST).read_text()) == {"files": {"config.json": 2, "sub/weights.bin": 100}}
    (target / "sub" / "weights.bin").write_bytes(b"x" * 10)
    assert folder_problem(target) == "sub/weights.bin has 10 bytes, 100 were written"
    (target / "config.json").unlink()
    assert folder_problem(target) == "config.json is missing"
    with atomic_directory(target) as staging:  # a damaged folder is replaced whole
        (staging / "config.json").write_text("{}")
    assert folder_problem(target) is None and not (target / "sub").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    (target / FOLDER_MANIFEST).write_text('{"files": ')
    assert folder_problem(target).startswith(f"unreadable {FOLDER_MANIFEST}")
    assert folder_problem(tmp_path / "nothing") == "missing"
