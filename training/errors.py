"""The one error the training CLI reports as a message (no traceback): bad input it can name."""


class TrainingError(RuntimeError):
    """A recipe, its data or its checkpoint cannot be used; the message says why and what to do."""
