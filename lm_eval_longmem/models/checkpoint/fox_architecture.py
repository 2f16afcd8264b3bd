"""Which FoX-family architecture a checkpoint is, named the FoX paper's way.

One method, `fox`, runs every FoX-family checkpoint as trained. The paper, though, compares
architectures that differ only in config switches: FoX against the Transformer (forget gate
off, RoPE on), each as "LLaMA" (plain blocks) or "Pro" (output gate, output norm, QK-norm,
KV-shift). So that a results file, a run folder, a leaderboard row and a figure legend never
show a Transformer baseline as plain `fox`, all of them name a checkpoint by the same rule:

    architecture=<family>-<design>      fox-pro, fox-llama, transformer-pro, transformer-llama

(the released checkpoints' names), followed by each switch that differs from that named
variant, e.g. `architecture=fox-pro, fgate_type=bias_only`.

Reads config objects, config.json dicts (which leave out values equal to their class's
defaults) and the switches the `fox` method records in results (`longmem_method_args`) alike.
No imports beyond the standard library, so reports can use it without torch.
"""

from __future__ import annotations

from typing import Any

ARCHITECTURE_KEY = "architecture"
TRANSFORMER_MODEL_TYPE = "transformer-project_fox"
FOX_MODEL_TYPES = ("forgetting_transformer-project_fox", TRANSFORMER_MODEL_TYPE)
PRO_SWITCHES = ("use_output_gate", "use_output_norm", "qk_norm", "use_k_shift", "use_v_shift")
# What makes each family, as in the official configs (and configuration_fox.py's defaults).
FAMILIES = {
    "fox": {"fgate_type": "full", "use_rope": False},
    "transformer": {"fgate_type": "none", "use_rope": True},
}
SWITCHES = ("fgate_type", "use_rope", *PRO_SWITCHES)


def architecture_switches(config: Any) -> dict[str, Any] | None:
    """The switches that tell FoX-family variants apart, with the config class's defaults for
    the ones not written; None when `config` records no FoX-family architecture at all."""
    record = (
        config
        if isinstance(config, dict)
        else {key: getattr(config, key) for key in ("model_type", *SWITCHES) if hasattr(config, key)}
    )
    model_type = record.get("model_type")
    if model_type not in FOX_MODEL_TYPES and not any(key in record for key in SWITCHES):
        return None
    family = "transformer" if model_type == TRANSFORMER_MODEL_TYPE else "fox"
    defaults = {**FAMILIES[family], **{key: False for key in PRO_SWITCHES}}
    return {key: _plain(record.get(key, defaults[key])) for key in SWITCHES}


def architecture_arguments(config: Any) -> dict[str, Any]:
    """{"architecture": "transformer-pro", <switch>: <value> for each switch that differs from
    that variant}; {} when `config` is not FoX-family."""
    switches = architecture_switches(config)
    if switches is None:
        return {}
    family = "transformer" if switches["fgate_type"] == "none" else "fox"
    design = "pro" if 2 * sum(bool(switches[key]) for key in PRO_SWITCHES) > len(PRO_SWITCHES) else "llama"
    reference = {**FAMILIES[family], **{key: design == "pro" for key in PRO_SWITCHES}}
    differing = {key: value for key, value in switches.items() if value != reference[key]}
    return {ARCHITECTURE_KEY: f"{family}-{design}", **differing}


def _plain(value: Any) -> Any:
    """ "true"/"false" (a value read back as text) as the booleans they are."""
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value
