"""What passkey retrieval declares to the rest of the package (see tasks/declaration.py)."""

from __future__ import annotations

from lm_eval_longmem.tasks.declaration import Figure, TaskDeclaration, TaskOptions
from lm_eval_longmem.tasks.passkey.headlines import headlines

DECLARATION = TaskDeclaration(
    name="longmem_passkey",
    summary="Passkey retrieval (landmark attention; Infini-attention appendix B): find a number in filler.",
    options=TaskOptions("pk_", "lm_eval_longmem.tasks.passkey.protocol:Options"),
    headlines=headlines,
    inputs_check="lm_eval_longmem.tasks.passkey.protocol:check_inputs_fit",
    figure=Figure(
        subcommand="plot-passkey",
        help="draw longmem_passkey accuracy heatmaps (length x depth) from lm-eval results",
        default_output="passkey.png",
        draw="lm_eval_longmem.report.passkey_plot:draw_for_command",
        describe="lm_eval_longmem.report.passkey_plot:overall_accuracy",
        reader="lm_eval_longmem.report.results_files:passkey_grid_from",
    ),
)
