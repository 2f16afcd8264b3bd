"""`kvpress`: any press of NVIDIA's kvpress library, through our tasks and on our leaderboard.

`--model_args method=kvpress,press=snapkv,compression_ratio=0.75,window_size=64`: `press=` names
the press (models/kv_presses/catalogue.py lists them, from kvpress itself), and the press's own
dataclass fields are this method's other arguments, typed and defaulted as kvpress declares
them. A press that wraps another takes `inner=NAME` and the inner press's fields too.

How it runs (models/kv_presses/): a request's context, less its last token, is prefilled under
the press and compressed once, as kvpress compresses a context; scoring and decoding then read
the compressed cache. Decoding presses also compress while tokens are generated. kvpress is an
optional extra: without it this method says which one to install.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from dataclasses import dataclass, field
from typing import Any

from lm_eval_longmem.common.suggestions import did_you_mean
from lm_eval_longmem.errors import LongMemError
from lm_eval_longmem.models.method_framework.arguments import MethodArgumentError, describe_fields
from lm_eval_longmem.models.method_framework.base import LongMemMethod
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings

logger = logging.getLogger(__name__)

NAME = "kvpress"
PRESS_HELP = "the kvpress press to apply (`lm-eval-longmem methods kvpress` lists them with their arguments)"
INNER_HELP = "the press this one wraps (a press of its own with its own arguments), e.g. inner=snapkv"


@dataclass(frozen=True)
class PressChoice:
    """The arguments every press shares; each press adds its own (`arguments_class`)."""

    press: str = field(metadata={"help": PRESS_HELP})


class KVPressMethod(LongMemMethod):
    name = NAME
    summary = (
        "a KV-cache compression press of NVIDIA's kvpress (SnapKV, TOVA, Expected Attention, KNorm, "
        "PyramidKV, ...): each request's context compressed once after its prefill (extra: kvpress)"
    )
    paper = "the presses' own papers, via kvpress"
    docs_page = "methods/kvpress.md"
    more_arguments = (
        (
            "inner",
            "none",
            "for a press that wraps another (`adakv`, `chunkkv`, `key_rerotation`, `decoding`, `block`, `chunk`, "
            "`critical_adakv`, `dms`, ...): the wrapped press",
        ),
        (
            "the press's fields",
            "kvpress's",
            "typed from the press's dataclass (`compression_ratio`, `window_size`, `n_sink`, ...), with kvpress's "
            "defaults; a wrapper's own fields first, then the inner press's",
        ),
    )
    # neutral: nothing pressed
    tiny_settings = TinySettings(
        acting={"press": "knorm", "compression_ratio": 0.5}, neutral={"press": "knorm", "compression_ratio": 0.0}
    )
    Args = PressChoice
    prefix_cache_reusable = False  # the kept entries depend on the whole context

    @classmethod
    def arguments_class(cls, raw_args: dict[str, Any]) -> type:
        press = raw_args.get("press")
        if press is None:
            raise MethodArgumentError(
                f"method={NAME} needs press=NAME: one of {', '.join(_buildable())} (`lm-eval-longmem methods {NAME}` "
                "lists each with its arguments)."
            )
        inner = raw_args.get("inner")
        return _arguments_class(str(press), None if inner is None else str(inner))

    @classmethod
    def describe_arguments(cls, detailed: bool = False) -> list[str]:
        from lm_eval_longmem.models.kv_presses.catalogue import KVPressMissingError, presses

        try:
            specs = presses()
        except KVPressMissingError as err:
            return [f"press: str  ({PRESS_HELP}); {err}"]
        if not detailed:
            return [
                f"press: one of {', '.join(_buildable())}",
                f"plus that press's own arguments (`lm-eval-longmem methods {NAME}` lists them)",
            ]
        lines = []
        for spec in specs.values():
            lines.append(
                f"press={spec.name}: {spec.summary}"
                + (f"  [not available: {spec.unsupported}]" if spec.unsupported else "")
            )
            if spec.unsupported:
                continue
            if spec.inner_field:
                lines.append(f"    inner: str{'' if spec.inner_required else ' | None'}  ({INNER_HELP})")
            lines.extend(
                f"    {line}"
                for line in describe_fields(_arguments_class(spec.name, None, for_listing=True))
                if not line.startswith(("press:", "inner:"))
            )
        return lines

    def __init__(self, args: Any = None):
        super().__init__(args)
        self.make_press()  # kvpress's own checks (e.g. a compression_ratio outside [0, 1)) fail now, with our message

    def make_press(self):
        """A fresh press (presses keep per-sequence state: one per sequence)."""
        from lm_eval_longmem.models.kv_presses.catalogue import presses

        values = dataclasses.asdict(self.args)
        spec = presses()[values.pop("press")]
        inner_name = values.pop("inner", None)
        own_names = {a.name for a in spec.arguments}
        own = {k: _kvpress_value(v) for k, v in values.items() if k in own_names}
        try:
            if inner_name is not None:
                inner_spec = presses()[inner_name]
                inner_values = {
                    k: _kvpress_value(v)
                    for k, v in values.items()
                    if k not in own_names and k in {a.name for a in inner_spec.arguments}
                }
                own[spec.inner_field] = inner_spec.cls(**inner_values)
            return spec.cls(**own)
        except (AssertionError, ValueError, TypeError) as err:
            raise MethodArgumentError(
                f"method={NAME},press={spec.name}: kvpress refused these arguments: {err or type(err).__name__}"
            ) from None

    def prepare_model(self, model):
        model.requires_grad_(False)
        press = self.make_press()
        if _needs_attention_weights(press) and getattr(model.config, "_attn_implementation", None) != "eager":
            raise LongMemError(
                f"press={self.args.press} reads the attention weights, which only eager attention returns: add "
                "attn_implementation=eager to --model_args."
            )
        try:
            press.post_init_from_model(model)  # presses that load data for this model (e.g. head patterns) do it now
        except LongMemError:
            raise
        except Exception as err:  # noqa: BLE001 - kvpress's own failure, said in one message
            raise LongMemError(f"press={self.args.press} could not prepare itself for this model: {err}") from None
        return model

    def make_scorer(self, model):
        from lm_eval_longmem.models.runtime.piecewise_scoring import StreamingScorer

        return StreamingScorer(model, self._sequence_factory(model), f"kvpress:{self.args.press}")

    def make_generator(self, model, tokenizer):
        from lm_eval_longmem.models.runtime.stepwise_decoding import StreamingGenerator

        return StreamingGenerator(self._sequence_factory(model), "kvpress", tokenizer)

    def _sequence_factory(self, model):
        """A fresh cache and press per request; a piece's logits stay within the scoring budget."""
        from lm_eval_longmem.models.kv_presses.pressed_sequence import PressedSequence
        from lm_eval_longmem.models.runtime.scoring import CHUNK_BYTES

        piece = CHUNK_BYTES // (4 * model.get_output_embeddings().weight.shape[0])
        return lambda: PressedSequence(model, self.make_press(), piece)


def _buildable() -> list[str]:
    from lm_eval_longmem.models.kv_presses.catalogue import presses

    return [name for name, spec in presses().items() if not spec.unsupported]


@functools.cache
def _arguments_class(press: str, inner: str | None, for_listing: bool = False) -> type:
    """The Args dataclass of `press` (wrapping `inner`): press, inner, then the press's fields
    and the inner press's (required ones first, as dataclasses want)."""
    from lm_eval_longmem.models.kv_presses.catalogue import presses

    specs = presses()
    spec = _known(press, specs, "press")
    if spec.unsupported:
        raise MethodArgumentError(
            f"method={NAME}: press={press} cannot be built from --model_args: {spec.unsupported}."
        )
    if inner is not None and spec.inner_field is None:
        raise MethodArgumentError(f"method={NAME}: press={press} wraps no other press, so inner= does not apply.")
    arguments = list(spec.arguments)
    if spec.inner_field is not None and not for_listing:
        if inner is None and spec.inner_required:
            raise MethodArgumentError(
                f"method={NAME}: press={press} wraps another press: add inner=NAME (e.g. inner=snapkv; "
                f"`lm-eval-longmem methods {NAME}` lists the presses)."
            )
        if inner is not None:
            taken = {a.name for a in arguments}
            arguments += [a for a in _known(inner, specs, "inner").arguments if a.name not in taken]
    required = [
        (a.name, a.annotation, field(metadata={"help": a.help})) for a in arguments if a.default is dataclasses.MISSING
    ]
    optional = [
        (a.name, a.annotation, field(default=a.default, metadata={"help": a.help}))
        for a in arguments
        if a.default is not dataclasses.MISSING
    ]
    inner_field = (
        [("inner", str | None, field(default=None, metadata={"help": INNER_HELP}))] if spec.inner_field else []
    )
    fields = [("press", str, field(metadata={"help": PRESS_HELP})), *required, *inner_field, *optional]
    suffix = press + (f"_{inner}" if inner else "")
    return dataclasses.make_dataclass(f"KVPressArgs_{suffix}", fields, frozen=True)


def _known(name: str, specs: dict, role: str):
    if name not in specs:
        hint = did_you_mean(name, list(specs), form=f"{role}={{}}")
        raise MethodArgumentError(
            f"method={NAME}: unknown {role}={name!r}.{hint} "
            f"Presses: {', '.join(n for n, s in specs.items() if not s.unsupported)} "
            f"(`lm-eval-longmem methods {NAME}` lists each with its arguments)."
        )
    return specs[name]


def _kvpress_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _needs_attention_weights(press) -> bool:
    from kvpress import ObservedAttentionPress

    inner = getattr(press, "press", None) or getattr(press, "base_press", None)
    return isinstance(press, ObservedAttentionPress) or isinstance(inner, ObservedAttentionPress)
