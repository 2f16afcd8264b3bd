"""A `--use_cache` database that SQLite cannot read is set aside, not a traceback.

SQLite keeps a database whole through SIGKILL and power loss (lm-eval commits each scored
request), but a file cut short by a full disk or a bad copy, or overwritten, made lm-eval stop
with "sqlite3.DatabaseError: database disk image is malformed" before scoring anything. For our
model's databases (request_cache.py) such a file, with its journal, is renamed
`<name>.damaged-<time>` (kept for inspection) after one warning, and the run starts a new one:
its requests are scored again. A database another process holds locked is left alone.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time

from lm_eval_longmem.common.atomic_files import warn_rebuilding

_SIDE_FILES = ("-journal", "-wal", "-shm")  # belong to the database: a stale journal would corrupt a new one


def set_aside_if_damaged(path: str, log: logging.Logger) -> str | None:
    """Rename the database at `path` aside when SQLite finds it damaged; the new name, or None."""
    problem = database_problem(path)
    if problem is None:
        return None
    aside = f"{path}.damaged-{time.strftime('%Y%m%dT%H%M%S')}"
    warn_rebuilding(path, f"{problem}; kept as {aside}, its requests are scored again", log)
    for suffix in ("", *_SIDE_FILES):
        if os.path.exists(path + suffix):
            os.replace(path + suffix, aside + suffix)
    return aside


def database_problem(path: str) -> str | None:
    """SQLite's complaint about the database at `path` (None: fine, absent, or in use)."""
    if not os.path.isfile(path):
        return None
    try:
        # read-write, as lm-eval opens it: a journal left by a killed run is rolled back first
        connection = sqlite3.connect(path, timeout=1)
        try:
            verdict = [row[0] for row in connection.execute("PRAGMA quick_check")]
        finally:
            connection.close()
    except sqlite3.OperationalError:
        return None  # locked by a run writing it, or unreadable to us: lm-eval reports that itself
    except sqlite3.DatabaseError as err:  # "file is not a database", "database disk image is malformed"
        return str(err)
    return None if verdict == ["ok"] else "; ".join(verdict[:3])
