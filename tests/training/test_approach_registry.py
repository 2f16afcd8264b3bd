"""Training approaches register by subclassing `Approach`, one file each in training/approaches/:
the folder is scanned, each approach's own recipe keys join the one flat recipe and `--help`, a
key only another approach reads is refused, and each approach's checks run with the recipe.
A temporary approach file shows that adding an approach is that one file."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import textwrap
from pathlib import Path

import pytest

import lm_eval_longmem_training.approaches as approaches_package
from lm_eval_longmem_training.approaches import approaches_reading, available_approaches, get_approach
from lm_eval_longmem_training.approaches.base import _REGISTRY, Approach
from lm_eval_longmem_training.cli import main as train_main
from lm_eval_longmem_training.errors import TrainingError
from lm_eval_longmem_training.recipes.loading import describe_keys, load_recipe
from lm_eval_longmem_training.recipes.preflight import check_files
from lm_eval_longmem_training.recipes.recipe import Recipe, composed_recipe, recipe_class, to_plain

APPROACHES_DIR = Path(approaches_package.__file__).parent
SHIPPED = {"rope_extension", "longlora", "from_scratch", "infini"}


def help_output(capsys) -> str:
    with pytest.raises(SystemExit):
        train_main(["--help"])
    return capsys.readouterr().out


def test_every_approach_file_is_discovered_and_defines_one_approach():
    files = {p.stem for p in APPROACHES_DIR.glob("*.py") if p.stem not in ("__init__", "base")}
    found = available_approaches()
    assert set(found) == files and SHIPPED <= files
    assert {name: cls.__module__.rpartition(".")[2] for name, cls in found.items()} == {name: name for name in files}
    assert all(cls.summary and issubclass(cls, Approach) for cls in found.values())


def test_each_approachs_keys_are_in_the_recipe_and_listed_by_help(capsys):
    keys, out = describe_keys(), help_output(capsys)
    recipe = load_recipe("tiny-pi")
    plain = to_plain(recipe)
    for name, cls in available_approaches().items():
        assert f"  {name} " in out.split("Approaches (approach=NAME):\n", 1)[1].split("\n\nKeys:", 1)[0]
        for field in dataclasses.fields(cls.Keys):
            line = next(line for line in keys.splitlines() if line.startswith(f"  {field.name} ("))
            assert line in out and f"default {field.default!r}" in line and field.metadata["help"] in line
            assert approaches_reading(field.name) == [name]
            assert getattr(recipe, field.name) == field.default and field.name in plain  # the run record keeps it
    assert "[longlora]\n  lora_r (int >= 1, default 8): LoRA rank" in keys
    assert "[infini]\n  gate_lr (float > 0, default 0.01): learning rate of the new gates" in keys
    approaches = "clex, from_scratch, infini, landmark, longlora, rope_extension"
    assert f"approach (str, one of {approaches}, default 'rope_extension')" in keys


def test_an_unknown_approach_is_one_message_with_the_closest_and_the_valid_ones(capsys):
    with pytest.raises(TrainingError) as err:
        load_recipe("tiny-pi", ["approach=longlroa"])
    assert str(err.value) == (
        "approach=longlroa on the command line is not valid: expected one of clex, from_scratch, "
        "infini, landmark, longlora, rope_extension. Did you mean longlora?"
    )
    with pytest.raises(
        TrainingError,
        match=r"^approach=infinni is not valid: expected one of clex, from_scratch, infini, "
        r"landmark, longlora, rope_extension\. Did you mean infini\?$",
    ):
        get_approach("infinni")
    assert train_main(["tiny-pi", "approach=LongLoRA"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "Did you mean longlora?" in err


def test_a_key_only_another_approach_reads_is_refused():
    with pytest.raises(TrainingError) as err:
        load_recipe("tiny-pi", ["lora_r=4"])
    assert str(err.value) == (
        "approach=rope_extension does not read lora_r (a key of approach=longlora): remove it or set approach=longlora."
    )
    with pytest.raises(TrainingError, match=r"does not read gate_lr \(a key of approach=infini\)"):
        load_recipe("tiny-longlora", ["gate_lr=0.1"])
    with pytest.raises(
        TrainingError,
        match=r"^approach=rope_extension does not read lora_r, lora_alpha, lora_targets, "
        r"trainable_extras, s2_attention, s2_group_fraction \(keys of "
        r"approach=longlora\): remove them or set approach=longlora\.$",
    ):
        load_recipe("longlora", ["approach=rope_extension"])
    assert load_recipe("tiny-pi", ["approach=longlora", "lora_r=4"]).lora_r == 4  # its own approach reads it


def test_longlora_still_refuses_a_seq_len_its_s2_groups_do_not_divide():
    with pytest.raises(TrainingError) as err:
        load_recipe("tiny-longlora", ["s2_group_fraction=0.3"])
    assert str(err.value) == (
        "S2-attention needs seq_len (256) to be a multiple of its group size (77 = "
        "s2_group_fraction 0.3 x seq_len) and the group >= 2."
    )
    with pytest.raises(TrainingError, match=r"group size \(1 = s2_group_fraction 0.25 x seq_len\) and the group >= 2"):
        load_recipe("tiny-longlora", ["seq_len=4"])
    assert load_recipe("tiny-longlora", ["s2_group_fraction=0.3", "s2_attention=false"]).s2_attention is False
    with pytest.raises(TrainingError, match="approach=longlora needs method="):
        load_recipe("tiny-longlora", ["method="])


def test_only_approaches_that_start_from_the_base_model_check_model_config_against_it(
    tiny_model_dir, tmp_path, monkeypatch
):
    with pytest.raises(
        TrainingError,
        match=r"^model_config.hidden_size=abc is not valid: the base model's config "
        r"holds a number there",
    ):
        check_files(
            load_recipe(
                "tiny-pi", [f"model={tiny_model_dir}", "model_config.hidden_size=abc", f"output_dir={tmp_path / 'pi'}"]
            )
        )
    import lm_eval_longmem_training.approaches.base as base

    def refuse(recipe):
        raise AssertionError("from_scratch's model_config is a whole architecture, not edits to the base config")

    monkeypatch.setattr(base, "check_base_config", refuse)
    check_files(load_recipe("tiny-transformer", [f"model={tiny_model_dir}", f"output_dir={tmp_path / 'fox'}"]))
    assert [name for name, cls in available_approaches().items() if not cls.starts_from_base_model] == ["from_scratch"]


TOY_APPROACH = '''
    """`toy_for_tests`: an approach the registry test adds as one file."""

    from dataclasses import dataclass

    from .base import Approach, load_pretrained
    from ..errors import TrainingError
    from ..recipes.key_checks import AT_LEAST_ONE
    from ..recipes.key import key


    @dataclass
    class ToyKeys:
        toy_rank: int = key(2, "rank of the toy", "toy_for_tests", AT_LEAST_ONE)


    class Toy(Approach):
        name = "toy_for_tests"
        summary = "A test double"
        Keys = ToyKeys

        def check(self, recipe):
            if recipe.toy_rank > recipe.seq_len:
                raise TrainingError(f"toy_rank ({recipe.toy_rank}) must not exceed seq_len ({recipe.seq_len}).")
            super().check(recipe)

        def build(self, recipe):
            return load_pretrained(recipe)
'''


@contextlib.contextmanager
def approach_file(folder: Path, monkeypatch):
    """`toy_for_tests.py` in a folder the approaches package scans beside its own; gone afterwards."""
    (folder / "toy_for_tests.py").write_text(textwrap.dedent(TOY_APPROACH), encoding="utf-8")
    monkeypatch.setattr(approaches_package, "__path__", [*approaches_package.__path__, str(folder)])
    try:
        yield
    finally:
        _REGISTRY.pop("toy_for_tests", None)
        sys.modules.pop("lm_eval_longmem_training.approaches.toy_for_tests", None)
        monkeypatch.undo()


def test_adding_an_approach_is_one_file(tmp_path, monkeypatch, capsys):
    with approach_file(tmp_path, monkeypatch):
        assert "toy_for_tests" in available_approaches()
        out = help_output(capsys)
        assert "  toy_for_tests        A test double.\n" in out
        assert "[toy_for_tests]\n  toy_rank (int >= 1, default 2): rank of the toy\n" in out
        recipe = load_recipe("tiny-pi", ["approach=toy_for_tests", "toy_rank=3"])
        assert recipe.toy_rank == 3 and to_plain(recipe)["toy_rank"] == 3 and recipe.lora_r == 8
        with pytest.raises(
            TrainingError,
            match=r"^toy_rank=0 on the command line is out of range: expected an "
            r"integer >= 1\.$",
        ):
            load_recipe("tiny-pi", ["approach=toy_for_tests", "toy_rank=0"])
        with pytest.raises(TrainingError, match=r"^toy_rank \(300\) must not exceed seq_len \(256\)\.$"):
            load_recipe("tiny-pi", ["approach=toy_for_tests", "toy_rank=300"])
        with pytest.raises(TrainingError, match=r"does not read toy_rank \(a key of approach=toy_for_tests\)"):
            load_recipe("tiny-pi", ["toy_rank=3"])
    assert "toy_for_tests" not in available_approaches() and recipe_class() is Recipe


def test_two_approaches_cannot_share_a_name_or_declare_the_same_key():
    with pytest.raises(ValueError, match="Two training approaches are named 'longlora'"):
        type("AnotherLongLoRA", (Approach,), {"name": "longlora", "build": lambda self, recipe: None})
    with pytest.raises(TypeError, match="Keys must be a dataclass"):
        type("Undeclared", (Approach,), {"name": "undeclared_for_tests", "Keys": dict})
    assert "undeclared_for_tests" not in _REGISTRY

    @dataclasses.dataclass
    class RankAgain:
        lora_r: int = 4

    with pytest.raises(TypeError, match="recipe key 'lora_r' is declared by both LongLoRAKeys and"):
        composed_recipe((available_approaches()["longlora"].Keys, RankAgain))
