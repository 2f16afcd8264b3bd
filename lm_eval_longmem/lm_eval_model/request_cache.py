"""`--use_cache` for `--model longmem`: one database per model, method and arguments.

lm-eval's `CachingLM` keys a cached score by the request alone (`<use_cache>_rank<N>.db`), so a
streamingllm run given the cache of a vanilla run would report vanilla's scores as its own. For a
`longmem` model we move the database next to the one asked for, named after what computes the
scores (score_fingerprint.py):

    <use_cache>_rank0.db                                        --model hf and any other model
    <use_cache>_longmem__<model>__<method>__<digest>_rank0.db    one per fingerprint
    <use_cache>_longmem__<model>__<method>__<digest>.json        that fingerprint, to read

So one `--use_cache` path serves every method, and rerunning a command resumes from its own
entries only (a database SQLite finds damaged is set aside first: damaged_database.py).
lm-eval hands the path to `CachingLM` and never to the model, so we wrap `CachingLM.__init__`;
any other model keeps lm-eval's path untouched. `LongMemLM` installs the
wrapper when it is built, which is always before lm-eval wraps it, so the `lm_eval` command,
`lm-eval-longmem` and the Python API (with or without `register()`) all get it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys

from lm_eval_longmem.common.atomic_files import warn_rebuilding, write_json
from lm_eval_longmem.common.damaged_database import set_aside_if_damaged
from lm_eval_longmem.common.wrap_once import wrap_once

# A child of lm-eval's logger: the message shows where lm-eval's own "Using cache at" line would
# (that line names the path we replace, and is dropped: _DropLmEvalCachePath), in its format and
# at its --verbosity.
logger = logging.getLogger("lm_eval.longmem.request_cache")

_WRAPPED_MARKER = "__lm_eval_longmem_wrapped__"
_RANK_TAIL = re.compile(r"(_rank\d+)?(\.db)?$")
_LONGMEM_MODULE = "lm_eval_longmem.lm_eval_model.longmem"


def is_longmem(lm) -> bool:
    """Whether `lm` is our model (without importing it: if it was never imported, it is not)."""
    module = sys.modules.get(_LONGMEM_MODULE)
    return module is not None and isinstance(lm, module.LongMemLM)


def bound_cache_path(cache_db: str, label: str, digest: str) -> tuple[str, str]:
    """(database path, fingerprint file path) for the fingerprint `digest`, beside `cache_db`.

    lm-eval's `_rank<N>.db` ending is kept last, so every rank still has its own file.
    """
    tail = _RANK_TAIL.search(cache_db)
    stem, rank, extension = cache_db[: tail.start()], tail.group(1) or "", tail.group(2) or ""
    base = f"{stem}_longmem__{label}__{digest}"
    return f"{base}{rank}{extension or '.db'}", f"{base}.json"


def own_cache_path(lm, cache_db: str) -> str:
    """The database `lm`'s scores go to and come from: `cache_db` itself for any model but ours."""
    if not is_longmem(lm):
        return cache_db
    from lm_eval_longmem.harness.run_name import SEPARATOR, model_label
    from lm_eval_longmem.lm_eval_model.score_fingerprint import fingerprint_digest, score_fingerprint
    from lm_eval_longmem.models.checkpoint.source_name import source_name

    fingerprint = score_fingerprint(lm)
    loading = getattr(lm, "loading_args", {})
    pretrained = source_name(lm.pretrained)
    model = model_label(
        {
            "pretrained": None if lm.uses_default_model else str(pretrained),
            **{k: loading.get(k) for k in ("peft", "delta")},
        }
    )
    label = f"{model}{SEPARATOR}{lm.longmem_method.name}"
    path, described_in = bound_cache_path(cache_db, label, fingerprint_digest(fingerprint))
    lm.cache_database = path  # the results record it: lm-eval's config.use_cache is the path as typed
    _write_fingerprint(described_in, fingerprint)
    set_aside_if_damaged(path, logger)
    shared = ""
    if os.path.exists(cache_db):  # e.g. filled by --model hf: it does not record what computed its scores
        shared = f" {cache_db} is not read: it does not record which model and method computed its scores."
    logger.info(
        "--use_cache with --model longmem: this model and method's requests go to %s (what computes "
        "their scores: %s). Rerun the same command to resume from it; another model, method, method "
        "argument, dtype or max_length gets a database of its own.%s",
        path,
        described_in,
        shared,
    )
    return path


def _write_fingerprint(path: str, fingerprint: dict) -> None:
    """Write the fingerprint beside its database (whole: ranks may write it together); one that
    is there but unreadable or not this fingerprint is written again after a warning."""
    wanted = json.loads(json.dumps(fingerprint, sort_keys=True, default=str))
    try:
        with open(path, encoding="utf-8") as handle:
            if json.load(handle) == wanted:
                return
        warn_rebuilding(path, "it describes another fingerprint than its name says", logger)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as err:
        warn_rebuilding(path, f"not readable JSON: {err}", logger)
    write_json(path, wanted, sort_keys=True)


def install() -> bool:
    """Wrap lm-eval's `CachingLM.__init__` so a longmem model gets its own database. Idempotent."""
    from lm_eval.api.model import CachingLM

    if not wrap_once(CachingLM, "__init__", _with_own_database, _WRAPPED_MARKER):
        return False
    logging.getLogger("lm_eval.evaluator").addFilter(_DropLmEvalCachePath())
    return True


def _with_own_database(original):
    def __init__(self, lm, cache_db, *args, **kwargs):
        original(self, lm, own_cache_path(lm, cache_db), *args, **kwargs)

    return __init__


class _DropLmEvalCachePath(logging.Filter):
    """lm-eval's "Using cache at <use_cache>_rank0.db" names a file a longmem run never makes: the
    line above (own_cache_path) names the one it uses. Installed when a LongMemLM is built, which
    lm-eval does just before it logs that line."""

    def filter(self, record: logging.LogRecord) -> bool:
        from lm_eval_longmem.errors import debugging

        return debugging() or not str(record.msg).startswith("Using cache at ")
