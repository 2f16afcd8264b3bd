"""CLEX's settings as its checkpoints write them in config.json (read without importing torch).

The authors' checkpoints carry

    "rope_scaling": {"type": "clex", "max_factor": 16, "param_factor": 1, "act": "silu",
                     "time_dt": 0.01, "factor": 1},
    "log_scale": true,

with `max_position_embeddings` left at the base length C. transformers 5 moves `rope_scaling`
into `rope_parameters` (with `rope_type` "clex") and keeps the keys, but has no "clex" rope type
to build; `method=clex` turns the config back into plain RoPE and applies the ODE itself.
"""

from __future__ import annotations

from typing import Any

ROPE_TYPE = "clex"
SETTINGS = ("max_factor", "param_factor", "act", "time_dt")
LOG_SCALE_KEY = "log_scale"


def clex_rope_settings(config: Any) -> dict[str, Any] | None:
    """The CLEX entries of a config (a config object or a config.json dict), or None if it is not CLEX."""
    read = config.get if isinstance(config, dict) else lambda key, default=None: getattr(config, key, default)
    for key in ("rope_parameters", "rope_scaling"):
        params = read(key, None)
        if isinstance(params, dict) and ROPE_TYPE in (params.get("rope_type"), params.get("type")):
            found = {name: params[name] for name in SETTINGS if params.get(name) is not None}
            if read(LOG_SCALE_KEY, None) is not None:
                found[LOG_SCALE_KEY] = bool(read(LOG_SCALE_KEY, None))
            return found
    return None


def clex_rope_scaling(max_factor: int, param_factor: int, act: str, time_dt: float) -> dict[str, Any]:
    """The `rope_scaling` entry the authors' code reads (their `factor` is always 1)."""
    return {
        "type": ROPE_TYPE,
        "max_factor": max_factor,
        "param_factor": param_factor,
        "act": act,
        "time_dt": time_dt,
        "factor": 1,
    }
