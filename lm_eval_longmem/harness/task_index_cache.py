"""A disk cache of lm-eval's built-in task YAMLs, so that `lm_eval` does not re-parse ~14,000
files on every start.

lm-eval 0.4.13 builds its task index (`TaskIndex.build`) by loading every YAML under its own
`lm_eval/tasks/` folder, includes resolved, each time a `TaskManager` is made: seconds of CPU
per `lm_eval` call (docs/benchmarks.md), before any model loads. Those files only change when
lm-eval is reinstalled. We keep what the index loader returned for them (the parsed mappings,
`!function` left as text as the indexer asks) in one file per lm-eval version, keyed by the path,
size and modification time of every YAML in that folder: an edit, an added file or another
lm-eval install is a miss and is parsed again. Task folders outside lm-eval (ours, a
user's `--include_path`) are never cached: their includes may point anywhere.

Only the indexer's own calls are served (`resolve_func=False`, top-level); building a task
still loads its YAML through lm-eval, functions resolved. Set LM_EVAL_LONGMEM_TASK_INDEX_CACHE=0
to switch the cache off. The file is written whole (atomic_files.py); one that does not load is
rebuilt after a warning.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import pickle
from pathlib import Path

from lm_eval_longmem.common.atomic_files import atomic_write, warn_rebuilding

logger = logging.getLogger(__name__)

OPT_OUT_ENV = "LM_EVAL_LONGMEM_TASK_INDEX_CACHE"
_MARKER = "__lm_eval_longmem_index_cache__"
_FORMAT = "1"  # bump when what is stored changes
KEEP_FILES = 4  # most recently used cache files kept (one per lm-eval install in use; ~16 MB each)


def enabled() -> bool:
    return os.environ.get(OPT_OUT_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def builtin_tasks_dir() -> Path:
    import lm_eval.tasks

    return Path(lm_eval.tasks.__file__).parent  # as lm-eval's TaskManager names it


def fingerprint(folder: Path) -> str:
    """A digest of every YAML's relative path, size and mtime below `folder`."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".yaml", ".yml")):
                stat = os.stat(os.path.join(root, name))
                relative = os.path.relpath(os.path.join(root, name), folder)
                digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:24]


class ParsedYamlStore:
    """path -> pickled mapping, for the YAMLs of one folder at one fingerprint."""

    def __init__(self, folder: Path, cache_file: Path):
        self.folder = str(folder) + os.sep
        self.cache_file = cache_file
        self.entries: dict[str, bytes] = {}
        self.added = 0
        try:
            with cache_file.open("rb") as fh:
                entries = pickle.load(fh)
        except FileNotFoundError:
            return
        except Exception as err:  # noqa: BLE001 - a damaged cache is rebuilt, never fatal
            warn_rebuilding(cache_file, f"not a whole pickle: {type(err).__name__}: {err}", logger)
            return
        if not isinstance(entries, dict) or not all(
            isinstance(k, str) and isinstance(v, bytes) for k, v in entries.items()
        ):
            warn_rebuilding(cache_file, "not a mapping of paths to parsed YAML", logger)
            return
        self.entries = entries
        os.utime(cache_file)  # recently used: kept when older files are pruned

    def covers(self, path: str) -> bool:
        return path.startswith(self.folder)

    def get(self, path: str):
        """The stored mapping, or None (parsed again) when there is none or it does not unpickle."""
        blob = self.entries.get(path)
        if blob is None:
            return None
        try:
            return pickle.loads(blob)
        except Exception as err:  # noqa: BLE001 - one damaged entry: that YAML is parsed again
            logger.debug("task index cache entry for %s is unreadable (%s); parsing it again", path, err)
            return None

    def put(self, path: str, cfg) -> None:
        try:
            self.entries[path] = pickle.dumps(cfg, protocol=pickle.HIGHEST_PROTOCOL)
            self.added += 1
        except Exception:  # noqa: BLE001 - something not picklable: parsed again next time
            pass

    def save(self) -> None:
        if not self.added:
            return
        with atomic_write(self.cache_file) as fh:
            pickle.dump(self.entries, fh, protocol=pickle.HIGHEST_PROTOCOL)
        self.added = 0
        prune(self.cache_file.parent, KEEP_FILES)


def prune(folder: Path, keep: int) -> None:
    """Delete all but the `keep` most recently used cache files (other installs, edited trees)."""
    files = sorted(folder.glob("lm_eval-*.pickle"), key=lambda f: f.stat().st_mtime, reverse=True)
    for old in files[keep:]:
        old.unlink(missing_ok=True)


def open_store() -> ParsedYamlStore:
    import lm_eval

    from lm_eval_longmem.common.paths import cache_dir

    folder = builtin_tasks_dir()
    version = getattr(lm_eval, "__version__", "unknown")
    name = f"lm_eval-{version}-{fingerprint(folder)}-v{_FORMAT}.pickle"
    return ParsedYamlStore(folder, cache_dir("task_index") / name)


def install(index_module=None) -> bool:
    """Serve lm-eval's task indexer from the cache. Idempotent; False when switched off."""
    if not enabled():
        return False
    if index_module is None:
        import lm_eval.tasks._index as index_module
    original_load = getattr(index_module, "load_yaml", None)
    index_class = getattr(index_module, "TaskIndex", None)
    original_build = getattr(index_class, "__dict__", {}).get("build")
    if original_load is None or not isinstance(original_build, staticmethod):
        return False  # another lm-eval layout: leave it alone
    if getattr(original_load, _MARKER, False):
        return False
    build = original_build.__func__
    state = {"store": None}

    @functools.wraps(original_load)
    def load_yaml(path, *args, resolve_func=True, recursive=True, _seen=None, **kwargs):
        store = state["store"]
        eligible = store is not None and not resolve_func and recursive and _seen is None and not args and not kwargs
        key = str(path) if eligible else ""  # the indexer's own path; resolving 14k paths is slow
        if eligible and store.covers(key):
            cached = store.get(key)
            if cached is not None:
                return cached
            cfg = original_load(path, resolve_func=resolve_func, recursive=recursive)
            store.put(key, cfg)  # pickled now, before the indexer edits the mapping
            return cfg
        return original_load(path, *args, resolve_func=resolve_func, recursive=recursive, _seen=_seen, **kwargs)

    @functools.wraps(build)
    def cached_build(*args, **kwargs):
        try:
            state["store"] = open_store()
        except Exception as err:  # noqa: BLE001 - no cache is slower, never wrong
            logger.debug("task index cache unavailable: %s", err)
            state["store"] = None
        try:
            return build(*args, **kwargs)
        finally:
            store, state["store"] = state["store"], None
            if store is not None:
                try:
                    store.save()
                except OSError as err:
                    logger.debug("could not write the task index cache: %s", err)

    setattr(load_yaml, _MARKER, True)
    index_module.load_yaml = load_yaml
    index_class.build = staticmethod(cached_build)
    return True
