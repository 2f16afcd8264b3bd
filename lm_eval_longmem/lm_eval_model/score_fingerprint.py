"""What computes a `LongMemLM`'s scores, as a JSON-able dict and a digest of it.

lm-eval's `--use_cache` keys each request by its arguments only, so a run of another model or
method would be served the scores of whichever run filled the cache first. The request cache
(request_cache.py) keeps one database per fingerprint instead, so this dict must change whenever
the numbers can: the weights, the method and its resolved typed arguments (a checkpoint's
recorded ones included), dtype, the context limits, the over-length policy and every other
loading argument. Arguments that only place or batch the work (device, batch size, offloading,
Hub credentials) are left out, so they do not split the cache; an argument we do not know
counts, to be safe.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

FINGERPRINT_VERSION = 1
# Loading arguments that place, batch or authenticate the work but leave the numbers alone.
PLACEMENT_ARGUMENTS = frozenset(
    {
        "batch_size",
        "max_batch_size",
        "device",
        "parallelize",
        "device_map",
        "tp_plan",
        "max_memory_per_gpu",
        "max_cpu_memory",
        "offload_folder",
        "offload_state_dict",
        "low_cpu_mem_usage",
        "cache_dir",
        "local_files_only",
        "token",
    }
)
# Recorded in their resolved form below, not as spelled in --model_args.
RESOLVED_ARGUMENTS = frozenset({"pretrained", "revision", "subfolder", "dtype", "max_length"})
# Loading arguments that name more weights or files: identified like the model itself.
SOURCE_ARGUMENTS = ("peft", "delta", "tokenizer")


def score_fingerprint(lm) -> dict[str, Any]:
    """Everything that decides the scores `lm` (a built `LongMemLM`) returns for a request."""
    from lm_eval_longmem import __version__
    from lm_eval_longmem.models.checkpoint.context_length import hard_input_limit

    loading = dict(getattr(lm, "loading_args", {}))
    cache_dir = loading.get("cache_dir")
    described = lm.longmem_method.describe()
    extra = {
        key: source_identity(value, cache_dir=cache_dir) if key in SOURCE_ARGUMENTS else value
        for key, value in sorted(loading.items())
        if key not in PLACEMENT_ARGUMENTS | RESOLVED_ARGUMENTS and value is not None
    }
    fingerprint = {
        "fingerprint_version": FINGERPRINT_VERSION,
        "lm_eval_longmem": __version__,
        "model": source_identity(
            lm.pretrained, revision=lm.revision, subfolder=loading.get("subfolder") or "", cache_dir=cache_dir
        ),
        "method": described["method"],
        "method_args": described["args"],
        "dtype": str(lm.model.dtype),
        "context_length": lm.max_length,
        "hard_input_limit": hard_input_limit(lm.config, lm.longmem_method, lm._max_length),
        "reuse_prefix": lm.reuse_prefix,
        "config_overrides": dict(sorted(lm._config_overrides.items())),
        "loading_args": extra,
    }
    policy = getattr(lm, "overlength", "refuse")
    if policy != "refuse":  # cut inputs score differently; refuse (the default) keeps older databases' digests
        fingerprint["overlength"] = policy
    return fingerprint


def fingerprint_digest(fingerprint: dict[str, Any], length: int = 12) -> str:
    """A short, stable hex digest of a fingerprint (the order of its keys does not matter)."""
    text = json.dumps(fingerprint, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def source_identity(source, revision: str | None = None, subfolder: str = "", cache_dir=None) -> dict[str, Any] | Any:
    """The identity of weights (or a tokenizer) given as a local folder, a Hub id or a loaded model.

    A folder: its resolved path plus each file's size and modification time (cheap, and a rewrite
    of any file changes it). A Hub id: the snapshot commit the local cache resolves `revision`
    to. A loaded model: a hash of its weights, the only identity it has.
    """
    if source is None or isinstance(source, (bool, int, float)):
        return source
    if not isinstance(source, (str, os.PathLike)):
        if hasattr(source, "state_dict"):
            return {"object": type(source).__name__, "weights_sha256": _weights_digest(source)}
        return {"object": type(source).__name__, "name_or_path": getattr(source, "name_or_path", None)}
    path = Path(os.path.expanduser(str(source)))
    if path.exists():
        identity = {"path": str(path.resolve()), "files": _file_stats(path)}
        if subfolder:
            identity["subfolder"] = {"name": subfolder, "files": _file_stats(path / subfolder)}
        return identity
    commit = _hub_commit(str(source), revision, subfolder, cache_dir)
    return {"hub_id": str(source), "revision": revision, "subfolder": subfolder, "commit": commit}


def _file_stats(path: Path) -> dict[str, list[int]]:
    """name -> [size, mtime_ns] of the regular files directly in `path` (or of `path` itself)."""
    if path.is_file():
        stat = path.stat()
        return {path.name: [stat.st_size, stat.st_mtime_ns]}
    if not path.is_dir():
        return {}
    stats = {}
    for entry in sorted(os.scandir(path), key=lambda e: e.name):
        if entry.is_file():
            stat = entry.stat()
            stats[entry.name] = [stat.st_size, stat.st_mtime_ns]
    return stats


def _hub_commit(repo_id: str, revision: str | None, subfolder: str, cache_dir) -> str | None:
    """The snapshot commit the local Hub cache holds for `revision` (None when not cached):
    the name of the `snapshots/<commit>` folder its config.json lies in."""
    from huggingface_hub import try_to_load_from_cache

    config = f"{subfolder.strip('/')}/config.json" if subfolder else "config.json"
    try:
        found = try_to_load_from_cache(repo_id, config, cache_dir=cache_dir, revision=revision)
    except Exception:  # noqa: BLE001  (a malformed id or cache: no commit to record)
        return None
    if not isinstance(found, str):
        return None
    snapshot = Path(found).parent
    for _ in Path(config).parts[:-1]:
        snapshot = snapshot.parent
    return snapshot.name


def _weights_digest(model) -> str:
    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype}".encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()
