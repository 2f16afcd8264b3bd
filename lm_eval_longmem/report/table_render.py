"""Write a leaderboard as Markdown (to read or paste), CSV (to load) or JSON (to process).

Markdown rounds for reading; CSV and JSON keep full-precision numbers, JSON with stderr and the
source files of each row. Every column has one number format: Markdown writes each task's
values its one way; CSV writes a column whose values were all recorded as integers (memory
lengths) as integers and any other as floats, so one file's `1` and another's `0.75` read
`1.0` and `0.75`. A lower bound stays one in every format: Markdown and CSV write it the
paper's way (">4095": still met at the longest tested length, so a spreadsheet cannot mistake it
for the exact length), JSON keeps the number and lists the column under `lower_bounds`.
"""

from __future__ import annotations

import csv
import io
import json

from lm_eval_longmem.report.leaderboard import Leaderboard, format_date
from lm_eval_longmem.tasks import registry
from lm_eval_longmem.tasks.headlines import Headline, length_text, three_decimals

FORMATS = ("markdown", "csv", "json")


def render(board: Leaderboard, fmt: str = "markdown") -> str:
    if fmt == "markdown":
        return to_markdown(board)
    if fmt == "csv":
        return to_csv(board)
    if fmt == "json":
        return to_json(board)
    raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")


def readable(cell: Headline | None) -> str:
    """A cell as Markdown writes it: the way its task's declaration says (3 decimals by default)."""
    if cell is None:
        return ""
    declaration = registry.find(cell.column.task)
    return declaration.write_value(cell) if declaration else three_decimals(cell)


def to_markdown(board: Leaderboard) -> str:
    names = board.column_names
    lines = [
        _markdown_line(names),
        "|" + "|".join("---" if n in board.text_columns else "---:" for n in names) + "|",
    ]
    for row in board.rows:
        cells = [str(row.value(name)) for name in names[: len(names) - len(board.columns)]]
        cells += [readable(row.cells.get(column.name)) for column in board.columns]
        lines.append(_markdown_line(cells))
    return "\n".join(lines) + "\n"


def to_csv(board: Leaderboard) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(board.column_names)
    integer_columns = {
        column.name
        for column in board.columns
        if all(isinstance(row.value(column.name), (int, type(None))) for row in board.rows)
    }
    for row in board.rows:
        writer.writerow([_csv_cell(row, name, name in integer_columns) for name in board.column_names])
    return buffer.getvalue()


def _csv_cell(row, name: str, integers: bool):
    """The full-precision value (a float unless its whole column is integers); a lower bound as
    ">L"; blank when the run has none."""
    cell = row.cells.get(name)
    if cell is not None and cell.lower_bound:
        return length_text(cell.value, True)
    value = row.value(name)
    if value is None:
        return ""
    return float(value) if cell is not None and not integers else value


def to_json(board: Leaderboard) -> str:
    records = []
    for row in board.rows:
        records.append(
            {
                "model": row.run.model,
                "method": row.run.method,
                "arguments": row.run.arguments,
                "date": format_date(row.run.date),
                "samples": row.samples,
                "settings": row.differs,
                "values": {c.name: row.cells[c.name].value for c in board.columns if c.name in row.cells},
                "stderr": {
                    c.name: row.cells[c.name].stderr
                    for c in board.columns
                    if c.name in row.cells and row.cells[c.name].stderr is not None
                },
                "lower_bounds": [
                    c.name for c in board.columns if c.name in row.cells and row.cells[c.name].lower_bound
                ],
                "sources": [str(source) for source in row.sources],
            }
        )
    return json.dumps({"columns": board.column_names, "rows": records}, indent=2) + "\n"


def _markdown_line(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |"
