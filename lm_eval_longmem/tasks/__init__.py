"""Our lm-eval tasks: one folder each (YAML + the Python it needs). lm-eval scans TASKS_DIR."""

from pathlib import Path

TASKS_DIR = str(Path(__file__).resolve().parent)
