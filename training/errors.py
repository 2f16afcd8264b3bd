"""The one error the training CLI reports as a message (no traceback): bad input it can name."""

from lm_eval_longmem.errors import LongMemError


class TrainingError(LongMemError, RuntimeError):
    """A recipe, its data or its checkpoint cannot be used; the message says why and what to do."""
