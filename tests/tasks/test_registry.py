"""The task registry: every fact about a task comes from its own folder's declaration.

The proof that adding a task is one new folder: a throw-away task in a temporary folder, added
through the registry's one hook (`registry.TASK_FOLDERS`), is checked at start-up, listed by
`lm-eval-longmem tasks`, fetched by `fetch-data`, named by the missing-datasets check and shown
on the leaderboard, with no other edit. Then: the registry sees exactly our six tasks, with the
options, datasets and order the old tables had."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from lm_eval_longmem.cli import main
from lm_eval_longmem.common import hub
from lm_eval_longmem.data.requirements import MissingDatasetsError
from lm_eval_longmem.harness import preflight
from lm_eval_longmem.tasks import registry
from lm_eval_longmem.tasks.dataset_needs import missing_for, needed
from lm_eval_longmem.tasks.task_options import TaskOptionError
from tests.helpers.results_files import lm_eval_results, table_rows, write

TOY_DECLARATION = '''
"""A throw-away task: one option, one (fake) Hub dataset, one headline."""

import os
from dataclasses import dataclass, field
from pathlib import Path

from lm_eval_longmem.data.hub_datasets import DatasetUnavailableError
from lm_eval_longmem.data.requirements import HubDataset
from lm_eval_longmem.tasks.declaration import DatasetNeed, TaskDeclaration, TaskOptions, option_given
from lm_eval_longmem.tasks.headlines import bucket_headlines
from lm_eval_longmem.tasks.task_options import TaskOptionError, check_range

CALLS = Path(__file__).parent / "loader_calls.txt"


@dataclass(frozen=True)
class ToyOptions:
    size: int = field(default=3, metadata={"help": "how many toys per document"})

    def validate(self):
        check_range("toy_size", self.size, 1, error=TaskOptionError)


def load_toys():
    with CALLS.open("a") as calls:
        calls.write("loaded\\n")
    if os.environ.get("TOY_DATA_MISSING"):
        raise DatasetUnavailableError("the toy dataset is not cached")


TOYS = HubDataset("toy-data", "someone/toy-data (toys for the throw-away task)", load_toys, "toy_local=DIR")


def headlines(metrics, task):
    return bucket_headlines(task, metrics, "score@", "", lambda n: f"toy@{n}")


DECLARATION = TaskDeclaration(
    name="toy_task",
    summary="A throw-away task that proves one folder is enough.",
    options=TaskOptions("toy_", ToyOptions),
    datasets=(DatasetNeed(TOYS, lambda options: not option_given(options, "toy_local")),),
    headlines=headlines,
)
'''

TOY_YAML = """task: toy_task
dataset_path: json
output_type: loglikelihood
doc_to_text: "{{text}}"
doc_to_target: "{{target}}"
metadata:
  version: 1.0
"""


@pytest.fixture
def toy_task(tmp_path, monkeypatch):
    """A folder holding one task, `toy_task`, added to the registry by its hook; the loader's calls."""
    folder = tmp_path / "more_tasks" / "toy_task"
    folder.mkdir(parents=True)
    (folder / "toy_task.yaml").write_text(TOY_YAML)
    (folder / "declaration.py").write_text(textwrap.dedent(TOY_DECLARATION))
    monkeypatch.setattr(registry, "TASK_FOLDERS", (*registry.TASK_FOLDERS, folder.parent))
    return folder / "loader_calls.txt"


def test_a_new_task_folder_has_its_options_checked_at_start_up(toy_task):
    preflight.check_task_options(["toy_task"], {"toy_size": "5"})
    for bad, expected in (
        ({"toy_size": "0"}, "toy_size"),
        ({"toy_size": "many"}, "toy_size=many is malformed"),
        ({"toy_colour": "red"}, "Unknown option(s) toy_colour; valid: toy_size"),
    ):
        with pytest.raises(TaskOptionError, match=expected.replace("(", r"\(").replace(")", r"\)")) as refused:
            preflight.check_task_options(["toy_task"], bad)
        assert "\n" not in str(refused.value)


def test_a_new_task_folder_is_listed_by_the_tasks_subcommand(toy_task, capsys):
    assert main(["tasks"]) == 0
    listing = capsys.readouterr().out
    assert "  toy_task: A throw-away task that proves one folder is enough." in listing
    assert "      toy_size: int = 3  (how many toys per document)" in listing
    assert "may need: toy-data (someone/toy-data (toys for the throw-away task)" in listing
    assert main(["tasks", "toy_task"]) == 0
    assert "forgetting_curve" not in capsys.readouterr().out


def test_a_new_task_folders_dataset_is_fetched_and_named_when_missing(toy_task, monkeypatch, capsys):
    monkeypatch.setattr(hub, "hub_reachable", lambda: True)
    assert main(["fetch-data", "toy-data"]) == 0
    assert "fetching toy-data: someone/toy-data" in capsys.readouterr().out
    assert toy_task.read_text() == "loaded\n"

    assert needed(["toy_task"]) == {"toy-data": ["toy_task"]}
    assert needed(["toy_task"], {"toy_local": "/toys"}) == {}
    monkeypatch.setenv("TOY_DATA_MISSING", "1")
    with pytest.raises(MissingDatasetsError) as missing:
        missing_for(["toy_task", "longmem_passkey"])
    assert "someone/toy-data (toys for the throw-away task), for toy_task" in str(missing.value)
    assert "lm-eval-longmem fetch-data toy-data" in str(missing.value) and "--metadata toy_local=DIR" in str(
        missing.value
    )


def test_a_new_task_folders_headline_is_on_the_leaderboard(toy_task, tmp_path, capsys):
    write(
        tmp_path / "runs" / "toy" / "results_2026-11-23T10-00-00.000001.json",
        lm_eval_results(
            {
                "toy_task": {"alias": "toy_task", "score@0100,none": 0.5, "score@0100_stderr,none": 0.1},
                "longmem_passkey": {"acc,none": 0.75, "acc_stderr,none": 0.1},
            }
        ),
    )
    assert main(["leaderboard", str(tmp_path / "runs")]) == 0
    (row,) = table_rows(capsys.readouterr().out)
    assert row["toy@100"] == "0.500" and row["passkey_all"] == "0.750"
    assert list(row).index("passkey_all") < list(row).index("toy@100")  # ours in the group first, then the rest


# --- our six tasks, as the old tables had them (BookSum added last) ------------------------------

OLD_OPTION_CLASSES = {
    "forgetting_curve": ("lm_eval_longmem.tasks.forgetting_curve.protocol", "Options"),
    "longmem_passkey": ("lm_eval_longmem.tasks.passkey.protocol", "Options"),
    "longmem_trec_manyshot": ("lm_eval_longmem.tasks.trec_manyshot.protocol", "TrecOptions"),
    "longmem_topicret": ("lm_eval_longmem.tasks.topicret.protocol", "TopicRetOptions"),
    "longmem_perplexity": ("lm_eval_longmem.tasks.perplexity.protocol", "Options"),
    "longmem_booksum": ("lm_eval_longmem.tasks.booksum.protocol", "BookSumOptions"),
}


def test_the_registry_sees_our_six_tasks_in_the_old_order_with_their_options():
    assert registry.task_names() == list(OLD_OPTION_CLASSES)
    assert registry.group_members() == list(OLD_OPTION_CLASSES)
    for name, (module_name, class_name) in OLD_OPTION_CLASSES.items():
        options = registry.find(name).options
        cls = options.load()
        assert (cls.__module__, cls.__name__) == (module_name, class_name)
        assert options.prefix == sys.modules[module_name].OPTION_PREFIX
        assert all(field.metadata.get("help") for field in options.fields()), f"{name}: an option without help"
    assert registry.find("hellaswag") is None


def test_the_registry_has_the_old_datasets_once_each():
    datasets = registry.datasets()
    assert list(datasets) == ["pg19", "trec", "trec-manyshots", "leval-topicret", "booksum"]
    assert [d.local_option for d in datasets.values()] == [
        "fc_corpus=shakespeare or a path to text files",
        "trec_data_dir=DIR",
        "trec_data_dir=DIR",
        "topicret_data=PATH",
        "bs_data=PATH",
    ]
    users = {
        key: [d.name for d in registry.declarations() if any(n.dataset.key == key for n in d.datasets)]
        for key in datasets
    }
    assert users == {
        "pg19": ["forgetting_curve", "longmem_perplexity"],
        "trec": ["longmem_trec_manyshot"],
        "trec-manyshots": ["longmem_trec_manyshot"],
        "leval-topicret": ["longmem_topicret"],
        "booksum": ["longmem_booksum"],
    }
    assert needed(["forgetting_curve", "longmem_perplexity"], {"fc_corpus": "pg19", "ppl_corpus": "pg19"}) == {
        "pg19": ["forgetting_curve", "longmem_perplexity"]
    }


def test_a_shared_dataset_is_replaced_by_each_tasks_own_option(monkeypatch, capsys):
    """PG-19 serves two tasks: a perplexity user is told `ppl_corpus`, not the forgetting curve's
    `fc_corpus`, wherever the local alternative is named."""
    from lm_eval_longmem.tasks import dataset_needs

    assert registry.find("longmem_perplexity").alternative_to("pg19").startswith("ppl_corpus=shakespeare")
    assert registry.find("forgetting_curve").alternative_to("pg19").startswith("fc_corpus=shakespeare")
    assert registry.find("forgetting_curve").alternative_to("trec") is None
    monkeypatch.setattr(dataset_needs, "is_available", lambda dataset: (False, "offline"))
    with pytest.raises(MissingDatasetsError) as missing:
        missing_for(["longmem_perplexity"], {"ppl_corpus": "pg19"})
    assert "--metadata ppl_corpus=" in str(missing.value) and "fc_corpus" not in str(missing.value)
    assert main(["tasks", "longmem_perplexity"]) == 0
    listing = capsys.readouterr().out
    assert "or --metadata ppl_corpus=shakespeare" in listing and "fc_corpus" not in listing

    monkeypatch.setattr(hub, "hub_reachable", lambda: False)
    with pytest.raises(hub.HubUnavailableError) as offline:
        main(["fetch-data", "pg19"])
    assert "--metadata fc_corpus=shakespeare" in str(offline.value) and "--metadata ppl_corpus=" in str(offline.value)
    assert "trec_data_dir" not in str(offline.value)  # only the datasets asked for


def test_figures_are_declared_with_their_old_subcommands_and_help():
    from lm_eval_longmem.report.figures import LOG_AXIS_RULE
    from lm_eval_longmem.tasks.forgetting_curve.declaration import LOG_AXIS_HELP

    figures = {d.figure.subcommand: d.name for d in registry.declarations() if d.figure}
    assert figures == {
        "plot": "forgetting_curve",
        "plot-passkey": "longmem_passkey",
        "plot-trec": "longmem_trec_manyshot",
        "plot-perplexity": "longmem_perplexity",
        "plot-booksum": "longmem_booksum",
    }
    assert LOG_AXIS_HELP == f"log-scale length axis (default: {LOG_AXIS_RULE})"


def test_two_declarations_of_one_task_are_refused(tmp_path, monkeypatch):
    folder = tmp_path / "again" / "forgetting_curve_copy"
    folder.mkdir(parents=True)
    (folder / "declaration.py").write_text(
        "from lm_eval_longmem.tasks.forgetting_curve.declaration import DECLARATION\n"
    )
    monkeypatch.setattr(registry, "TASK_FOLDERS", (*registry.TASK_FOLDERS, folder.parent))
    with pytest.raises(registry.TaskDeclarationError, match="'forgetting_curve' is declared twice"):
        registry.declarations()


def test_an_unknown_task_name_is_one_line_with_the_valid_names(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["tasks", "passkey"])
    error = capsys.readouterr().err
    assert stopped.value.code == 2 and error.count("\n") == 1
    assert "Did you mean longmem_passkey?" in error and "forgetting_curve, longmem_passkey" in error


def test_declarations_are_read_without_anything_heavy():
    """Read at start-up before any model loads: no torch, transformers, numpy or lm-eval task code."""
    code = (
        "import sys; from lm_eval_longmem.tasks import registry; registry.declarations(); registry.datasets(); "
        "print(sorted(m for m in ('torch', 'transformers', 'numpy', 'lm_eval') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
