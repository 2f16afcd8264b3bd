"""Hugging Face Hub access that fails fast offline, with a message that names the fix.

Without network the hub clients keep retrying for a long while before giving up (the wait is in
docs/benchmarks.md), and their final error does not say what to do. We check reachability once
(DNS + TCP, a few seconds at most) and, when the Hub cannot be reached, load from the local cache
only.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
from urllib.parse import urlparse

from lm_eval_longmem.errors import LongMemError, UsageError

_TRUE = {"1", "true", "yes", "on"}


class HubUnavailableError(LongMemError, RuntimeError):
    """A model or dataset must come from the Hub, which this machine cannot reach."""


class MissingLocalPathError(UsageError, FileNotFoundError):
    """A model or tokenizer named by a local path that does not exist (transformers would call
    it a malformed Hub id)."""


def offline_requested() -> bool:
    return any(
        os.environ.get(var, "").strip().lower() in _TRUE
        for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


@functools.lru_cache(maxsize=1)
def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hub endpoint answers a TCP connection (never True when offline is set)."""
    if offline_requested():
        return False
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    parsed = urlparse(endpoint)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def local_files_only():
    """Make `datasets`/`huggingface_hub` use the local cache only, for the duration."""
    import datasets.config
    import huggingface_hub.constants as hub_constants

    saved = (datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE)
    datasets.config.HF_HUB_OFFLINE = True
    hub_constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE = saved


def offline_context():
    """`local_files_only()` when the Hub is unreachable, else a no-op context."""
    return contextlib.nullcontext() if hub_reachable() else local_files_only()


def looks_like_hub_id(name: str) -> bool:
    return not os.path.exists(name) and name.count("/") <= 1 and not name.startswith((".", "/", "~"))


def require_existing_path(name) -> None:
    """A name that can only be a local path (it starts with `.`, `/` or `~`, or has more than one
    `/`) must exist."""
    if isinstance(name, str) and not os.path.exists(name) and not looks_like_hub_id(name):
        raise MissingLocalPathError(
            f"No such file or directory: {name!r}. A local model or tokenizer is a folder holding its "
            "config/tokenizer files (a training run's is <output_dir>/export); a Hub id has the form "
            "'namespace/name'."
        )


@contextlib.contextmanager
def loading_from_hub(name):
    """Load `name` (a Hub id or a local path) failing fast, with the fix, when offline.

    For a Hub id while the Hub is unreachable, only the local cache is used, and a miss
    becomes a `HubUnavailableError` that says what to do instead of a retry storm. A path that
    does not exist is a `MissingLocalPathError`.
    """
    require_existing_path(name)
    if not (isinstance(name, str) and looks_like_hub_id(name)) or hub_reachable():
        yield
        return
    try:
        with local_files_only():
            yield
    except OSError as err:
        raise HubUnavailableError(uncached_model_message(name)) from err


def uncached_model_message(name: str) -> str:
    return (
        f"{name!r} is not in the local Hugging Face cache and the Hub cannot be reached. Fix: run "
        f"once where the Hub is reachable (or `hf download {name}` there and copy "
        "~/.cache/huggingface), or pass pretrained=<local directory>; with no pretrained=, "
        "--model longmem uses its embedded default model."
    )
