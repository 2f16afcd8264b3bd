"""What many-shot TREC declares to the rest of the package (see tasks/declaration.py)."""

from __future__ import annotations

from lm_eval_longmem.data.requirements import HubDataset
from lm_eval_longmem.tasks.declaration import DatasetNeed, Figure, TaskDeclaration, TaskOptions, option_given
from lm_eval_longmem.tasks.trec_manyshot.headlines import headlines


def _load_trec():
    from lm_eval_longmem.data.trec import load_trec

    return load_trec()


def _load_manyshots():
    from lm_eval_longmem.data.trec import MANYSHOT_COUNTS, load_manyshot_rows

    return [load_manyshot_rows(shots) for shots in MANYSHOT_COUNTS]


TREC = HubDataset("trec", "CogComp/trec (TREC questions, parquet conversion)", _load_trec, "trec_data_dir=DIR")
MANYSHOTS = HubDataset(
    "trec-manyshots", "Leooyii/manyshots_trec (the published many-shot prompts)", _load_manyshots, "trec_data_dir=DIR"
)


def _from_the_hub(options) -> bool:
    return not option_given(options, "trec_data_dir")


def _published_prompts(options) -> bool:
    return option_given(options, "trec_source") == "manyshots"


def _written_sample(options) -> bool:
    return option_given(options, "trec_source") == "sample"


DECLARATION = TaskDeclaration(
    name="longmem_trec_manyshot",
    summary="Many-shot in-context learning on TREC (the controlled study, §7.5; LongBench's TREC format).",
    options=TaskOptions("trec_", "lm_eval_longmem.tasks.trec_manyshot.protocol:TrecOptions"),
    datasets=(
        DatasetNeed(
            TREC,
            lambda options: _from_the_hub(options) and not _published_prompts(options) and not _written_sample(options),
        ),
        DatasetNeed(MANYSHOTS, lambda options: _from_the_hub(options) and _published_prompts(options)),
    ),
    headlines=headlines,
    figure=Figure(
        subcommand="plot-trec",
        help="draw longmem_trec_manyshot accuracy vs number of shots (one line per run) from lm-eval results",
        default_output="trec_manyshot.png",
        draw="lm_eval_longmem.report.trec_plot:draw_for_command",
        describe="lm_eval_longmem.report.trec_plot:accuracy_by_shots",
    ),
)
