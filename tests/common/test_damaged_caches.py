"""Every cache a later run trusts, damaged on disk (cut short, emptied, zeroed, overwritten with
random bytes, a file gone from a folder), is built again after one warning naming it, with the
contents it should have had; the rebuilt file is whole (no second warning). Each test uses a
private cache folder: the real one is never touched."""

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from lm_eval_longmem.common.atomic_files import FOLDER_MANIFEST
from lm_eval_longmem.data.corpora import load_corpus
from lm_eval_longmem.data.token_stream import corpus_documents
from lm_eval_longmem.harness import task_index_cache
from lm_eval_longmem.lm_eval_model import request_cache
from lm_eval_longmem.models.checkpoint import default_model
from tests.helpers.fault_injection import DAMAGES, damage
from tests.helpers.task_index import as_data, uncached_build, write_tasks


@pytest.fixture
def private_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("LM_EVAL_LONGMEM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def warnings(caplog):
    """The warning messages logged during the test (read, then cleared, by calling it)."""
    caplog.set_level(logging.WARNING)

    def taken() -> list[str]:
        messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        caplog.clear()
        return messages

    return taken


def one_rebuild_warning(messages: list[str], path) -> bool:
    return (
        len(messages) == 1
        and messages[0].startswith(f"{path} is damaged (")
        and messages[0].endswith("; rebuilding it.")
    )


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.mark.parametrize("how", [*DAMAGES, "another array"])
def test_corpus_token_stream_and_document_starts(how, private_cache, tokenizer, corpus_file, warnings):
    corpus = load_corpus(str(corpus_file))
    expected = [d.copy() for d in corpus_documents(corpus, tokenizer)]
    (stream_file,) = (private_cache / "token_streams").glob("*[0-9a-f].npy")
    (starts_file,) = (private_cache / "token_streams").glob("*.starts.npy")
    for path in (stream_file, starts_file):
        if how == "another array":  # a whole .npy file, but not what belongs there
            np.save(path, np.array([0, 5]) if path == starts_file else np.array([[1, 2]]))
        else:
            damage(path, how)
        documents = corpus_documents(corpus, tokenizer)
        assert one_rebuild_warning(warnings(), path)
        assert len(documents) == len(expected) and all(np.array_equal(a, b) for a, b in zip(documents, expected))
        corpus_documents(corpus, tokenizer)
        assert warnings() == []


@pytest.mark.parametrize("how", DAMAGES)
def test_packed_training_data(how, private_cache, tokenizer, corpus_file, warnings):
    from lm_eval_longmem_training.data.packing import packed_chunks
    from lm_eval_longmem_training.data.text_sources import open_text_source

    source = open_text_source(str(corpus_file))
    expected = np.array(packed_chunks(source, tokenizer, 16))  # a copy: the file is mapped
    (path,) = (private_cache / "training_tokens").glob("*.npy")
    damage(path, how)
    assert np.array_equal(packed_chunks(source, tokenizer, 16), expected)
    assert one_rebuild_warning(warnings(), path)
    packed_chunks(source, tokenizer, 16)
    assert warnings() == []


@pytest.mark.parametrize("how", DAMAGES)
def test_task_index_cache(how, installed, monkeypatch, tmp_path, warnings):
    folder = tmp_path / "builtin"
    write_tasks(folder)
    monkeypatch.setattr(task_index_cache, "builtin_tasks_dir", lambda: folder)
    expected = as_data(uncached_build([folder]))
    installed([folder])
    (path,) = (tmp_path / "cache" / "task_index").glob("*.pickle")
    damage(path, how)
    assert as_data(installed([folder])) == expected
    assert one_rebuild_warning(warnings(), path)
    assert as_data(installed([folder])) == expected and warnings() == []
    assert len(task_index_cache.ParsedYamlStore(folder, path).entries) == 4


@pytest.fixture
def fake_conversion(monkeypatch, private_cache, tiny_model_dir, tmp_path):
    """The default model's conversion with the tiny model's files instead of SmolLM2's GGUF
    (the real one takes ~20 s); counts conversions."""
    conversions = []

    def save(source, folder):
        conversions.append(folder)
        for file in tiny_model_dir.iterdir():
            shutil.copy(file, folder / file.name)
        (folder / "chat_template.jinja").write_text("{{ messages }}")

    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(default_model, "gguf_path", lambda: gguf)
    monkeypatch.setattr(default_model, "_save_converted", save)
    monkeypatch.setattr(default_model, "_checked", set())
    return conversions


@pytest.mark.parametrize(
    "fault",
    [
        "lost tokenizer.json",
        "lost model.safetensors",
        "lost the file list",
        *(f"{how} model.safetensors" for how in DAMAGES),
        "garbage config.json",
    ],
)
def test_converted_default_model_folder(fault, fake_conversion, warnings):
    folder = default_model.default_model_dir()
    assert len(fake_conversion) == 1 and (folder / FOLDER_MANIFEST).is_file()
    how, name = fault.split(" ", 1) if not fault.startswith("lost") else ("lost", fault.split(" ", 1)[1])
    if name == "the file list":
        (folder / FOLDER_MANIFEST).unlink()  # like a folder converted before file lists: checked by name
        (folder / "tokenizer.json").unlink()
        name = "tokenizer.json"
    elif how == "lost":
        (folder / name).unlink()
    else:
        damage(folder / name, how)
    default_model._checked.clear()  # a new process
    assert default_model.default_model_dir() == folder
    messages = warnings()
    assert one_rebuild_warning(messages, folder) and name in messages[0]
    assert len(fake_conversion) == 2 and default_model._conversion_problem(folder) is None


def test_a_whole_folder_converted_before_file_lists_is_kept_and_listed(fake_conversion, warnings):
    folder = default_model.default_model_dir()
    (folder / FOLDER_MANIFEST).unlink()
    default_model._checked.clear()
    assert default_model.default_model_dir() == folder
    assert len(fake_conversion) == 1 and warnings() == [] and (folder / FOLDER_MANIFEST).is_file()


@pytest.mark.parametrize("how", [*DAMAGES, "another fingerprint"])
def test_use_cache_fingerprint_file(how, tmp_path, warnings):
    import json

    path = tmp_path / "run_longmem__tiny__vanilla__0123456789ab.json"
    fingerprint = {"method": "vanilla", "dtype": "float32", "weights": {"path": "/m", "files": [["a", 1]]}}
    request_cache._write_fingerprint(str(path), fingerprint)
    if how == "another fingerprint":
        path.write_text(json.dumps({"method": "yarn"}))
    else:
        damage(path, how)
    request_cache._write_fingerprint(str(path), fingerprint)
    assert one_rebuild_warning(warnings(), path)
    assert json.loads(path.read_text()) == json.loads(json.dumps(fingerprint))
    request_cache._write_fingerprint(str(path), fingerprint)
    assert warnings() == []


@pytest.mark.parametrize("how", ["truncated", "zeroed", "garbage"])
def test_use_cache_database_is_set_aside_and_a_new_one_started(how, tmp_path, warnings):
    from sqlitedict import SqliteDict

    from lm_eval_longmem.common.damaged_database import set_aside_if_damaged

    path = tmp_path / "run_longmem__tiny__vanilla__0123456789ab_rank0.db"
    with SqliteDict(str(path), autocommit=True) as database:
        for i in range(300):
            database[f"request {i}"] = (-1.5 * i, True)
    assert set_aside_if_damaged(str(path), logging.getLogger("test")) is None  # whole: kept
    damage(path, how)
    (path.parent / f"{path.name}-journal").write_bytes(b"stale")  # never left to meet a new database
    aside = set_aside_if_damaged(str(path), logging.getLogger("test"))
    messages = warnings()
    assert aside is not None and one_rebuild_warning(messages, path) and f"kept as {aside}" in messages[0]
    assert Path(aside).is_file() and not path.exists() and not (path.parent / f"{path.name}-journal").exists()
    with SqliteDict(str(path), autocommit=True) as database:  # what lm-eval does next
        database["request 0"] = (0.0, True)
    assert set_aside_if_damaged(str(path), logging.getLogger("test")) is None and warnings() == []


def test_an_empty_or_locked_use_cache_database_is_left_alone(tmp_path, warnings):
    import sqlite3

    from lm_eval_longmem.common.damaged_database import set_aside_if_damaged

    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")  # SQLite's empty database
    assert set_aside_if_damaged(str(empty), logging.getLogger("test")) is None
    locked = tmp_path / "locked.db"
    holder = sqlite3.connect(locked)
    holder.execute("CREATE TABLE t (x)")
    holder.commit()
    holder.execute("BEGIN EXCLUSIVE")  # another run writing it
    try:
        assert set_aside_if_damaged(str(locked), logging.getLogger("test")) is None
    finally:
        holder.rollback()
        holder.close()
    assert warnings() == [] and locked.exists() and empty.exists()
