"""What every long-memory method is: a name, typed arguments with paper defaults, and hooks.

A method file subclasses `LongMemMethod`, sets `name` and `summary`, declares its
arguments as a dataclass in `Args` (defaults from its paper, `metadata={"help": ...}`), and
overrides only the hooks it needs, in a file of `models/methods/` named after it: the registry
finds a method by that file's name (`models/method_registry/table.py`), importing it only when
asked for; subclasses also register themselves here by being defined, which checks their names
and `Args` and lets a test hold the files equal to the classes. What the docs and the method
matrix tests need of it are class attributes too (`paper`, `docs_page`, `tiny_settings`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from lm_eval_longmem.common.named_subclasses import register_by_name
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings

_REGISTRY: dict[str, type[LongMemMethod]] = {}

# The input length a bounded-memory method reports as its context length: a number is needed
# (lm-eval's `max_length` is an int), and 1M tokens is the longest input the papers evaluate
# (Infini-attention's passkey). `max_length=N` in --model_args sets another.
UNBOUNDED_INPUT_LENGTH = 1 << 20


@dataclasses.dataclass(frozen=True)
class NoArgs:
    """Arguments of a method that takes none."""


class LongMemMethod:
    name: ClassVar[str]
    summary: ClassVar[str]
    Args: ClassVar[type] = NoArgs
    # What the docs say of it, rendered into the README's and the docs' method tables
    # (`report/docs_tables.py`): the paper it follows, and the page under docs/ that describes
    # it (with an #anchor where one section does).
    paper: ClassVar[str] = ""
    docs_page: ClassVar[str] = "model.md"
    # Arguments a fixed `Args` cannot declare (kvpress: the chosen press's own), as (argument,
    # default, meaning) rows after the fields of `Args` in the docs' argument tables.
    more_arguments: ClassVar[tuple[tuple[str, str, str], ...]] = ()
    # The arguments the method matrix tests run it with on a tiny model; every method declares them.
    tiny_settings: ClassVar[TinySettings | None] = None
    # Whether the KV cache of a prompt prefix is valid for a longer prompt that starts with it.
    # False when the cached keys depend on the whole prompt (a RoPE base set by its length, the
    # entries a bounded cache keeps): the results file then records longmem_reuse_prefix false.
    prefix_cache_reusable: ClassVar[bool] = True
    # Whether what the method keeps of the past does not grow with the input (a bounded KV
    # cache, a compressive memory) and its positions stay inside what the model was trained
    # on: it then reads inputs of any length, so tasks never skip or truncate a document for
    # being longer than the base model's context, and its default grids stay at the base
    # length (comparable with `vanilla`). Tasks read it through `tasks.model_view.ModelView`.
    bounded_memory: ClassVar[bool] = False
    # What the method needs of the checkpoint's architecture (`models/fox/compatibility.py` asks
    # before any weight is loaded): its hooks rewrite the rotary frequencies or the rotary
    # attention of a transformers RoPE model (the RoPE-extension base class sets it) ...
    rewrites_rope: ClassVar[bool] = False
    # ... it runs a Forgetting Transformer checkpoint and nothing else (`fox`) ...
    needs_fox_checkpoint: ClassVar[bool] = False
    # ... or no hook changes the model: it runs as trained (`vanilla`, `fox`). On a FoX-family
    # checkpoint that is method=fox's job, so that results record the run as FoX.
    leaves_model_as_trained: ClassVar[bool] = False
    # What a checkpoint this method trained (or recorded) holds that no other method runs (clex's
    # frequency ODE, landmark's landmark tokens), said when another method or model is asked to run
    # it (method_registry/resolution.py); None when any method may run its checkpoints. Whether
    # transformers cannot even build such a checkpoint without this method (clex): then the other
    # method is refused in one line; otherwise it runs, and a warning says what it leaves out.
    checkpoint_mechanism: ClassVar[str | None] = None
    checkpoint_needs_this_method: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        register_by_name(_REGISTRY, cls, "long-memory methods", "Args")  # a class without a name is a base

    @classmethod
    def arguments_class(cls, raw_args: dict[str, Any]) -> type:
        """The dataclass of this method's arguments, given the raw ones. Usually the fixed `Args`;
        a method whose arguments depend on a choice among them (kvpress: the press named by
        `press=`) builds it from that choice."""
        return cls.Args

    @classmethod
    def describe_arguments(cls, detailed: bool = False) -> list[str]:
        """Lines for `lm-eval-longmem methods`; `detailed` when this method alone is listed."""
        from lm_eval_longmem.models.method_framework.arguments import describe_fields

        return describe_fields(cls.Args)

    @classmethod
    def recorded_arguments_kept(cls, recorded: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
        """Which of the arguments a checkpoint recorded still apply beside those the user gave:
        all by default; a method drops one that a given argument makes meaningless (landmark:
        the recorded top_k under retrieval=false), so only a user's own contradiction is refused."""
        return recorded

    @classmethod
    def checkpoint_identity(cls, config) -> dict[str, Any]:
        """How this method names the checkpoint it runs, beside its arguments, in run-folder names and
        report labels; {} when its name and arguments say it all. A method that runs whatever
        architecture a checkpoint has (`fox`) names that architecture here, so that a Transformer
        baseline never reads as FoX. `config`: the checkpoint's config (an object or a config.json
        dict) or, in reports, the arguments the method recorded in a results file (`describe()`).

        Reports ask it without importing torch (`method_registry/checkpoint_identity.py`): a method
        that overrides it is listed in `method_registry/table.py`'s `NAMES_ITS_CHECKPOINT` and keeps
        its module free of heavy imports."""
        return {}

    def __init__(self, args: Any = None):
        self.args = args if args is not None else self.Args()

    # --- hooks (defaults: leave the model as it is) ----------------------------------------
    def prepare_config(self, config) -> None:
        """Edit the Hugging Face config before the weights are loaded (e.g. RoPE scaling)."""

    def loading_context(self):
        """A context manager around reading the config and loading the weights (default: nothing):
        where a method silences library messages its hooks answer (clex: transformers' report of
        the CLEX tensors it does not know)."""
        import contextlib

        return contextlib.nullcontext()

    def prepare_model(self, model):
        """Patch the loaded model (attention function, cache, forward loop); return it."""
        return model

    def context_length(self, base_length: int) -> int:
        """Longest input (tokens) the model takes under this method, given the base model's.

        Bounded-memory methods take any length (`UNBOUNDED_INPUT_LENGTH`)."""
        return max(base_length, UNBOUNDED_INPUT_LENGTH) if self.bounded_memory else base_length

    def read_lengths(self, config) -> None:
        """Read what the length rules need from the checkpoint's config, without changing it (a
        method whose lengths come from its own settings there: clex's C and max_factor). Called
        by `models/checkpoint/context_length.py` before any of the three lengths is asked."""

    def trained_length(self, base_length: int) -> int:
        """The training length under this method, given the config's: the same unless the method
        reads the model at another base length (clex's `original_length` C)."""
        return base_length

    def input_limit(self, base_length: int) -> int | None:
        """The longest input this method can run at all (None: no limit of its own). Declared so
        the start-up check refuses longer inputs before the model loads."""
        return None

    def sizing_length(self, base_length: int) -> int:
        """Length that sizes the tasks' default grids (the forgetting curve's longest L).

        Usually the context length (the claimed length l of the forgetting curve). A method
        with bounded memory takes inputs of any length and reports the base model's instead,
        so a default run tests the same lengths as `vanilla`; longer lengths are asked for
        explicitly and are never refused.
        """
        return base_length if self.bounded_memory else self.context_length(base_length)

    def make_scorer(self, model):
        """Teacher-forced scorer for methods that own the forward loop (e.g. chunked prefill
        with cache compression): an object with `score(input_ids, spans)` and `strategy`, like
        `models.scoring.TeacherForcedScorer`. None keeps the wrapper's lean scorer."""
        return None

    def make_generator(self, model, tokenizer):
        """`models.generation.TokenGenerator` for methods that own the decoding loop (bounded
        caches). None keeps the wrapper's default generator."""
        return None

    # --- reporting -----------------------------------------------------------------------
    @classmethod
    def resolved_defaults(cls, args) -> dict[str, Any]:
        """What an argument left at its `None` default stands for, where that follows from the
        arguments alone (a RoPE method's factor: 4.0 unless target_length is given). Run-folder
        names leave out an argument given equal to it, as they leave out one equal to its default."""
        return {}

    def resolved_args(self) -> dict[str, Any]:
        """The arguments as this run uses them, for the results file: each `None` default that
        stands for a value replaced by it (`resolved_defaults`, and what the method read from the
        checkpoint's config, e.g. the training length C, once `prepare_config` has seen it)."""
        values = dataclasses.asdict(self.args)
        for name, value in self.resolved_defaults(self.args).items():
            if values.get(name) is None:
                values[name] = value
        return values

    def run_record(self) -> dict[str, Any]:
        """What the method did in this run that its arguments do not say (CLEX: the factors t it
        used), for the results file; not part of `describe()`, which identifies cached scores."""
        return {}

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "args": self.resolved_args()}


def registered_methods() -> dict[str, type[LongMemMethod]]:
    """The method classes defined so far (the registry goes by the files `method_registry/table.py` lists)."""
    return dict(_REGISTRY)
