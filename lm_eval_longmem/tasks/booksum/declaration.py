"""What BookSum declares to the rest of the package (see tasks/declaration.py)."""

from __future__ import annotations

from lm_eval_longmem.data.requirements import HubDataset
from lm_eval_longmem.tasks.booksum.headlines import headlines, one_decimal
from lm_eval_longmem.tasks.declaration import DatasetNeed, Figure, TaskDeclaration, TaskOptions, option_given


def _load_booksum():
    from lm_eval_longmem.data.booksum import SPLITS, load_booksum_split

    return [load_booksum_split(split) for split in SPLITS]


BOOKSUM = HubDataset(
    "booksum", "abertsch/booksum-fullbooks (book-level BookSum, all splits)", _load_booksum, "bs_data=PATH"
)

DECLARATION = TaskDeclaration(
    name="longmem_booksum",
    summary="Book-level BookSum (Infini-attention section 3.2): Rouge of a book's summary by how much of it is read.",
    options=TaskOptions("bs_", "lm_eval_longmem.tasks.booksum.protocol:BookSumOptions"),
    datasets=(DatasetNeed(BOOKSUM, lambda options: not option_given(options, "bs_data")),),
    headlines=headlines,
    write_value=one_decimal,
    figure=Figure(
        subcommand="plot-booksum",
        help="draw longmem_booksum overall Rouge against the input budget (one line per run) from lm-eval results",
        default_output="booksum.png",
        draw="lm_eval_longmem.report.booksum_plot:draw_for_command",
        describe="lm_eval_longmem.report.booksum_plot:overall_by_budget",
    ),
)
