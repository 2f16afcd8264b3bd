"""Finding a model's rotary embedding, and rotating already-rotated vectors to other positions.

RoPE rotations compose: R(a) R(b) = R(a + b). A query or key rotated at its own position m can
therefore be moved to any other position p by rotating it once more by p - m, with the model's
own inverse frequencies. This is how Self-Extend's grouped positions and LM-Infinite's clamped
distances reuse the rotated keys transformers already keeps in its KV cache.
"""

from __future__ import annotations

import torch

from lm_eval_longmem.models.rope.parameters import NotARopeModelError


def rotary_embeddings(model) -> list[torch.nn.Module]:
    """The model's rotary-embedding modules (those holding an `inv_freq` buffer; not CLEX's layer,
    whose `inv_freq` is the ODE's starting point, marked `not_a_rotary_embedding`)."""
    found = [
        m
        for m in model.modules()
        if isinstance(getattr(m, "inv_freq", None), torch.Tensor) and not getattr(m, "not_a_rotary_embedding", False)
    ]
    return found


def the_rotary_embedding(model, method_name: str) -> torch.nn.Module:
    found = rotary_embeddings(model)
    if not found:
        raise NotARopeModelError(
            f"method={method_name} needs a model with rotary position embeddings (RoPE); "
            f"{type(model).__name__} has no rotary embedding module."
        )
    if len(found) > 1:
        raise NotARopeModelError(
            f"method={method_name}: {type(model).__name__} has {len(found)} rotary embeddings "
            "(per-layer-type RoPE); the attention-changing methods support one."
        )
    return found[0]


def _frequency_buffers(module: torch.nn.Module) -> list[torch.Tensor]:
    """A rotary embedding's inverse-frequency buffers: `inv_freq`, or one per layer type (Gemma 3's
    `full_attention_inv_freq`, `sliding_attention_inv_freq`; not the `*_original_inv_freq` copies)."""
    return [
        buffer
        for name, buffer in module.named_buffers(recurse=False)
        if name.endswith("inv_freq") and not name.endswith("original_inv_freq")
    ]


def rebuild_rotary_embeddings(model, config, method_name: str) -> int:
    """Build every rotary embedding of a loaded `model` again from `config` (the model's own,
    after a method edited its `rope_parameters`), as loading the checkpoint with that config
    does: a new module of the same class, on the device of the old one (its buffers in float32,
    as loading computes them). Returns how many were rebuilt; refuses, rather than leaving one
    as it was, a rotary embedding that reads another config or cannot be built from it."""

    def refuse(why: str) -> NotARopeModelError:
        return NotARopeModelError(
            f"method={method_name} cannot change the already-loaded {type(model).__name__}: {why}. Pass the "
            "checkpoint's path as pretrained= instead, so the model is built with the method's config."
        )

    replaced: dict[int, torch.nn.Module] = {}
    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            frequencies = _frequency_buffers(child)
            if not frequencies:
                continue
            if id(child) not in replaced:
                if getattr(child, "config", None) is not config:
                    raise refuse(f"its {type(child).__name__} does not read the model's config")
                try:
                    fresh = type(child)(config=config)
                except Exception as err:  # noqa: BLE001 - one message, whatever the class refuses
                    raise refuse(f"{type(child).__name__} could not be built from the edited config ({err})") from err
                replaced[id(child)] = fresh.to(frequencies[0].device)
            setattr(parent, child_name, replaced[id(child)])
    if not replaced:
        raise refuse("it has no rotary embedding module to rebuild")
    return len(replaced)


def rotate_by(x: torch.Tensor, shift: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """Rotate x (batch, heads, length, head_dim) by `shift` positions (batch, length), in the
    rotate-half layout transformers' Llama-family models use; dims past the rotary part stay.
    `inv_freq`: [rot/2], or [batch, rot/2] for frequencies of each row's own (CLEX's per-sequence t)."""
    rot = 2 * inv_freq.shape[-1]
    frequencies = inv_freq.to(device=x.device, dtype=torch.float32)
    if frequencies.ndim == 2:
        frequencies = frequencies[:, None, :]
    angles = shift.to(torch.float32)[..., None] * frequencies
    angles = torch.cat((angles, angles), dim=-1)[:, None]  # (batch, 1, length, rot)
    cos, sin = angles.cos(), angles.sin()
    part = x[..., :rot].to(torch.float32)
    half = rot // 2
    rotated_half = torch.cat((-part[..., half:], part[..., :half]), dim=-1)
    out = (part * cos + rotated_half * sin).to(x.dtype)
    if rot == x.shape[-1]:
        return out
    return torch.cat((out, x[..., rot:]), dim=-1)
