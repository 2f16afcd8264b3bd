"""A training recipe: every key a YAML recipe (or a `key=value` override) may set, with its type,
its default and what it does. The keys every approach reads are declared here; the keys only one
approach reads are declared beside it (its `Keys` in approaches/). `recipe_class` merges them all
into one flat dataclass, `Recipe`, so that recipe files, overrides, `--help`, the unknown-key
message, the resume fingerprint and the recorded run read one flat set of keys whichever
approach declares them; `section` groups the keys in the listing."""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any, Literal

from ..approaches import approach_names, available_approaches
from .key import key
from .key_checks import (
    AT_LEAST_ONE,
    BELOW_ONE,
    NON_NEGATIVE,
    NOT_EMPTY,
    POSITIVE,
    OneOf,
    Range,
)

# Keys that steer a run without changing what it computes: a checkpoint resumes under new values.
RUN_CONTROL_KEYS = frozenset(
    {
        "output_dir",
        "max_steps",
        "save_every",
        "keep_checkpoints",
        "log_every",
        "log_with",
        "resume",
        "stop_after_steps",
        "export",
        "progress_bar",
    }
)


@dataclasses.dataclass
class SharedKeys:
    """What is trained, on which data, optimized how: the keys every approach reads (listed first)."""

    # --- what is trained ------------------------------------------------------------------
    name: str = key("", "recipe name (default: the YAML file's name); recorded in the export", "model", NOT_EMPTY)
    approach: str = key(
        "rope_extension",
        "how the model is trained (Approaches above); the keys only one approach reads are in its own section",
        "model",
        OneOf(approach_names),
    )
    model: str = key(
        "default", "base model: a local directory or Hub id; `default` is the embedded SmolLM2-135M", "model", NOT_EMPTY
    )
    tokenizer: str = key("", "tokenizer (default: the model's)", "model")
    model_config: dict = key(
        {}, "config fields set on the base config (from_scratch: the whole architecture, with model_type)", "model"
    )
    method: str = key(
        "",
        "long-memory method applied while training and recorded in the export (pi, ntk, yarn, fox, infini, ...)",
        "model",
    )
    method_args: dict = key({}, "that method's arguments (override one as method_args.factor=8)", "model")

    # --- data ----------------------------------------------------------------------------
    data: str = key(
        "auto",
        "text: auto (PG-19 if loadable, else Shakespeare), pg19, shakespeare, a local "
        "text file or folder, or a `datasets` Hub id",
        "data",
        NOT_EMPTY,
    )
    data_config: str = key("", "Hub dataset configuration name", "data")
    data_split: str = key("train", "Hub dataset split", "data", NOT_EMPTY)
    text_column: str = key("text", "Hub dataset column holding the text", "data", NOT_EMPTY)
    data_max_tokens: int = key(
        0, "tokens to read from a Hub dataset (streamed); 0: what the run needs", "data", NON_NEGATIVE
    )
    seq_len: int = key(
        4096,
        "training length: documents are packed (EOS between them) into chunks of it "
        "(at least a token and the one it predicts)",
        "data",
        Range(2),
    )

    # --- optimization ---------------------------------------------------------------------
    micro_batch_size: int = key(1, "sequences per process per forward pass", "optimization", AT_LEAST_ONE)
    grad_accum_steps: int = key(1, "micro-batches accumulated per optimizer step", "optimization", AT_LEAST_ONE)
    max_steps: int = key(1000, "optimizer steps", "optimization", AT_LEAST_ONE)
    lr: float = key(2e-5, "peak learning rate", "optimization", POSITIVE)
    lr_schedule: Literal["constant_with_warmup", "linear", "cosine"] = key(
        "constant_with_warmup", "after the linear warmup: constant, linear or cosine decay to 0", "optimization"
    )
    warmup_steps: int = key(20, "linear warmup steps", "optimization", NON_NEGATIVE)
    weight_decay: float = key(0.0, "AdamW weight decay", "optimization", NON_NEGATIVE)
    adam_beta1: float = key(0.9, "AdamW beta1", "optimization", BELOW_ONE)
    adam_beta2: float = key(0.95, "AdamW beta2", "optimization", BELOW_ONE)
    adam_eps: float = key(1e-8, "AdamW epsilon", "optimization", POSITIVE)
    max_grad_norm: float = key(1.0, "gradient clipping norm (0: off)", "optimization", NON_NEGATIVE)
    ema_decay: float = key(
        0.0,
        "keep an exponential moving average of the weights with this decay and export "
        "it (0: off; the controlled study used one, decay not stated)",
        "optimization",
        BELOW_ONE,
    )
    seed: int = key(
        42, "seed of initialization, data order and dropout", "optimization", Range(0, 2**32 - 1)
    )  # numpy's seed range
    gradient_checkpointing: bool = key(
        False, "recompute activations in the backward pass (less memory)", "optimization"
    )
    mixed_precision: Literal["auto", "no", "bf16", "fp16"] = key(
        "auto", "auto: bf16 where the GPU has it, fp16 on other GPUs, fp32 on the CPU", "optimization"
    )


@dataclasses.dataclass
class RunKeys:
    """The run folder and how the run goes: keys every approach reads, listed after the approaches' own."""

    output_dir: str = key(
        "", "run folder (checkpoints/, export/, metrics.jsonl); default runs/<name>", "run", NOT_EMPTY
    )
    save_every: int = key(
        100,
        "steps between resumable checkpoints; the last step is always saved (0: only the last)",
        "run",
        NON_NEGATIVE,
    )
    keep_checkpoints: int = key(2, "newest checkpoints kept", "run", AT_LEAST_ONE)
    resume: Literal["auto", "never"] = key("auto", "auto: continue from the newest checkpoint in output_dir", "run")
    stop_after_steps: int = key(
        0,
        "stop after this many steps without exporting, as a time-limited job would (0: run to max_steps)",
        "run",
        NON_NEGATIVE,
    )
    export: bool = key(True, "write the export at the end", "run")
    log_every: int = key(1, "steps between log lines / tracker points", "run", AT_LEAST_ONE)
    log_with: str = key("none", "accelerate trackers: none, all, or names (tensorboard,wandb,...)", "run")
    progress_bar: bool = key(True, "tqdm bar with loss and tokens/s (main process)", "run")


class RecipeBehaviour:
    """What a recipe does besides holding its keys (the base of every composed Recipe class)."""

    def fingerprint(self) -> dict[str, Any]:
        """The keys that decide the loss trajectory (a checkpoint only resumes under equal ones)."""
        return {k: v for k, v in to_plain(self).items() if k not in RUN_CONTROL_KEYS}


def recipe_class() -> type:
    """The Recipe dataclass for the approaches registered now: the shared keys, each approach's
    own keys (approaches by name), then the run's keys. The same class while the approaches are."""
    return composed_recipe(tuple(cls.Keys for cls in available_approaches().values()))


@functools.cache
def composed_recipe(approach_keys: tuple[type, ...]) -> type:
    """One flat dataclass of every key in `SharedKeys`, the `approach_keys` dataclasses and `RunKeys`;
    a key declared twice (other than by inheriting one Keys class from another) is refused."""
    declared: dict[str, tuple[dataclasses.Field, type]] = {}
    fields = []
    for keys in dict.fromkeys((SharedKeys, *approach_keys, RunKeys)):
        hints = typing.get_type_hints(keys)  # the approaches' annotations are text (postponed evaluation)
        for field in dataclasses.fields(keys):
            if field.name in declared:
                if declared[field.name][0] is field:
                    continue
                raise TypeError(
                    f"recipe key {field.name!r} is declared by both {declared[field.name][1].__qualname__} "
                    f"and {keys.__qualname__}"
                )
            declared[field.name] = (field, keys)
            fields.append((field.name, hints[field.name], copied_field(field)))
    return dataclasses.make_dataclass(
        "Recipe",
        fields,
        bases=(RecipeBehaviour,),
        namespace={"__module__": __name__, "__doc__": "A training recipe's keys."},
    )


def copied_field(field: dataclasses.Field) -> dataclasses.Field:
    """A new field with `field`'s default and metadata (a Field belongs to the one class made with it)."""
    if field.default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=field.default_factory, metadata=field.metadata)
    return dataclasses.field(default=field.default, metadata=field.metadata)


# The recipe of the approaches in approaches/: the type other modules name. A class registered
# later (a test's) is in `recipe_class()`, which recipe loading uses.
Recipe = recipe_class()


def to_plain(recipe) -> dict[str, Any]:
    """JSON/YAML-friendly dict (tuples as lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(recipe).items()}


def recipe_fields() -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(recipe_class())}
