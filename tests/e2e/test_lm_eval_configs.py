"""Our tasks inside lm-eval's own configuration: the shipped group that mixes them with built-in
long-context tasks, a user's YAML that `include:`s one of ours with changed options and one of
lm-eval's (BABILong qa1) with a local fixture, run offline through `lm_eval run --config FILE` (lm-eval 0.4.13's
configuration-file option)."""

import json
from pathlib import Path

import lm_eval
import yaml

from lm_eval_longmem.harness.registration import tasks_dir
from lm_eval_longmem.harness_examples import HARNESS_EXAMPLES_DIR
from tests.helpers.cli_runs import BIN, run
from tests.helpers.tiny_llama import build_tiny_model

# BABILong (qa1) needs no extra packages; its data come from a local fixture instead of the Hub.
BABILONG_QA1 = Path(lm_eval.__file__).parent / "tasks" / "babilong" / "babilong_qa1.yaml"


def test_the_shipped_mixed_group_names_only_known_tasks():
    from lm_eval.tasks import TaskManager

    import lm_eval_longmem

    lm_eval_longmem.register()
    manager = TaskManager(include_path=str(HARNESS_EXAMPLES_DIR))
    group = yaml.safe_load((HARNESS_EXAMPLES_DIR / "longmem_with_builtins.yaml").read_text())
    members = [m["task"] if isinstance(m, dict) else m for m in group["task"]]
    assert group["group"] in manager.all_groups
    assert {"forgetting_curve", "longmem_passkey"} < set(members)
    assert any(m.startswith("niah_") for m in members) and any(m.startswith("longbench_") for m in members)
    assert set(members) <= set(manager.all_tasks), set(members) - set(manager.all_tasks)


def test_a_users_yaml_includes_our_task_and_a_builtin_one_through_a_config_file(corpus_file, tmp_path):
    model = build_tiny_model(tmp_path / "tiny", max_position_embeddings=512)
    user = tmp_path / "my_tasks"
    user.mkdir()
    (user / "my_forgetting_curve.yaml").write_text(
        yaml.safe_dump(
            {
                "include": str(tasks_dir() / "forgetting_curve" / "forgetting_curve.yaml"),
                "task": "my_forgetting_curve",
                "metadata": {"version": 1.0, "fc_lengths": [8, 16], "fc_samples": 2},  # our options, changed
            }
        )
    )
    fixture = tmp_path / "qa1.jsonl"
    fixture.write_text(
        "".join(
            json.dumps(
                {
                    "input": f"Mary went to the {place}. John went to the garden.",
                    "question": "Where is Mary?",
                    "target": f"The most recent location of Mary is {place}.",
                }
            )
            + "\n"
            for place in ("kitchen", "hallway", "office")
        )
    )
    (user / "my_babilong.yaml").write_text(
        yaml.safe_dump(
            {
                "include": str(BABILONG_QA1),  # lm-eval's own task: its prompt, few-shot examples and metric
                "task": "my_babilong_qa1",
                "custom_dataset": None,
                "dataset_path": "json",
                "dataset_kwargs": {"data_files": {"qa1": str(fixture)}},
                "generation_kwargs": {"max_gen_toks": 4, "until": [], "do_sample": False},
            }
        )
    )
    (user / "my_mix.yaml").write_text(
        yaml.safe_dump(
            {"group": "my_memory_mix", "task": ["my_forgetting_curve", "my_babilong_qa1"], "metadata": {"version": 1.0}}
        )
    )
    out = tmp_path / "out"
    config = tmp_path / "run.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "model": "longmem",
                "model_args": {"pretrained": str(model), "method": "vanilla"},
                "tasks": ["my_memory_mix"],
                "include_path": str(user),
                "device": "cpu",
                "output_path": str(out),
                "metadata": {"fc_corpus": str(corpus_file)},
            }
        )
    )
    run([str(BIN / "lm_eval"), "run", "--config", str(config)])
    (path,) = out.glob("*/results_*.json")
    assert path.parent.name == "tiny__vanilla"
    results = json.loads(path.read_text())
    curve = results["results"]["my_forgetting_curve"]["curve,none"]
    assert [p["length"] for p in curve["points"]] == [8, 16] and curve["points"][0]["num_samples"] == 2
    assert 0 <= results["results"]["my_babilong_qa1"]["acc,none"] <= 1
    assert results["n-samples"]["my_babilong_qa1"]["effective"] == 3
    assert results["configs"]["my_babilong_qa1"]["num_fewshot"] == 2  # the built-in's own settings came along
