"""The base of our Python-class tasks: lm-eval's ConfigurableTask, configured by class attributes.

lm-eval builds a YAML task whose `class:` names a Python class by calling it with the YAML's
config (the `class` key included). Each of our tasks states its name, output type and, for
generation tasks, its generation defaults once, as class attributes; the YAML (or the `longmem`
group) adds metadata, and anything it sets wins.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from lm_eval.api.task import ConfigurableTask

logger = logging.getLogger(__name__)

# Names under which tasks of our classes were built in this process: a YAML that `include:`s one
# of ours under a new name (`--include_path`) is still ours (harness/quiet.py reads this).
constructed_task_names: set[str] = set()


class LongMemTask(ConfigurableTask):
    VERSION = 1
    TASK_NAME: ClassVar[str]
    OUTPUT_TYPE: ClassVar[str] = "generate_until"
    GENERATION_KWARGS: ClassVar[dict[str, Any] | None] = None

    def __init__(self, config: dict | None = None, **kwargs):
        config = {k: v for k, v in (config or {}).items() if k != "class"}
        base: dict[str, Any] = {
            "task": self.TASK_NAME,
            "output_type": self.OUTPUT_TYPE,
            "test_split": "test",
            "num_fewshot": 0,
        }
        if self.GENERATION_KWARGS is not None:
            base["generation_kwargs"] = dict(self.GENERATION_KWARGS)
        super().__init__(config={**base, **config}, **kwargs)
        constructed_task_names.add(self.config.task)

    def drop_chat_template(self, request_kwargs: dict, reason: str) -> None:
        """For prompt-free tasks: remove lm-eval's chat-template arguments from a request's
        keyword arguments, and say once per task (not once per document) that they are ignored."""
        wanted = request_kwargs.pop("apply_chat_template", False)
        request_kwargs.pop("chat_template", None)
        if wanted and not getattr(self, "_told_chat_template_ignored", False):
            self._told_chat_template_ignored = True
            logger.warning("%s ignores --apply_chat_template: %s", self.TASK_NAME, reason)

    def override_metric(self, metric_name: str) -> None:
        """lm-eval's `--predict_only` switches every task to the `bypass` metric: the samples are
        logged and nothing is scored. Our tasks score in their own process_results, aggregation
        and higher_is_better, so under `bypass` those step aside too."""
        super().override_metric(metric_name)
        if metric_name != "bypass":
            return
        from lm_eval.api.registry import get_metric, get_metric_aggregation, is_higher_better

        metric = get_metric(metric_name)
        self.process_results = lambda doc, results: {metric_name: metric(results)}
        self.aggregation = lambda: {metric_name: get_metric_aggregation(metric_name)}
        self.higher_is_better = lambda: {metric_name: is_higher_better(metric_name)}
