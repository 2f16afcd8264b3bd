"""lm-eval `run` options our runs pass through, each with values lm-eval's own parser accepts, and
what must happen to each: refused at start-up with one line naming the option (exit 2), or run
as lm-eval runs it. The expected outcome is written here, apart from the checks under test
(harness/run_options.py), so that the two can disagree.

Used in-process by tests/harness/test_run_options_fuzz.py (fast: lm-eval's parser and the
start-up check) and end to end by tests/e2e/test_run_options_slow.py (every case as a real run
of the tiny model through `lm-eval-longmem`).

`{dir}` in a value is the folder write_task_files() fills; `run` names the small run a case is
added to: a scoring task (forgetting curve) or, for `--gen_kwargs`, a generation task (passkey).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Case:
    option: str
    value: str
    refused: str | None  # a fragment of the one-line message; None: accepted
    run: str = "fc"  # "fc": a scoring task; "pk": a generation task (for --gen_kwargs)

    @property
    def id(self) -> str:
        return f"{self.option} {self.value}"

    def value_in(self, folder: Path) -> str:
        return self.value.replace("{dir}", str(folder))


LIMIT_FORM = "expected a number of documents per task"
LIMITS = {
    # fractions of the documents, and whole counts
    "0.5": None,
    "0.01": None,
    "0.999": None,
    "1": None,
    "3": None,
    "1e3": None,
    "2.0": None,
    "9e18": None,
    # no documents, negative, not whole, not finite, past what islice takes
    "0": LIMIT_FORM,
    "-0": LIMIT_FORM,
    "-1": LIMIT_FORM,
    "-0.5": LIMIT_FORM,
    "2.5": LIMIT_FORM,
    "1.000001": LIMIT_FORM,
    "nan": LIMIT_FORM,
    "inf": LIMIT_FORM,
    "1e19": LIMIT_FORM,
    "1e30": LIMIT_FORM,
}
# the cases' task is our forgetting curve, which takes no few-shot examples (lm-eval would ignore N)
NUM_FEWSHOT = {"0": None, "3": "does not apply to", "-1": "is negative", "-100": "is negative"}
BATCH_FORM = "is not a batch size"
BATCH_SIZES = {
    "1": None,
    "4": None,
    "64": None,
    "auto": None,
    "auto:4": None,
    "auto:0.5": None,
    "0": BATCH_FORM,
    "-2": BATCH_FORM,
    "1.5": BATCH_FORM,
    "abc": BATCH_FORM,
    "auto:": BATCH_FORM,
    "auto:x": BATCH_FORM,
    "auto:0": BATCH_FORM,
    "auto:-1": BATCH_FORM,
    "autox": BATCH_FORM,
    "²": BATCH_FORM,  # a digit to str.isdigit, not to int()
}
MAX_BATCH_SIZES = {"8": None, "0": "--max_batch_size", "-1": "--max_batch_size"}
GEN_FORM = "is not usable"
GEN_KWARGS = {
    "max_gen_toks=4": None,
    "max_gen_toks=4,until=['\\n']": None,
    "until=stop": None,
    "temperature=0": None,
    "temperature=0.5,do_sample=true": None,
    "top_p=0.9": None,
    "top_k=5": None,
    "do_sample=false": None,
    "max_gen_toks=0": GEN_FORM,
    "max_gen_toks=-1": GEN_FORM,
    "max_gen_toks=abc": GEN_FORM,
    "max_gen_toks=2.5": GEN_FORM,
    "max_gen_toks=true": GEN_FORM,
    "max_new_tokens=-3": GEN_FORM,
    "temperature=abc": GEN_FORM,
    "temperature=-1": GEN_FORM,
    "temperature=nan": GEN_FORM,
    "top_p=0": GEN_FORM,
    "top_p=1.5": GEN_FORM,
    "top_k=-1": GEN_FORM,
    "do_sample=maybe": GEN_FORM,
    "until=5": "is not a stop sequence",
    "until=[1,2]": "is not a stop sequence",
    "do_sample=true,temperature=0": "cannot sample",
}
LENGTH_FORM = "is not a length"
METADATA = {
    "max_length=64": None,
    "max_length=abc": LENGTH_FORM,
    "max_length=0": LENGTH_FORM,
    "max_length=-5": LENGTH_FORM,
    "max_length=1.5": LENGTH_FORM,
    "max_length=[64]": LENGTH_FORM,
}
TASK_FILES = {
    "task.yaml": (  # a plain lm-eval task over a local JSON file: runs offline
        "task: tiny_json_task\ndataset_path: json\ndataset_kwargs:\n  data_files: {dir}/files/docs.jsonl\n"
        "test_split: train\noutput_type: loglikelihood\ndoc_to_text: '{{text}}'\ndoc_to_target: ' {{target}}'\n"
        "metric_list:\n  - metric: acc\n"
    ),
    "broken.yaml": "task: [unclosed\n",
    "a_list.yaml": "- a\n- b\n",
    "no_task_key.yaml": "dataset_path: somewhere\n",
    "empty.yaml": "",
    "bad_function.yaml": "task: t\nclass: !function no_such_module_anywhere.Thing\n",
}
TASKS = {
    "forgetting_curve": None,
    "{dir}/files/task.yaml": None,
    "/no/such/task.yaml": "no task file matches",
    "{dir}/files/nothing_*.yaml": "no task file matches",
    "{dir}/files/broken.yaml": "is not valid YAML",
    "{dir}/files/a_list.yaml": "cannot be read as a task",
    "{dir}/files/empty.yaml": "cannot be read as a task",
    "{dir}/files/no_task_key.yaml": "is not a task file",
    "{dir}/files/bad_function.yaml": "cannot be read as a task",
    "{dir}/files/*.yaml": "cannot be read as a task",  # the glob reaches a_list.yaml first
    "{dir}/empty_folder": "holds no task YAML files",
    ",": "no task named",
    ",,": "no task named",
}

TWICE = "would get"
MODEL_ARGS = {
    "dtype=float32": None,
    "dtype=auto": None,
    "max_batch_size=4": None,  # no --max_batch_size beside it: lm-eval passes none
    "device=cpu": TWICE,
    "batch_size=2": TWICE,
    "dtype=float8": "is not a torch dtype",
    "dtype=cuda": "is not a torch dtype",  # a torch attribute, not a dtype
}
DEVICE_FORM = "is not a device"
DEVICES = {"cpu": None, "cuda:0": None, "tpu": DEVICE_FORM, "cpu:0": DEVICE_FORM, "gpu": DEVICE_FORM}

# an extra task folder: one that is there (even empty), one that is not
INCLUDE_PATHS = {"{dir}/empty_folder": None, "{dir}/no/such/folder": "no such file or directory"}

CASES = [
    *(Case("--limit", value, refused) for value, refused in LIMITS.items()),
    *(Case("--num_fewshot", value, refused) for value, refused in NUM_FEWSHOT.items()),
    *(Case("--batch_size", value, refused) for value, refused in BATCH_SIZES.items()),
    *(Case("--max_batch_size", value, refused) for value, refused in MAX_BATCH_SIZES.items()),
    *(Case("--gen_kwargs", value, refused, run="pk") for value, refused in GEN_KWARGS.items()),
    *(Case("--metadata", value, refused) for value, refused in METADATA.items()),
    *(Case("--tasks", value, refused) for value, refused in TASKS.items()),
    *(Case("--include_path", value, refused) for value, refused in INCLUDE_PATHS.items()),
    *(Case("--model_args", value, refused) for value, refused in MODEL_ARGS.items()),
    *(Case("--device", value, refused) for value, refused in DEVICES.items()),
]


def write_task_files(folder: Path) -> Path:
    """The files and folders the `--tasks` cases name, under `folder`."""
    (folder / "files").mkdir(parents=True, exist_ok=True)
    (folder / "empty_folder").mkdir(exist_ok=True)
    for name, text in TASK_FILES.items():
        (folder / "files" / name).write_text(text.replace("{dir}", str(folder)))
    (folder / "files" / "docs.jsonl").write_text('{"text": "the cat sat on the", "target": "mat"}\n')
    return folder
