"""Recipe files and overrides: shipped recipes load, keys are typed, bad input is one clear message."""

import json

import pytest

from lm_eval_longmem_training.cli import main as train_main
from lm_eval_longmem_training.errors import TrainingError
from lm_eval_longmem_training.recipes.loading import load_recipe, shipped_recipes


def test_every_shipped_recipe_loads_with_the_papers_settings():
    names = set(shipped_recipes())
    assert {"pi", "ntk", "yarn", "longlora", "fox", "transformer", "infini", "infini-passkey"} <= names
    assert {f"tiny-{name}" for name in names if not name.startswith("tiny-")} <= names
    for name in names:
        recipe = load_recipe(name)
        assert recipe.name == name and recipe.output_dir.endswith(name)
    factors = {name: load_recipe(name).method_args["factor"] for name in ("pi", "ntk", "yarn", "longlora")}
    assert factors == {"pi": 8.0, "ntk": 29.0, "yarn": 8.0, "longlora": 8.0}  # Table 13, LLaMA-2
    pi = load_recipe("pi")
    assert (pi.lr, pi.weight_decay, pi.lr_schedule, pi.seq_len) == (2e-5, 0.0, "constant_with_warmup", 32768)
    assert pi.micro_batch_size * pi.grad_accum_steps == 32
    lora = load_recipe("longlora")
    assert (lora.lora_r, lora.lora_alpha, lora.lora_targets, lora.trainable_extras) == (
        8,
        16,
        ("q_proj", "k_proj", "v_proj", "o_proj"),
        ("embed", "norm"),
    )


def test_infini_recipes_start_the_gates_where_the_method_does():
    """sigmoid(-4) = 0.018: training starts from the model's own attention. The recipes once said 0
    (every head half memory read at step 0) against the method's documented default."""
    from lm_eval_longmem.models.methods.infini import InfiniArgs

    infini = [name for name in shipped_recipes() if load_recipe(name).method == "infini"]
    assert {"infini", "infini-passkey", "tiny-infini", "tiny-infini-passkey"} <= set(infini)
    for name in infini:
        assert load_recipe(name).method_args.get("beta_init", InfiniArgs.beta_init) == InfiniArgs.beta_init == -4.0


def test_overrides_are_typed_and_reach_mappings():
    recipe = load_recipe(
        "yarn",
        [
            "lr=1e-4",
            "max_steps=7",
            "method_args.factor=2",
            "approach=longlora",
            "lora_targets=[q_proj,v_proj]",
            "gradient_checkpointing=false",
        ],
    )
    assert recipe.lr == 1e-4 and recipe.max_steps == 7 and recipe.method_args["factor"] == 2
    assert recipe.method_args["beta_fast"] == 32.0 and recipe.lora_targets == ("q_proj", "v_proj")
    assert recipe.gradient_checkpointing is False


def test_unknown_key_lists_the_valid_ones_in_one_line():
    with pytest.raises(TrainingError, match="unknown recipe key learning_rate on the command line") as err:
        load_recipe("tiny-pi", ["learning_rate=1e-4"])
    assert "Valid keys: name, approach" in str(err.value) and " lr, " in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(TrainingError, match="Did you mean seq_len?"):
        load_recipe("tiny-pi", ["seqlen=64"])


@pytest.mark.parametrize(
    "override, message",
    [
        ("lr=fast", "lr=fast on the command line is not valid: expected a number such as 0.5"),
        ("mixed_precision=fp8", "mixed_precision"),
        ("seq_len=0", r"seq_len=0 on the command line is out of range: expected an integer >= 2"),
        ("s2_group_fraction=0.3", "multiple of its group size"),
    ],
)
def test_bad_values_are_named(override, message):
    with pytest.raises(TrainingError, match=message):
        load_recipe("tiny-longlora", [override])


def test_cli_reports_bad_input_without_a_traceback(capsys):
    assert train_main(["tiny-pi", "learning_rate=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lm-eval-longmem train: error:") and "Traceback" not in err and "Valid keys" in err
    assert train_main(["no-such-recipe"]) == 2
    assert "Shipped recipes: " in capsys.readouterr().err


def test_help_lists_recipes_and_keys(capsys):
    with pytest.raises(SystemExit):
        train_main(["--help"])
    out = capsys.readouterr().out
    assert "tiny-yarn" in out and "longlora" in out and "grad_accum_steps" in out and "accelerate launch" in out


def test_help_shows_each_recipes_whole_first_sentence_wrapped(capsys):
    from lm_eval_longmem_training.cli import summary_of
    from lm_eval_longmem_training.recipes.loading import shipped_recipes

    for name, path in shipped_recipes().items():
        assert summary_of(path).endswith("."), name  # a whole sentence, never cut at a comment line's end
    with pytest.raises(SystemExit):
        train_main(["--help"])
    out = capsys.readouterr().out
    recipes = out.split("Recipes:\n", 1)[1].split("\n\nKeys:", 1)[0]
    assert all(len(line) <= 100 for line in recipes.splitlines())
    assert "clipping 1.0, bf16.\n" in out and "The paper trains" not in out  # fox: its first sentence, and only it
    assert "infini.yaml.\n" in out  # infini-passkey's sentence spans three comment lines


def test_a_recipe_file_by_path(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(json.dumps({"approach": "rope_extension", "method": "pi", "seq_len": 64}))
    recipe = load_recipe(str(path))
    assert recipe.name == "mine" and recipe.seq_len == 64 and recipe.lr == 2e-5


def test_missing_model_or_tokenizer_path_is_one_message(tmp_path, capsys):
    for override in (f"model={tmp_path / 'typo'}", "tokenizer=./no_such_tokenizer"):
        assert train_main(["tiny-yarn", override, f"output_dir={tmp_path / 'run'}", "progress_bar=false"]) == 2
        err = capsys.readouterr().err
        assert "no such file or folder" in err and "Traceback" not in err, err
    assert not (tmp_path / "run" / "export").exists()


def test_the_end_of_a_run_is_said_in_words():
    from lm_eval_longmem_training.cli import done_line

    assert done_line({"steps": 1200, "tokens": 4915200, "tokens_per_second": 131.4, "export": "runs/x/export"}) == (
        "done: 1,200 steps, 4,915,200 tokens in all, 131 tokens/s this run; export: runs/x/export"
    )
    assert done_line({"steps": 2, "tokens": 64, "tokens_per_second": 10.0}).endswith("; no export written")
