"""Property-based fuzzing of what users type: `--model_args` for every method,
`--metadata` for every task option, and sweep files.

The property, for every generated input: it is either accepted, and then what was parsed is what
the reference reading of the input says it means (fuzz_inputs.py: never a silent repair such as
`1e-3x` -> 0.001, `nan` as a length, `007` -> `7`), or it is refused with one of our user errors
(`LongMemError`), whose message names the key. Any other exception fails the test with the input
that raised it. Inputs are generated in-process against the functions the commands call (lm-eval's
own `key=value` front ends first, as `lm_eval` and the Python API run them); a few generated bad
inputs go through the real commands at the end.

Reproducible: a fixed seed per test (derandomize) and no example database. `pytest
tests/common/test_typed_values_fuzz.py --hypothesis-show-statistics` prints how many inputs each
property tried and how they ended (accepted, refused by us, refused by lm-eval's command line).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import typing
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, Phase, event, example, given, settings
from hypothesis import strategies as st
from lm_eval._cli.utils import key_val_to_dict, try_parse_json
from lm_eval.utils import simple_parse_args_string

from lm_eval_longmem.common.typed_values import coerce
from lm_eval_longmem.errors import LongMemError
from lm_eval_longmem.harness import preflight
from lm_eval_longmem.models.method_framework.arguments import parse_args
from lm_eval_longmem.models.method_registry import DEFAULT_METHOD, MethodArgumentError, available_methods
from lm_eval_longmem.models.method_registry.resolution import resolve_method
from lm_eval_longmem.sweep.config import SweepConfigError, build_config, load_sweep_file, parse_key_values
from lm_eval_longmem.sweep.plan import plan_runs
from lm_eval_longmem.tasks import registry
from lm_eval_longmem.tasks.task_options import parse_task_options
from tests.helpers.cli_runs import BIN
from tests.helpers.cli_runs import run as run_command
from tests.helpers.fuzz_inputs import ARBITRARY_TEXT, NEAR_MISSES, read_text, read_value, texts_for, typed_values_for

METHODS = available_methods()
# Methods whose arguments are one fixed dataclass; kvpress's depend on the press it names (its own
# tests, tests/methods/test_kvpress.py, fuzz those in the environment that has kvpress).
FIXED_ARGUMENT_METHODS = {name: cls for name, cls in METHODS.items() if "arguments_class" not in vars(cls)}
# What the wrapper's own signature takes besides the method's arguments (never "unknown").
WRAPPER_KEYS = {"pretrained", "method", "device", "reuse_prefix"}
FRONT_ENDS = {
    "lm_eval --model_args": key_val_to_dict,  # the command line (argparse), also sweep --methods NAME:k=v
    "Python API model_args": simple_parse_args_string,  # simple_evaluate(model_args="k=v,..."), run names
}


def fuzz_settings(examples: int, **extra):
    """Reproducible in CI: the same inputs on every run, no database written into the checkout."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        **extra,
    )


def hints_of(cls) -> dict[str, typing.Any]:
    return typing.get_type_hints(cls) if dataclasses.fields(cls) else {}


def same(a, b) -> bool:
    """Equal as parsed values (a nan equals a nan: the front end's output compared with itself)."""
    return repr(a) == repr(b)


def expectation(cls, readings: dict):
    """(the object `cls` builds from the reference readings, whether it must be accepted), or
    (None, False) when the input must be refused: a text with no value, or a value `cls` refuses."""
    if any(reading is None for reading in readings.values()):
        return None, False
    try:
        built = cls(**{key: reading.value for key, reading in readings.items()})
        if hasattr(built, "validate"):
            built.validate()
    except ValueError:
        return None, False
    return built, all(reading.certain for reading in readings.values())


def check_refusal(error: LongMemError, keys) -> None:
    """One message that names what was wrong."""
    message = str(error)
    assert message.strip() and "Traceback" not in message
    assert not keys or any(key in message for key in keys), f"{type(error).__name__} names none of {keys}: {message}"


def front_end_kept_pairs_apart(front_end, raw: dict, pairs: dict) -> bool:
    """Whether the front end read each `key=text` as typed alone (an unbalanced quote or bracket
    swallows the pairs after it: then only the no-traceback property is checked)."""
    return set(raw) == set(pairs) and all(same(raw[k], front_end(f"{k}={t}").get(k)) for k, t in pairs.items())


# --- --model_args, every method ------------------------------------------------------------


def unknown_keys(fields: set[str]) -> st.SearchStrategy[str]:
    """Misspelled, wrongly cased and made-up keys (HFLM's own, such as dtype, go through too)."""
    near = [name.upper() for name in fields] + [name + "s" for name in fields] + ["facter", "dtype", "max_length"]
    return st.one_of(st.sampled_from(near), st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True)).filter(
        lambda key: key not in fields and key not in WRAPPER_KEYS
    )


# The range of every numeric method argument, from the methods' papers and what the code does
# with the value (a count of tokens is positive, a RoPE factor t >= 1, a frequency boundary or a
# temperature > 0), written here apart from the methods' own checks: an accepted value outside
# its range is a silent repair of a mistake (it would run, meaninglessly, or fail mid-run).
ARGUMENT_RANGES = {
    "segment_length": lambda v: v >= 1,
    "sink_length": lambda v: v >= 0,
    "max_context_length": lambda v: v >= 1,
    "chunk_size": lambda v: v >= 1,
    "top_k": lambda v: v >= 0,  # longcache's; landmark refuses 0 too (a stricter check is no silent repair)
    "span_size": lambda v: v >= 1,
    "top_k_prime": lambda v: v >= 0,
    "global_tokens": lambda v: v >= 0,
    "local_window": lambda v: v >= 1,
    "window": lambda v: v >= 0,
    "group": lambda v: v >= 1,
    "target_length": lambda v: v >= 1,
    "original_length": lambda v: v >= 1,
    "training_length": lambda v: v >= 1,
    "factor": lambda v: v >= 1,
    "s": lambda v: v >= 1,
    "sigma": lambda v: v > 0,
    "beta_fast": lambda v: v > 0,
    "beta_slow": lambda v: v > 0,
    "attention_factor": lambda v: v > 0,
    "low_freq_factor": lambda v: v > 0,
    "high_freq_factor": lambda v: v > 0,
    "beta_init": lambda v: True,  # a gate logit: any finite number
    "max_factor": lambda v: 1 <= v <= 1024,  # CLEX's largest t (past 1024: an ODE of 10^5 steps, a typo)
    "param_factor": lambda v: v >= 1,  # CLEX's ODE width multiplier lambda
    "time_dt": lambda v: 0 < v <= 1,  # CLEX's RK4 step in t
    "block_size": lambda v: v >= 2,  # landmark: the block's tokens plus its landmark
    "train_context_length": lambda v: v >= 1,
}
# A method's own argument may state its range beside it instead, as a predicate in its field's
# metadata (`metadata={"help": ..., "valid": lambda v: v >= 1}`), still apart from its check.
DECLARED_RANGES = {
    f.name: f.metadata["valid"]
    for cls in METHODS.values()
    if dataclasses.is_dataclass(cls.Args)
    for f in dataclasses.fields(cls.Args)
    if "valid" in f.metadata
}
RANGES = {**ARGUMENT_RANGES, **DECLARED_RANGES}
ARGUMENT_ORDER = {("beta_slow", "beta_fast"), ("low_freq_factor", "high_freq_factor")}  # (smaller, larger)
LARGEST_TENSOR_INDEX = 2**63 - 1  # an integer argument (a count or size of tokens) beyond it cannot be used


def test_every_numeric_method_argument_has_a_stated_range():
    numeric = {
        name
        for cls in METHODS.values()
        for name, hint in hints_of(cls.Args).items()
        if {int, float} & {hint, *typing.get_args(hint)}
    }
    assert numeric == set(RANGES), (
        "state the range of each numeric method argument: in ARGUMENT_RANGES, or as "
        '`metadata={"valid": predicate}` on its field'
    )


def in_range(args) -> bool:
    values = dataclasses.asdict(args)
    return all(value is None or RANGES.get(name, lambda v: True)(value) for name, value in values.items()) and all(
        values[small] < values[large] for small, large in ARGUMENT_ORDER if small in values
    )


@functools.cache
def argument_pairs(args_cls) -> st.SearchStrategy[list[tuple[str, str]]]:
    """key=text pairs for a method: its own arguments (valid, near-valid, arbitrary texts), unknown
    keys, and repeats of a key (the last one counts, as lm-eval reads them)."""
    hints = hints_of(args_cls)
    unknown = st.tuples(unknown_keys(set(hints)), ARBITRARY_TEXT)
    if not hints:
        return st.lists(unknown, max_size=2)
    own = st.sampled_from(sorted(hints)).flatmap(lambda name: st.tuples(st.just(name), texts_for(hints[name])))
    return st.lists(st.one_of(own, own, own, unknown), max_size=4)


def read_model_args(front_end, text: str):
    """(the built method, the other model args) as `--model longmem --model_args TEXT` reads them."""
    raw = front_end(text)
    resolved = resolve_method(raw)
    return raw, (resolved.build(), resolved.other_args)


@pytest.mark.parametrize("method", sorted(FIXED_ARGUMENT_METHODS))
@fuzz_settings(80)
@given(data=st.data())
def test_model_args_of_every_method_are_read_as_typed_or_refused_with_one_message(method, data):
    args_cls = METHODS[method].Args
    hints = hints_of(args_cls)
    front_end_name = data.draw(st.sampled_from(sorted(FRONT_ENDS)), label="front end")
    front_end = FRONT_ENDS[front_end_name]
    pairs = data.draw(argument_pairs(args_cls), label="pairs")
    text = ",".join(f"{key}={value}" for key, value in [("method", method), *pairs])
    typed = dict(pairs)  # the last of a repeated key counts
    try:
        raw = front_end(text)
    except ValueError:  # lm-eval's own `key=value` check: argparse's one-line error, exit 2
        assert front_end is key_val_to_dict
        event("refused by lm-eval's command line")
        return
    try:
        _, (built, rest) = read_model_args(front_end, text)
    except LongMemError as error:
        outcome = error
    else:
        outcome = None
    if not front_end_kept_pairs_apart(front_end, {k: v for k, v in raw.items() if k != "method"}, typed):
        event("pairs merged by the front end (no-traceback check only)")
        return
    readings = {key: read_text(value, hints[key]) for key, value in typed.items() if key in hints}
    readings = {
        key: None if reading and type(reading.value) is int and abs(reading.value) > LARGEST_TENSOR_INDEX else reading
        for key, reading in readings.items()
    }
    expected, must_accept = expectation(args_cls, readings)
    if outcome is not None:
        event(f"refused: {type(outcome).__name__}")
        assert not must_accept, f"{text!r} is valid ({expected}) but was refused: {outcome}"
        check_refusal(outcome, list(readings))
        return
    event("accepted")
    assert expected is not None, f"{text!r} was accepted as {built.args} (a silent repair): {readings}"
    assert built.name == method and built.args == expected, (text, built.args, expected)
    assert in_range(built.args), f"{text!r} was accepted out of range: {built.args}"
    assert set(rest) == set(typed) - set(hints) and all(same(rest[k], raw[k]) for k in rest)  # unknown keys kept


METHOD_NAME_TEXTS = st.one_of(
    st.sampled_from(sorted(METHODS)),
    st.sampled_from(sorted(METHODS)).map(str.upper),
    st.sampled_from(sorted(METHODS)).map(lambda name: f" {name}"),
    st.sampled_from(sorted(METHODS)).map(lambda name: f"'{name}'"),
    st.sampled_from(sorted(METHODS)).map(lambda name: f"['{name}']"),
    st.sampled_from(["", "none", "None", "null", "yarnn", "1", "True", "{'a':1}", "[yarn]", "('yarn',)", "b'yarn'"]),
    st.sampled_from(NEAR_MISSES),
    ARBITRARY_TEXT,
)


@fuzz_settings(200)
@given(name=METHOD_NAME_TEXTS, front_end=st.sampled_from(sorted(FRONT_ENDS)))
@example(name="{'a':1}", front_end="lm_eval --model_args")
@example(name="['yarn']", front_end="lm_eval --model_args")
@example(name="", front_end="lm_eval --model_args")
def test_method_names_are_exact_or_refused_with_the_valid_ones(name, front_end):
    try:
        raw, (built, _) = read_model_args(FRONT_ENDS[front_end], f"method={name}")
    except (ValueError, LongMemError) as error:
        if not isinstance(error, LongMemError):  # lm-eval's own `key=value` check (argparse)
            assert FRONT_ENDS[front_end] is key_val_to_dict, error
            event("refused by lm-eval's command line")
            return
        event(f"refused: {type(error).__name__}")
        check_refusal(error, ["method"])
        assert "Valid methods" in str(error) or "method=" in str(error)
        return
    event("accepted")
    chosen = raw.get("method")
    if chosen is None:  # `method=None` is lm-eval's None: the default, as if it were not given
        assert built.name == DEFAULT_METHOD
        return
    quoted = re.fullmatch(r"(['\"])(.*)\1", name)  # lm-eval's explicit string; its Python API also strips
    assert built.name in (name, name.strip(), quoted and quoted.group(2)), f"method={name!r} ran {built.name}"


# Malformed `k=v,k=v` strings: anything goes, nothing but our errors (or argparse's) comes out.
MALFORMED_PIECES = st.one_of(
    st.text(alphabet="=,[](){}'\" .:-_+abcfxyz019", max_size=12),
    st.sampled_from(
        [
            "factor",
            "factor=",
            "=4",
            "method",
            "method=yarn",
            "method=",
            ",",
            ",,",
            "=",
            "==",
            "target_length=[1024,",
            "beta_fast=2,beta_slow=1",
            "factor=2=3",
            "segment_length=(1",
        ]
    ),
)


@fuzz_settings(200)
@given(pieces=st.lists(MALFORMED_PIECES, max_size=5), front_end=st.sampled_from(sorted(FRONT_ENDS)))
def test_malformed_model_args_strings_never_give_a_traceback(pieces, front_end):
    text = ",".join(pieces)
    try:
        read_model_args(FRONT_ENDS[front_end], text)
        event("accepted")
    except LongMemError as error:
        event(f"refused: {type(error).__name__}")
        check_refusal(error, [])
    except ValueError as error:  # lm-eval's own check, answered by argparse
        assert FRONT_ENDS[front_end] is key_val_to_dict, error
        event("refused by lm-eval's command line")


# --- --metadata, every task option ----------------------------------------------------------

TASKS_WITH_OPTIONS = sorted(d.name for d in registry.declarations() if d.options is not None)


def options_class(task: str):
    options = registry.find(task).options
    return options.load(), options.prefix


def test_every_task_with_options_is_fuzzed():
    """A new task's options class must be declared (so the start-up check knows it, and it is fuzzed here)."""
    from lm_eval_longmem.tasks import TASKS_DIR

    tasks_dir = Path(TASKS_DIR)
    with_prefix = {path.parent.name for path in tasks_dir.glob("*/protocol.py") if "OPTION_PREFIX" in path.read_text()}
    fuzzed = {options_class(task)[0].__module__.split(".")[-2] for task in TASKS_WITH_OPTIONS}
    assert with_prefix == fuzzed


@functools.cache
def metadata_pairs(cls, prefix: str, typed: bool) -> st.SearchStrategy[list[tuple[str, object]]]:
    """prefix_key=value pairs: the options (texts for the command line, values for JSON), unknown
    prefixed keys, and keys of other tasks or of the model (not this task's: left alone)."""
    hints = hints_of(cls)
    values = typed_values_for if typed else texts_for
    own = st.sampled_from(sorted(hints)).flatmap(lambda name: st.tuples(st.just(prefix + name), values(hints[name])))
    unknown = st.tuples(
        st.from_regex(r"[a-z_]{1,8}", fullmatch=True).filter(lambda k: k not in hints).map(lambda k: prefix + k),
        st.just("1"),
    )
    others = st.tuples(st.sampled_from(["pretrained", "max_length", "zz_option"]), st.just("2"))
    return st.lists(st.one_of(own, own, own, unknown, others), max_size=4)


@pytest.mark.parametrize("task", TASKS_WITH_OPTIONS)
@fuzz_settings(100)
@given(data=st.data())
def test_metadata_options_of_every_task_are_read_as_typed_or_refused_with_one_message(task, data):
    cls, prefix = options_class(task)
    hints = hints_of(cls)
    as_json = data.draw(st.booleans(), label="JSON --metadata")
    pairs = dict(data.draw(metadata_pairs(cls, prefix, typed=as_json), label="pairs"))
    if as_json:  # --metadata '{"fc_points": 8, ...}'
        try:
            raw = try_parse_json(json.dumps(pairs))
        except ValueError:
            event("refused by lm-eval's command line")
            return
        readings = {k: read_value(v, hints[k[len(prefix) :]]) for k, v in pairs.items() if k[len(prefix) :] in hints}
    else:  # --metadata fc_points=8 fc_lengths=[8,16]
        text = ",".join(f"{key}={value}" for key, value in pairs.items())
        try:
            raw = key_val_to_dict(text)
        except ValueError:
            event("refused by lm-eval's command line")
            return
        if not front_end_kept_pairs_apart(key_val_to_dict, raw, pairs):
            event("pairs merged by the front end (no-traceback check only)")
            _parse_or_user_error(cls, raw, prefix)
            return
        readings = {k: read_text(v, hints[k[len(prefix) :]]) for k, v in pairs.items() if k[len(prefix) :] in hints}
    unknown = [k for k in pairs if k.startswith(prefix) and k[len(prefix) :] not in hints]
    expected, must_accept = expectation(cls, {k[len(prefix) :]: r for k, r in readings.items()})
    outcome = _parse_or_user_error(cls, raw, prefix)
    start_up = _start_up_check_or_user_error(task, raw)
    assert isinstance(outcome, LongMemError) == isinstance(start_up, LongMemError), (outcome, start_up)
    if isinstance(outcome, LongMemError):
        event(f"refused: {type(outcome).__name__}")
        assert unknown or not must_accept, f"{pairs!r} is valid ({expected}) but was refused: {outcome}"
        check_refusal(outcome, unknown or list(readings))
        return
    event("accepted")
    assert not unknown, f"unknown option(s) {unknown} accepted"
    assert expected is not None, f"{pairs!r} was accepted as {outcome} (a silent repair): {readings}"
    assert outcome == expected, (pairs, outcome, expected)


def _parse_or_user_error(cls, raw, prefix):
    try:
        return parse_task_options(cls, raw, prefix)
    except LongMemError as error:
        return error


def _start_up_check_or_user_error(task, raw):
    try:
        preflight.check_task_options([task], raw)
    except LongMemError as error:
        return error
    return None


# --- sweep files ----------------------------------------------------------------------------

ALL_ARGUMENTS = {name: hint for cls in METHODS.values() for name, hint in hints_of(cls.Args).items()}
TASK_NAMES = TASKS_WITH_OPTIONS
ALL_OPTIONS = {
    options_class(task)[1] + name: hint
    for task in TASK_NAMES
    for name, hint in hints_of(options_class(task)[0]).items()
}
YAML_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(), st.text(max_size=6))
YAML_ANYTHING = st.recursive(
    YAML_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.one_of(st.text(max_size=5), st.integers(0, 3)), inner, max_size=3)
    ),
    max_leaves=6,
)


def typed_mapping(hints: dict, names: list[str]) -> st.SearchStrategy[dict]:
    """A mapping of some of `names` to values of their types (or near them, or anything)."""
    pair = st.sampled_from(names).flatmap(lambda name: st.tuples(st.just(name), typed_values_for(hints[name])))
    return st.lists(pair, max_size=3).map(dict)


def method_entry(name: str) -> st.SearchStrategy[dict]:
    """`{name: NAME, args: {...} or [{...}, ...], grid: {arg: [values]}}` with typed values."""
    hints = hints_of(METHODS[name].Args)
    if not hints:
        return st.just({"name": name})
    args = typed_mapping(hints, sorted(hints))
    grid_pair = st.sampled_from(sorted(hints)).flatmap(
        lambda arg: st.tuples(st.just(arg), st.lists(typed_values_for(hints[arg]), min_size=1, max_size=2))
    )
    return st.fixed_dictionaries(
        {"name": st.just(name)},
        optional={
            "args": st.one_of(args, st.lists(args, max_size=2)),
            "grid": st.lists(grid_pair, max_size=1).map(dict),
        },
    )


def sometimes_junk(well_formed: st.SearchStrategy) -> st.SearchStrategy:
    """Mostly the form a key takes, sometimes anything YAML can hold."""
    return st.one_of(well_formed, well_formed, well_formed, well_formed, well_formed, YAML_ANYTHING)


METHOD_ENTRY = st.one_of(
    st.sampled_from(sorted(METHODS)),
    *[method_entry(name) for name in sorted(METHODS)],
    st.sampled_from(["yarnn", "YARN", ""]),
    YAML_ANYTHING,
)
SWEEP_VALUES = {
    "models": st.lists(
        st.one_of(
            st.none(),
            st.just("default"),
            st.just("HuggingFaceTB/SmolLM2-135M"),
            st.fixed_dictionaries({"pretrained": st.one_of(st.just("default"), st.text(max_size=6), YAML_SCALARS)}),
        ),
        min_size=1,
        max_size=2,
    ),
    "methods": st.lists(METHOD_ENTRY, min_size=1, max_size=2),
    "metadata": typed_mapping(ALL_OPTIONS, sorted(ALL_OPTIONS)),
    "model_args": st.dictionaries(st.sampled_from(["dtype", "max_length"]), YAML_SCALARS, max_size=2),
    "output_path": st.text(max_size=8),
    "per_task": st.booleans(),
    "limit": st.one_of(st.integers(-1, 100), st.floats(0, 2), st.floats()),
    "batch_size": st.one_of(st.integers(-1, 64), st.sampled_from(["auto", "auto:4", "autox", "auto:0", "8"])),
    "device": st.sampled_from(["cpu", "cuda", "cuda:1", ""]),
    "lm_eval_args": st.lists(st.sampled_from(["--log_samples", "--seed", "1"]), max_size=2),
    "launcher": st.sampled_from([["accelerate", "launch"], "accelerate launch"]),
}
SWEEP_MAPPINGS = st.fixed_dictionaries(
    {
        "tasks": sometimes_junk(
            st.one_of(
                st.lists(st.sampled_from(TASK_NAMES + ["longmem"]), min_size=1, max_size=2), st.sampled_from(TASK_NAMES)
            )
        )
    },
    optional={key: sometimes_junk(values) for key, values in SWEEP_VALUES.items()},
)
MISSPELLED_KEYS = st.sampled_from(["modles", "method", "task", "meta_data", "Tasks"])
# One file in ten has a misspelled key (Hypothesis's one_of would not keep to such a share).
SWEEP_FILES = st.tuples(SWEEP_MAPPINGS, st.integers(0, 9), MISSPELLED_KEYS, YAML_ANYTHING).map(
    lambda t: {**t[0], t[2]: t[3]} if t[1] == 7 else t[0]
)


@fuzz_settings(200)
@given(raw=SWEEP_FILES)
def test_sweep_files_are_planned_as_written_or_refused_with_one_message(raw, tmp_path_factory):
    path = tmp_path_factory.getbasetemp() / "fuzz_sweep.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    try:
        loaded = load_sweep_file(path)
        config = build_config(loaded, str(path))
        runs = plan_runs(config)
    except LongMemError as error:
        event(f"refused: {type(error).__name__}")
        check_refusal(error, [])
        return
    event("accepted")
    assert runs
    check_planned_as_written(loaded, config, runs)


def check_planned_as_written(raw: dict, config, runs) -> None:
    """An accepted sweep runs what the file says: each value as written, each in its range."""
    assert config.limit is None or (
        math.isfinite(config.limit) and (0 < config.limit < 1 or config.limit.is_integer()) and config.limit > 0
    ), config.limit
    assert (
        config.batch_size is None
        or (type(config.batch_size) is int and config.batch_size > 0)
        or re.fullmatch(r"auto(:[1-9][0-9]*)?", str(config.batch_size))
    ), config.batch_size
    for key in ("device", "output_path"):
        if raw.get(key) is not None:
            assert getattr(config, key) == raw[key], (key, raw[key], getattr(config, key))
    for run in runs:
        method_cls = METHODS[run.model_args["method"]]
        hints = hints_of(method_cls.Args)
        assert isinstance(run.model_args.get("pretrained", ""), str) and run.model_args.get("pretrained", "x").strip()
        own = {name: value for name, value in run.model_args.items() if name in hints}
        parsed = parse_args(run.model_args["method"], method_cls.Args, own)
        for name, value in own.items():
            reading = read_value(value, hints[name])
            assert reading is not None and reading.value == getattr(parsed, name), (
                f"{name}={value!r} planned for {run.name}"
            )
        for task in run.tasks:
            if task in TASKS_WITH_OPTIONS:  # its options hold: the run will not fail on them
                cls, prefix = options_class(task)
                parse_task_options(cls, {**run.model_args, **run.metadata}, prefix)


@fuzz_settings(100)
@given(text=st.one_of(st.text(max_size=60), st.text(alphabet="[]{}:,- \n'\"&*!abc01", max_size=60)))
@example(text="[" * 1000)
@example(text="tasks: [forgetting_curve]\n1: x\nzz: y\n")
@example(text="tasks: [forgetting_curve]\nmethods: [{name: yarn, 1: x, zz: y}]\n")
def test_any_sweep_file_text_is_planned_or_refused_with_one_message(text, tmp_path_factory):
    path = tmp_path_factory.getbasetemp() / "fuzz_sweep_text.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        plan_runs(build_config(load_sweep_file(path), str(path)))
        event("accepted")
    except LongMemError as error:
        event(f"refused: {type(error).__name__}")
        check_refusal(error, [])


# --- through the real commands ----------------------------------------------------------------

COMMAND_LINE_TEXT = st.one_of(  # what a shell passes on unchanged and lm-eval splits as one value
    st.sampled_from([t for t in NEAR_MISSES if t.isascii() and t.isprintable() and not set(t) & set(",'\"{}")]),
    st.from_regex(r"[+-]?[0-9]{0,4}(\.[0-9]{0,2})?([eE][+-]?[0-9]{1,3})?[a-z]?", fullmatch=True),
)


def bad_text_for(annotation) -> st.SearchStrategy[str]:
    return COMMAND_LINE_TEXT.filter(lambda text: read_text(text, annotation) is None)


BAD_METHOD_ARGUMENTS = st.sampled_from(sorted((m, f) for m in METHODS for f in hints_of(METHODS[m].Args))).flatmap(
    lambda pair: st.tuples(st.just(pair[0]), st.just(pair[1]), bad_text_for(hints_of(METHODS[pair[0]].Args)[pair[1]]))
)
BAD_TASK_OPTIONS = st.sampled_from(
    sorted((task, f) for task in TASK_NAMES for f in hints_of(options_class(task)[0]))
).flatmap(
    lambda pair: st.tuples(
        st.just(pair[0]),
        st.just(options_class(pair[0])[1] + pair[1]),
        bad_text_for(hints_of(options_class(pair[0])[0])[pair[1]]),
    )
)


# One mistake each sweep file gets (whatever else it holds, it must be refused).
SWEEP_MISTAKES = [
    {"limit": float("nan")},
    {"limit": 1.5},
    {"batch_size": "autox"},
    {"device": ["cpu"]},
    {"metadata": {"fc_points": "abc"}},
    {"methods": [{"name": "yarn", "args": {"factor": "nan"}}]},
]


def assert_one_error_line(proc, *named) -> None:
    lines = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert all(name in lines[0] for name in named), lines


@fuzz_settings(1, phases=[Phase.generate])  # one draw of a handful of inputs; no shrinking (each input is a process)
@given(
    method_cases=st.lists(BAD_METHOD_ARGUMENTS, min_size=1, max_size=1),
    option_cases=st.lists(BAD_TASK_OPTIONS, min_size=3, max_size=3),
    sweeps=st.lists(st.tuples(SWEEP_FILES, st.sampled_from(SWEEP_MISTAKES)), min_size=2, max_size=2),
)
def test_generated_bad_inputs_through_the_commands_are_one_error_line(
    method_cases, option_cases, sweeps, tmp_path_factory
):
    """`lm_eval` (start-up check) and `lm-eval-longmem sweep --dry-run` answer each with one
    `error:` line naming the key and a non-zero exit, before any model loads."""
    commands = [
        (
            [
                str(BIN / "lm_eval"),
                "--model",
                "longmem",
                "--model_args",
                f"method={method},{field}={text}",
                "--tasks",
                "forgetting_curve",
            ],
            field,
        )
        for method, field, text in method_cases
    ]
    commands += [
        ([str(BIN / "lm_eval"), "--model", "longmem", "--tasks", task, "--metadata", f"{key}={text}"], key)
        for task, key, text in option_cases
    ]
    deep = "[" * 5000  # lm-eval's JSON reading recursed past Python's limit: a RecursionError traceback
    commands.append(
        (
            [str(BIN / "lm_eval"), "--model", "longmem", "--tasks", "forgetting_curve", "--metadata", deep],
            "--metadata: lists or mappings nested too deeply",
        )
    )
    for number, (sweep, mistake) in enumerate(sweeps):
        bad_sweep = tmp_path_factory.getbasetemp() / f"fuzz_bad_sweep_{number}.yaml"
        bad_sweep.write_text(yaml.safe_dump({**sweep, **mistake}), encoding="utf-8")
        commands.append(([str(BIN / "lm-eval-longmem"), "sweep", str(bad_sweep), "--dry-run"], "sweep"))
    for argv, key in commands:  # lm_eval as warm runs (tests/helpers/warm_commands.py), a fork each
        proc = run_command(argv, check=False)
        event("command answered with one error line")
        assert_one_error_line(proc, key)


# --- what the fuzzing found: each fixed, kept here as a plain example --------------------------


@pytest.mark.parametrize(
    "model_args, expected",
    [
        (
            "method=ntk,original_length=1E30",
            "1e+30 is too large to be read exactly",
        ),  # was 1000000000000000019884624838656
        (
            "method=yarn,factor=" + "9" * 400,
            "factor=" + "9" * 400 + " is not a valid float | None (expected a finite number",
        ),
        (
            "method=llama3,high_freq_factor=0.0",
            "need 0 < low_freq_factor < high_freq_factor, got low_freq_factor=1.0, high",
        ),
        ("method=llama3,low_freq_factor=4,high_freq_factor=4", "need 0 < low_freq_factor < high_freq_factor"),
        ("method=yarn,beta_slow=0.0", "beta_slow must be a positive number of rotations, got 0.0"),
        ("method=yarn,attention_factor=-1", "attention_factor scales q and k and must be positive, got -1.0"),
        ("method=dynamic_ntk,training_length=0", "training_length must be a positive number of tokens, got 0"),
        ("method=self_extend,original_length=-3", "original_length must be a positive number of tokens, got -3"),
        ("method={'a':1}", "Unknown method={'a': 1}. Valid methods:"),  # was TypeError: unhashable type
        ("method=['yarn']", "Unknown method=['yarn']. Valid methods:"),
        ("method=-0", "Unknown method=-0.0. Valid methods:"),  # was vanilla (a falsy method)
        ("method=", "method= is empty: name a method"),  # was vanilla, even for a checkpoint that records another
    ],
)
def test_found_model_args_mistakes_are_one_message(model_args, expected):
    with pytest.raises(LongMemError, match=re.escape(expected)):
        read_model_args(key_val_to_dict, model_args)


def test_numbers_typed_exactly_are_read_exactly():
    assert coerce("1e23", int) == 10**23 and coerce(2.0**53, int) == 2**53  # a sweep file's '1e23' is text
    assert coerce(2**1023, float) == 2.0**1023
    assert parse_args("ntk", METHODS["ntk"].Args, {"original_length": "1.5e4"}).original_length == 15000


def test_a_count_past_a_tensor_index_is_one_message():
    with pytest.raises(MethodArgumentError, match=r"max_context_length='1E1000' is out of range: integer arguments"):
        parse_args("statedclm", METHODS["statedclm"].Args, {"max_context_length": "1E1000"})  # was OverflowError


@pytest.mark.parametrize(
    "metadata, expected",
    [
        ("fc_corpus=", "Unknown corpus '' (--metadata fc_corpus)"),  # was the current folder
        ("ppl_corpus=", "Unknown corpus '' (--metadata ppl_corpus)"),
        (
            "trec_data_dir=007",
            "--metadata trec_data_dir=7 is malformed: expected text, but it was read as a number: quote",
        ),
        ("topicret_data=NaN", "--metadata topicret_data=nan is malformed: expected text"),  # was the folder 'nan'
        ("fc_corpus=None", "--metadata fc_corpus=None is malformed: expected text"),
        ("fc_seed=1e23", "--metadata fc_seed=1e+23 is malformed: expected an integer such as 1024; 1e+23 is too large"),
    ],
)
def test_found_task_option_mistakes_are_one_message(metadata, expected):
    with pytest.raises(LongMemError, match=re.escape(expected)):
        preflight.check_task_options(TASK_NAMES, key_val_to_dict(metadata))


def test_quoted_or_path_text_options_are_kept_as_typed(tmp_path, monkeypatch):
    trec, prefix = options_class("longmem_trec_manyshot")
    monkeypatch.chdir(tmp_path)  # the folders must exist: a local-data option naming nothing is refused
    (tmp_path / "007").mkdir()
    (tmp_path / "trec").mkdir()
    assert parse_task_options(trec, key_val_to_dict("trec_data_dir='007'"), prefix).data_dir == "007"
    assert parse_task_options(trec, {"trec_data_dir": tmp_path / "trec"}, prefix).data_dir == str(tmp_path / "trec")


@pytest.mark.parametrize(
    "raw, expected",
    [
        ({"device": []}, "device must be a non-empty string (quote it in YAML), got []"),  # was the device '[]'
        ({"output_path": 2024}, "output_path must be a non-empty string (quote it in YAML), got 2024"),
        ({"limit": float("nan")}, "limit must be a positive number (a whole count, or a fraction below 1), got nan"),
        ({"limit": float("inf")}, "limit must be a positive number"),
        ({"limit": 1.5}, "limit must be a positive number (a whole count"),  # lm-eval would run 1 document
        ({"batch_size": "autox"}, "batch_size must be a positive integer, 'auto' or 'auto:N', got 'autox'"),
        ({"models": [{"pretrained": 123}]}, "a models entry's pretrained must be a non-empty string"),
        ({"models": [""]}, "a models entry must be a non-empty string"),
        ({"methods": [{"name": "yarn", "args": 0}]}, "methods[yarn].args must be a mapping"),  # was no arguments
        ({"methods": [{"name": "yarn", "grid": 0}]}, "methods[yarn].grid must be a mapping"),
        ({"model_args": {"dtype": float("nan")}}, "model_args must hold plain values"),
        ({"metadata": {"fc_points": "abc"}}, "--metadata fc_points=abc is malformed"),  # was each run failing in turn
        ({1: "x", "zz": "y"}, "unknown key(s) 1, 'zz'"),  # was TypeError: '<' not supported
    ],
)
def test_found_sweep_mistakes_are_one_message(raw, expected):
    with pytest.raises(LongMemError, match=re.escape(expected)):
        build_config({"tasks": ["forgetting_curve"], **raw}, "s.yaml")


def test_sweep_values_in_range_are_kept():
    config = build_config({"tasks": ["forgetting_curve"], "limit": 0.5, "batch_size": "auto:4", "device": "cuda:1"})
    assert (config.limit, config.batch_size, config.device) == (0.5, "auto:4", "cuda:1")
    assert build_config({"tasks": ["forgetting_curve"], "limit": 2}).limit == 2.0


def test_a_sweep_file_nested_too_deeply_is_one_message(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("[" * 1000, encoding="utf-8")
    with pytest.raises(SweepConfigError, match="nested too deeply"):  # was RecursionError
        load_sweep_file(path)
    with pytest.raises(SweepConfigError, match="nested this deeply"):  # sweep --metadata '[[[...': the same
        parse_key_values("[" * 5000, "--metadata")
