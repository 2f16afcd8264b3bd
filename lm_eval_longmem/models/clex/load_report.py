"""transformers' messages about a CLEX checkpoint that method=clex answers, silenced while it loads.

* `from_pretrained` does not know `model.clex_layer.*` and prints a table of them as UNEXPECTED,
  "not ok if you expect identical arch", although method=clex reads them right after. A report
  that names anything else (a missing weight, another unexpected key) passes untouched.
* Reading the config, "Missing validation function ... for 'rope_type'='clex'": transformers has
  no `clex` rope type, and method=clex turns the config into plain RoPE before the model is built.
  The config is read in several places before the method's hooks run (the preflight, the
  wrapper's checks), so this filter stays on from the moment method=clex is imported or a loading
  path registers the model types transformers lacks (models/checkpoint/model_types.py).

`LM_EVAL_LONGMEM_DEBUG=1` keeps everything.
"""

from __future__ import annotations

import contextlib
import logging

from lm_eval_longmem.errors import debugging

REPORT_LOGGER = "transformers.modeling_utils"
ROPE_LOGGER = "transformers.modeling_rope_utils"
LAYER_KEY = ".clex_layer."


class _DropClexRopeValidation(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        return not ("Missing validation function" in message and "clex" in message)


class _DropClexOnlyReport(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001  (a broken record is not ours to judge)
            return True
        if "LOAD REPORT" not in message:
            return True
        rows = [line.split("|") for line in message.splitlines() if line.count("|") >= 2]
        entries = [(cells[0].strip(), cells[1].strip()) for cells in rows if cells[1].strip() not in ("Status", "")]
        entries = [(key, status) for key, status in entries if not set(key) <= {"-", "+"}]
        return not entries or not all(status == "UNEXPECTED" and LAYER_KEY in key for key, status in entries)


def drop_clex_rope_validation_message() -> None:
    """Install the rope-type filter once (idempotent); nothing is dropped while debugging."""
    logger = logging.getLogger(ROPE_LOGGER)
    if not debugging() and not any(isinstance(f, _DropClexRopeValidation) for f in logger.filters):
        logger.addFilter(_DropClexRopeValidation())


@contextlib.contextmanager
def quiet_clex_loading():
    """While a CLEX checkpoint's weights load: drop a load report that lists only its CLEX tensors."""
    if debugging():
        yield
        return
    logger, drop = logging.getLogger(REPORT_LOGGER), _DropClexOnlyReport()
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)
