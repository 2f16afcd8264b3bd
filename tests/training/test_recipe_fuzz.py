"""Fuzzing what users type into a training recipe: `key=value` overrides (every key, dotted
`method_args.x=` / `model_config.x=` entries, whole mappings) and YAML recipe files. Property:
each input is either accepted, as exactly what its text says, or refused with one TrainingError
line; never another exception, never a silent repair (`lr=1e-3x` is not 0.001, `max_steps=010`
is 10, not octal 8, `name=1.50` stays "1.50"). The reading that "exactly what the text says"
means is written here apart from the parser. Reproducible: a fixed seed, no example database."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import typing
from decimal import Decimal, InvalidOperation

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lm_eval_longmem_training.errors import TrainingError
from lm_eval_longmem_training.recipes.loading import load_recipe
from lm_eval_longmem_training.recipes.recipe import Recipe, recipe_fields
from lm_eval_longmem_training.recipes.yaml_reader import read_yaml_value

HINTS = typing.get_type_hints(Recipe)
TRICKY = [
    "010",
    "1:30",
    "0x10",
    "0o7",
    "0b1",
    "1_000",
    "1e-3",
    "1e-3x",
    "1.0e-3",
    ".5",
    "5.",
    "+5",
    "-0",
    " 7 ",
    ".inf",
    "-.inf",
    ".nan",
    "inf",
    "nan",
    "Infinity",
    "1e400",
    "1e23",
    "1e-400",
    "~",
    "null",
    "None",
    "",
    "yes",
    "no",
    "on",
    "off",
    "y",
    "true",
    "False",
    "TRUE",
    "[",
    "[1,",
    "[]",
    "{}",
    "{a: 1",
    "[a, b]",
    "a,b",
    "a,,b",
    "a b",
    "[q_proj]",
    "!!int 0x10",
    "!!python/object:os.system x",
    "&a [*a]",
    "'quoted'",
    '"x"',
    "\t",
    "#c",
    "a: b",
    "- a",
    "{a: 1, a: 2}",
    "ü",
    "\x00",
    "١٢",
    "²",
    "0.1.2",
    "--5",
    "5-",
    "1/2",
    "8",
    "2",
    "0.25",
    "0.9",
    "1",
    "0",
    "-1",
    "64",
    "4096",
    "cosine",
    "linear",
    "auto",
    "never",
    "bf16",
    "pi",
    "yarn",
    "rope_extension",
    "longlora",
    "[q_proj,v_proj]",
    "{factor: 8}",
    "{hidden_size: 010}",
    "{factor: 2.0e+0}",
]
PIECES = st.one_of(
    st.sampled_from(TRICKY),
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=12),
)
VALUES = st.one_of(PIECES, st.tuples(PIECES, PIECES).map("".join))
KEYS = st.one_of(
    st.sampled_from(sorted(recipe_fields())),
    st.sampled_from(
        [
            "method_args.factor",
            "method_args.beta",
            "model_config.hidden_size",
            "model_config.rope_theta",
            "lr.x",
            "method_args.",
            ".x",
            "",
            "learning_rate",
            "seqlen",
            "LR",
        ]
    ),
)
FUZZ = settings(
    max_examples=400, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
TRUE_WORDS, FALSE_WORDS = ("true", "yes", "1"), ("false", "no", "0")
NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
tried = {"overrides": 0, "accepted": 0, "files": 0}


def exact_number(text: str) -> Decimal | None:
    """The number a text spells in full (decimal digits, point, exponent), else None."""
    text = text.strip()
    if not NUMBER.fullmatch(text):
        return None
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


def list_items(text: str) -> tuple[str, ...] | None:
    inner = text.strip()
    if inner[:1] in "[(" and inner[-1:] == {"[": "]", "(": ")"}.get(inner[:1]):
        inner = inner[1:-1]
    pieces = [piece.strip() for piece in inner.split(",")]
    if not inner.strip():
        return () if text.strip()[:1] in "[(" else None
    return None if any(not piece for piece in pieces) else tuple(w for piece in pieces for w in piece.split())


def says(text: str, value, annotation) -> bool:
    """Whether `value` is what `text` says for a key of type `annotation`."""
    if annotation is str:
        return value == text
    if annotation is bool:
        return text.strip().lower() in (TRUE_WORDS if value else FALSE_WORDS)
    if annotation is int:
        number = exact_number(text)
        return number is not None and number == value and type(value) is int
    if annotation is float:
        number = exact_number(text)
        return number is not None and math.isfinite(value) and float(text.strip()) == value
    if typing.get_origin(annotation) is typing.Literal:
        return value == text
    if typing.get_origin(annotation) is tuple:
        return list_items(text) == value
    return value == (read_yaml_value(text) or {})  # a whole mapping: YAML 1.2 core (test_recipe_yaml_reads_...)


def check_one(item: str) -> None:
    """The property for one override."""
    tried["overrides"] += 1
    try:
        recipe = load_recipe("tiny-pi", [item])
    except TrainingError as err:
        assert str(err) and "\n" not in str(err), repr(str(err))
        return
    tried["accepted"] += 1
    name, _, text = item.partition("=")
    head, dot, entry = name.partition(".")
    if head == "output_dir" and text == "":
        assert recipe.output_dir == os.path.join("runs", "tiny-pi")
    elif dot:
        value = getattr(recipe, head)[entry]
        assert value == read_yaml_value(text), (item, value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            assert exact_number(text) == Decimal(repr(value)) or float(text) == value, (item, value)
    else:
        assert says(text, getattr(recipe, head), HINTS[head]), (item, getattr(recipe, head))
    check = recipe_fields()[head].metadata["check"]
    assert check is None or check.allows(getattr(recipe, head)), (item, getattr(recipe, head))


@FUZZ
@given(key=KEYS, value=VALUES)
def test_an_override_is_taken_as_typed_or_refused_in_one_line(key, value):
    check_one(f"{key}={value}")


@FUZZ
@given(item=st.one_of(st.text(max_size=20), st.sampled_from(["=", "==", "lr==1", "=5", "lr", "lr=1=2", ".=1"])))
def test_any_text_as_an_override_is_accepted_or_one_line(item):
    check_one(item)


def yaml_line(key: str, value: str) -> str:
    return f"{key}: {value}\n"


@FUZZ
@given(lines=st.lists(st.tuples(KEYS, VALUES), max_size=4), raw=st.one_of(st.just(""), st.text(max_size=30)))
def test_a_recipe_file_is_taken_or_refused_in_one_line(lines, raw, tmp_path_factory):
    path = tmp_path_factory.getbasetemp() / "fuzzed.yaml"
    path.write_text(
        "approach: rope_extension\nmethod: pi\nmethod_args: {factor: 4.0}\n"
        + "".join(yaml_line(k, v) for k, v in lines)
        + raw,
        encoding="utf-8",
    )
    tried["files"] += 1
    try:
        load_recipe(str(path))
    except TrainingError as err:
        assert str(err) and "\n" not in str(err), repr(str(err))


@pytest.mark.parametrize(
    "item, value",
    [
        ("lr=1e-3", 0.001),
        ("max_steps=010", 10),
        ("max_steps=1e3", 1000),
        ("name=1.50", "1.50"),
        ("name=no", "no"),
        ("export=yes", True),
        ("lora_targets=q_proj,v_proj", ("q_proj", "v_proj")),
        ("method_args.factor=010", 10),
        (
            "model_config={rope_theta: 1e4, tie_word_embeddings: no}",
            {"rope_theta": 10000.0, "tie_word_embeddings": "no"},
        ),
    ],
)
def test_what_typed_values_mean(item, value):
    name = item.partition("=")[0].partition(".")[0]
    recipe = load_recipe("tiny-longlora", [item])  # an approach that reads lora_targets
    got = getattr(recipe, name)
    assert (got["factor"] if "." in item.partition("=")[0] else got) == value


@pytest.mark.parametrize(
    "item",
    [
        "lr=1e-3x",
        "max_steps=1:30",
        "max_steps=0x10",
        "max_steps=1_000",
        "export=on",
        "seq_len=64.5",
        "lr=inf",
        "lr=nan",
        "method_args={a: 1, a: 2}",
        "method_args=&a [*a]",
        "method_args=!!python/object:os.system x",
        "lr.x=1",
        "lora_targets=[a,,b]",
        "max_steps=",
        "lr=~",
    ],
)
def test_malformed_values_are_refused(item):
    with pytest.raises(TrainingError):
        load_recipe("tiny-pi", [item])


@pytest.mark.parametrize(
    "items", [["max_steps=2", "max_steps=3"], ["method_args.factor=2", "method_args.factor=4"], ["lr=1e-3", "lr=0.001"]]
)
def test_a_key_given_twice_with_different_values_is_refused(items):
    name = items[0].partition("=")[0]
    with pytest.raises(TrainingError, match=f"{name} is given twice on the command line"):
        load_recipe("tiny-pi", items)


def test_a_key_repeated_as_typed_is_one_setting():
    assert load_recipe("tiny-pi", ["max_steps=2", "max_steps=2"]).max_steps == 2


def test_recipe_yaml_reads_yaml_1_2_core_types():
    assert read_yaml_value("{a: 010, b: 1:30, c: yes, d: 1_000, e: ~, f: 1e3, g: true, h: 0x10}") == {
        "a": 10,
        "b": "1:30",
        "c": "yes",
        "d": "1_000",
        "e": None,
        "f": 1000.0,
        "g": True,
        "h": "0x10",
    }


@pytest.mark.parametrize(
    "args, says",
    [
        (["lr=1e-3x"], "lr=1e-3x on the command line is not valid: expected a number such as 0.5."),
        (
            ["method_args={factor: 8, factor: 4}"],
            "Override 'method_args={factor: 8, factor: 4}': not valid YAML (the key "
            "'factor' is given twice (line 1, column 13)).",
        ),
        (["max_steps=1:30"], "max_steps=1:30 on the command line is not valid: expected an integer such as 1024."),
    ],
)
def test_the_cli_answers_a_bad_override_with_one_error_line(args, says):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.run(
        [str(os.path.join(os.path.dirname(sys.executable), "lm-eval-longmem")), "train", "tiny-pi", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"lm-eval-longmem train: error: {says}\n"


def test_zz_report_the_counts(capsys):
    """Prints how many inputs the fuzz tests tried (run with -s to see it)."""
    with capsys.disabled():
        print(
            f"\nrecipe fuzz: {tried['overrides']} overrides tried, {tried['accepted']} accepted; "
            f"{tried['files']} recipe files tried"
        )
