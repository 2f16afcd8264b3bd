"""The base of our Python-class tasks: lm-eval's ConfigurableTask, configured by class attributes.

lm-eval builds a YAML task whose `class:` names a Python class by calling it with the YAML's
config (the `class` key included). Each of our tasks states its name, output type and, for
generation tasks, its generation defaults once, as class attributes; the YAML (or the `longmem`
group) adds metadata, and anything it sets wins.
"""

from __future__ import annotations

from typing import Any, ClassVar

from lm_eval.api.task import ConfigurableTask


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
