"""What every approach is: a name, the recipe keys only it reads, its checks of a recipe, and
what it provides to the loop: the model to train, its optimizer parameter groups, and the
export. The shared steps (loading the base model with the method's config edits, writing a
checkpoint whose config records the method and the run) live here.

An approach file subclasses `Approach`, sets `name` and `summary`, declares its own recipe keys
as a dataclass in `Keys` (fields made with `recipes.key.key`: default, help, section, check) and
overrides the hooks it needs. Subclasses register themselves by being defined; the package
imports every module in this folder, so a new approach is one new file (plus its recipes).
The recipe passed to every hook is a `recipes.recipe.Recipe`, the shared keys and every approach's (not
imported here: recipes/recipe.py imports the approaches to merge their keys).
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from lm_eval_longmem.common.named_subclasses import register_by_name

from ..errors import TrainingError

TRAINING_RECORD_KEY = "longmem_training"
_REGISTRY: dict[str, type[Approach]] = {}


@dataclass(frozen=True)
class NoKeys:
    """The recipe keys of an approach that reads only the shared ones."""


@dataclass
class TrainableModel:
    model: Any
    tokenizer: Any
    method: Any = None  # the LongMemMethod applied (recorded in the export), or None
    extras: dict = field(default_factory=dict)  # approach-specific state (e.g. the LoRA base)


class Approach(abc.ABC):
    name: ClassVar[str]
    summary: ClassVar[str]  # one line for `lm-eval-longmem train --help`
    # The recipe keys only this approach reads (a dataclass of `recipes.key.key` fields): merged
    # into the one flat recipe, listed by --help, refused in a recipe of another approach.
    Keys: ClassVar[type] = NoKeys
    # Whether the model trained is the base model (`model=`), so that model_config edits its
    # config and is checked against it before loading; False where model_config is the whole
    # architecture of a new model (checked with the recipe, by `check`).
    starts_from_base_model: ClassVar[bool] = True
    # Whether a forward may leave some trainable parameters out of its graph (clex: the ODE's weights at
    # t' = 1), so that multi-process DDP must be told to look for unused parameters.
    has_unused_parameters: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        register_by_name(_REGISTRY, cls, "training approaches", "Keys")  # a class without a name is a base

    @classmethod
    def key_names(cls) -> frozenset[str]:
        """The recipe keys this approach reads beyond the shared ones."""
        return frozenset(f.name for f in dataclasses.fields(cls.Keys))

    def check(self, recipe) -> None:
        """Refuse, before anything loads, a recipe this approach cannot train (TrainingError): its
        keys that must agree with each other, what it needs of the method. Here: the method's name
        and arguments."""
        build_method(recipe)

    @abc.abstractmethod
    def build(self, recipe) -> TrainableModel:
        """The model (and tokenizer, method) this approach trains, loaded or built from the recipe."""

    def param_groups(self, trainable: TrainableModel, recipe) -> list[dict]:
        """AdamW parameter groups (default: every trainable parameter, the recipe's lr and decay)."""
        params = [p for p in trainable.model.parameters() if p.requires_grad]
        return [{"params": params, "lr": recipe.lr, "weight_decay": recipe.weight_decay}]

    def export(self, trainable: TrainableModel, model, directory: Path, run_record: dict, state_dict=None) -> None:
        """Write the final checkpoint (`model` is the unwrapped trained model; `state_dict` its full
        weights, gathered from every process under FSDP/DeepSpeed)."""
        save_recorded_checkpoint(model, trainable.tokenizer, directory, trainable.method, run_record, state_dict)


def registered_approaches() -> dict[str, type[Approach]]:
    return dict(_REGISTRY)


def build_method(recipe):
    """The recipe's long-memory method (None when it names none), with its arguments checked."""
    if not recipe.method:
        return None
    from lm_eval_longmem.common.suggestions import did_you_mean
    from lm_eval_longmem.models.method_framework.arguments import field_names
    from lm_eval_longmem.models.method_registry import MethodArgumentError, UnknownMethodError, get_method
    from lm_eval_longmem.models.method_registry import build_method as build

    try:
        known = field_names(get_method(recipe.method).Args)
        unknown = [str(name) for name in recipe.method_args if name not in known]
        if unknown:  # build_method expects only its own arguments (lm-eval's front end splits them off)
            raise TrainingError(
                f"method_args.{unknown[0]}: method={recipe.method} has no argument {unknown[0]!r}."
                f"{did_you_mean(unknown[0], known, form='method_args.{}')} Its arguments: {', '.join(sorted(known))}."
            )
        return build(recipe.method, recipe.method_args)
    except (MethodArgumentError, UnknownMethodError) as err:
        raise TrainingError(f"recipe method: {err}") from None


def base_model_source(recipe) -> str:
    if recipe.model == "default":
        from lm_eval_longmem.models.checkpoint.default_model import DefaultModelMissingError, default_model_dir

        try:
            return str(default_model_dir())
        except DefaultModelMissingError as err:
            raise TrainingError(str(err)) from None
    return recipe.model


def check_base_config(recipe) -> None:
    """The recipe's model_config entries fit the base model's config (read, not the weights)."""
    from transformers import AutoConfig

    from ..recipes.config_fields import check_config_fields

    source = base_model_source(recipe)
    with hub_errors_as_training_errors(source):
        config = AutoConfig.from_pretrained(source)
    check_config_fields(config, recipe.model_config, "the base model's")


def load_tokenizer(recipe, source: str):
    from transformers import AutoTokenizer

    name = recipe.tokenizer or source
    with hub_errors_as_training_errors(name):
        return AutoTokenizer.from_pretrained(name)


def load_pretrained(recipe) -> TrainableModel:
    """The base model in fp32 with the recipe's config fields and the method's config edits
    applied, as `--model longmem` would load it with that method."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from lm_eval_longmem.models.rope.parameters import NotARopeModelError

    source = base_model_source(recipe)
    method = build_method(recipe)
    quiet = method.loading_context() if method is not None else contextlib.nullcontext()
    with hub_errors_as_training_errors(source), quiet:
        config = AutoConfig.from_pretrained(source)
        for name, value in recipe.model_config.items():
            setattr(config, name, value)
        if method is not None:
            try:
                method.prepare_config(config)
            except (NotARopeModelError, ValueError) as err:
                raise TrainingError(f"method={method.name} on {source}: {err}") from None
        try:
            model = AutoModelForCausalLM.from_pretrained(source, config=config, dtype="float32")
        except (TypeError, ValueError, RuntimeError) as err:
            if not recipe.model_config:
                raise
            raise TrainingError(
                f"model_config {recipe.model_config}: the model cannot be built with it ({type(err).__name__}: {err})."
            ) from None
    if method is not None:
        model = method.prepare_model(model)
    return TrainableModel(model=model, tokenizer=load_tokenizer(recipe, source), method=method)


@contextlib.contextmanager
def hub_errors_as_training_errors(name: str):
    """`loading_from_hub` (fail fast offline) with its errors turned into TrainingErrors."""
    from lm_eval_longmem.common.hub import HubUnavailableError, MissingLocalPathError, loading_from_hub

    try:
        with loading_from_hub(name):
            yield
    except (HubUnavailableError, MissingLocalPathError) as err:
        raise TrainingError(f"model/tokenizer {name!r}: {err}") from None
    except OSError as err:
        raise TrainingError(f"Could not load {name!r}: {err}") from None


def recorded_args(method) -> dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(method.args).items() if v is not None}


def save_recorded_checkpoint(model, tokenizer, directory: Path, method, run_record: dict, state_dict=None) -> None:
    """save_pretrained + tokenizer, the config naming the method (so `pretrained=<dir>` applies
    it) and the run (recipe, data, steps)."""
    from lm_eval_longmem.models.checkpoint.method_record import record_method

    config = model.config
    if method is not None:
        record_method(config, method.name, recorded_args(method))
    setattr(config, TRAINING_RECORD_KEY, run_record)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory, state_dict=state_dict)
    tokenizer.save_pretrained(directory)
