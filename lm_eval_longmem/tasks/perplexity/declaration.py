"""What the perplexity task declares to the rest of the package (see tasks/declaration.py)."""

from __future__ import annotations

from lm_eval_longmem.data.pg19_dataset import PG19
from lm_eval_longmem.tasks.declaration import DatasetNeed, Figure, TaskDeclaration, TaskOptions, option_given
from lm_eval_longmem.tasks.perplexity.headlines import headlines, perplexity_value

DECLARATION = TaskDeclaration(
    name="longmem_perplexity",
    summary="Perplexity by context length and the per-position loss curve.",
    options=TaskOptions("ppl_", "lm_eval_longmem.tasks.perplexity.protocol:Options"),
    # ppl_corpus=auto (the default) falls back to the offline corpus: PG-19 only when asked for by name
    datasets=(
        DatasetNeed(
            PG19,
            lambda options: option_given(options, "ppl_corpus") == "pg19",
            local_option="ppl_corpus=shakespeare or a path to text files",
        ),
    ),
    headlines=headlines,
    write_value=perplexity_value,
    figure=Figure(
        subcommand="plot-perplexity",
        help="draw longmem_perplexity perplexity vs length (and loss by position) from lm-eval results",
        default_output="perplexity.png",
        draw="lm_eval_longmem.report.perplexity_plot:draw_for_command",
        describe="lm_eval_longmem.report.perplexity_plot:perplexity_by_length",
    ),
)
