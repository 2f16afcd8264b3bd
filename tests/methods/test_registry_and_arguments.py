"""The method registry and typed argument parsing."""

import dataclasses
from typing import Literal

import pytest

from lm_eval_longmem.models.method_framework import base
from lm_eval_longmem.models.method_registry import (
    MethodArgumentError,
    UnknownMethodError,
    available_methods,
    build_method,
    get_method,
    split_method_args,
    table,
)
from lm_eval_longmem.models.methods.vanilla import Vanilla


@dataclasses.dataclass(frozen=True)
class ToyArgs:
    factor: float = dataclasses.field(default=4.0, metadata={"help": "scale"})
    window: int = 512
    exact: bool = False
    mode: Literal["a", "b"] = "a"
    cap: int | None = None


class Toy(base.LongMemMethod):
    name = "toy_for_tests"
    summary = "test double"
    Args = ToyArgs


@pytest.fixture
def toy_method(monkeypatch):
    """`Toy` as a method of the registry, this module standing for its file of models/methods/."""
    monkeypatch.setitem(table.METHODS, Toy.name, __name__)
    return Toy


def test_vanilla_is_registered_by_its_file():
    assert available_methods()["vanilla"] is Vanilla
    assert get_method("vanilla") is Vanilla


def test_unknown_method_lists_valid_methods_in_one_line():
    with pytest.raises(
        UnknownMethodError,
        match=r"^Unknown method='yarnn'\. Did you mean method=yarn\? Valid methods: .*vanilla, yarn[^\n]*$",
    ):
        get_method("yarnn")


def test_args_are_coerced_by_declared_type(toy_method):
    method = build_method("toy_for_tests", {"factor": 8, "window": "1024", "exact": "true", "mode": "b", "cap": None})
    assert method.args.factor == 8.0 and isinstance(method.args.factor, float)
    assert method.args.window == 1024 and method.args.exact is True and method.args.mode == "b"
    assert method.describe() == {
        "method": "toy_for_tests",
        "args": {"factor": 8.0, "window": 1024, "exact": True, "mode": "b", "cap": None},
    }


@pytest.mark.parametrize("raw", [{"window": 2.5}, {"exact": "maybe"}, {"mode": "c"}, {"factor": "big"}, {"cap": "x"}])
def test_bad_values_name_the_argument_and_type(toy_method, raw):
    (name,) = raw
    with pytest.raises(MethodArgumentError, match=f"argument {name}="):
        build_method("toy_for_tests", raw)


def test_types_read_as_written_in_the_listing_and_in_errors(toy_method):
    from lm_eval_longmem.models.method_registry import method_listing

    listing = method_listing("toy_for_tests")
    assert "cap: int | None = None" in listing and "mode: 'a' | 'b' = 'a'" in listing and "NoneType" not in listing
    with pytest.raises(MethodArgumentError, match=r"argument cap='x' is not a valid int \| None "):
        build_method("toy_for_tests", {"cap": "x"})


def test_split_separates_method_args_from_model_args(toy_method):
    own, rest = split_method_args(toy_method, {"factor": 2, "pretrained": "m", "dtype": "float32"})
    assert own == {"factor": 2} and rest == {"pretrained": "m", "dtype": "float32"}


def test_duplicate_method_names_are_refused():
    with pytest.raises(ValueError, match="Two long-memory methods"):

        class Again(base.LongMemMethod):
            name = "vanilla"
            summary = "clash"
