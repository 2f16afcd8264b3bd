"""The study's tables from its rows' scores: Table 1 (one row per method: PPL, Needle, Mshots,
LongBench, RULER, with training and evaluation lengths and exact attention), Table 2 (perplexity
by length), Needle by length and by depth, Mshots by shots, RULER by length, and the Kendall
correlations behind Figure 2; written as one
Markdown page, one CSV per table and one JSON with everything (intervals included).

Only the suite's columns appear; a cell a row has not produced yet (not run, failed) is "-".
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

from lm_eval_longmem.study.kendall import kendall_tau
from lm_eval_longmem.study.scores import RowScores, Score
from lm_eval_longmem.study.suite import COLUMNS

DOWNSTREAM = ("needle", "mshots", "longbench", "ruler")


@dataclasses.dataclass
class Table:
    name: str
    title: str
    header: list[str]
    rows: list[list[str]]


def _number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _score(score: Score, digits: int = 1) -> str:
    if score.value is None:
        return "-"
    text = f"{score.value:.{digits}f}"
    if score.low is not None and score.high is not None:
        text += f" [{score.low:.{digits}f}, {score.high:.{digits}f}]"
    return text


def _yes(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _length(value: int | None) -> str:
    if value is None:
        return "-"
    return f"{value // 1024}k" if value >= 1024 and value % 1024 == 0 else str(value)


def table1(rows: list[RowScores], columns: list[str]) -> Table:
    header = ["Method", "Kind", "Train len", "Eval len", "Exact"]
    shown = [c for c in ("ppl", *DOWNSTREAM) if c in columns]
    header += [COLUMNS[c].title for c in shown]
    body = []
    for row in rows:
        cells = [row.label, row.kind, _length(row.train_length), _length(row.eval_length), _yes(row.exact)]
        for column in shown:
            score = getattr(row, column)
            cells.append(_number(score.value) if column == "ppl" else _score(score))
        body.append(cells)
    return Table("table1", "Table 1: every method under one budget and one suite", header, body)


def table2(rows: list[RowScores]) -> list[Table]:
    """Perplexity by length: one table for the first corpus, then one per further corpus (the
    study's Table 2 has PG-19 and Proof-pile blocks); titles name the corpus when there are several."""
    others = list(dict.fromkeys(corpus for row in rows for corpus in row.ppl_other_corpora))
    first = next((row.ppl_corpus for row in rows if row.ppl_corpus), None)
    title = "Table 2: perplexity by evaluation length"
    tables = [_ppl_table("table2", f"{title}, {first}" if others and first else title, rows)]
    for number, corpus in enumerate(others, start=2):
        tables.append(_ppl_table(f"table2_corpus{number}", f"{title}, {corpus}", rows, corpus))
    return tables


def _ppl_table(name: str, title: str, rows: list[RowScores], corpus: str | None = None) -> Table:
    """`corpus`: one of the further corpora; None for the first."""
    by_length = [row.ppl_by_length if corpus is None else row.ppl_other_corpora.get(corpus, {}) for row in rows]
    lengths = sorted({n for values in by_length for n in values})
    header = ["Method", "Train len", "Exact", *[_length(n) for n in lengths]]
    body = [
        [row.label, _length(row.train_length), _yes(row.exact), *[_number(values.get(n)) for n in lengths]]
        for row, values in zip(rows, by_length)
    ]
    return Table(name, title, header, body)


def ruler_table(rows: list[RowScores]) -> Table:
    lengths = sorted({n for row in rows for n in row.ruler_by_length})
    header = ["Method", "Train len", *[_length(n) for n in lengths], "Avg"]
    body = [
        [
            row.label,
            _length(row.train_length),
            *[_number(row.ruler_by_length.get(n)) for n in lengths],
            _number(row.ruler.value),
        ]
        for row in rows
    ]
    return Table("ruler_by_length", "RULER by length (mean over its tasks, %)", header, body)


def breakdown_table(rows: list[RowScores], field: str, name: str, title: str, key_text) -> Table:
    """One row per method, one column per key of the row's `field` (a dict of Scores): Needle by
    length or depth, Mshots by shots."""
    keys = sorted({key for row in rows for key in getattr(row, field)})
    header = ["Method", "Train len", *[key_text(key) for key in keys]]
    body = [
        [row.label, _length(row.train_length), *[_score(getattr(row, field).get(key, Score())) for key in keys]]
        for row in rows
    ]
    return Table(name, title, header, body)


def breakdown_tables(rows: list[RowScores], columns: list[str]) -> list[Table]:
    tables = []
    if "needle" in columns:
        tables.append(breakdown_table(rows, "needle_by_length", "needle_by_length", "Needle by length (%)", _length))
        depth = "Needle by depth of the passkey (%, 0 = at the start)"
        tables.append(breakdown_table(rows, "needle_by_depth", "needle_by_depth", depth, lambda d: f"{d}%"))
    if "mshots" in columns:
        shots = "Mshots by number of shots (%)"
        tables.append(breakdown_table(rows, "mshots_by_shots", "mshots_by_shots", shots, str))
    return [t for t in tables if len(t.header) > 2]


def correlations(rows: list[RowScores], columns: list[str]) -> dict[str, dict]:
    """Kendall's tau between PPL and each downstream column, over the methods that have both."""
    found = {}
    for column in DOWNSTREAM:
        if column in columns and "ppl" in columns:
            found[column] = kendall_tau([r.ppl.value for r in rows], [getattr(r, column).value for r in rows])
    return found


def correlation_table(found: dict[str, dict]) -> Table:
    body = [
        [COLUMNS[c].title, _number(v["tau"], 3), _number(v["p_value"], 4), str(v["n"]), v.get("why") or ""]
        for c, v in found.items()
    ]
    header = ["Score", "tau", "p-value", "methods", "note"]
    return Table("kendall", "Kendall's tau between PPL and each score", header, body)


def markdown(table: Table) -> str:
    lines = [f"### {table.title}", "", "| " + " | ".join(table.header) + " |"]
    lines.append("|" + "|".join("---" for _ in table.header) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in table.rows]
    return "\n".join(lines) + "\n"


def write_tables(rows: list[RowScores], columns: list[str], folder: Path) -> dict[str, Path]:
    """tables.md, <table>.csv for each table and study.json; returns the paths by name."""
    folder.mkdir(parents=True, exist_ok=True)
    found = correlations(rows, columns)
    tables = [table1(rows, columns)]
    if "ppl" in columns:
        tables += table2(rows)
    tables += breakdown_tables(rows, columns)
    if "ruler" in columns:
        tables.append(ruler_table(rows))
    if found:
        tables.append(correlation_table(found))
    written = {}
    for table in tables:
        path = folder / f"{table.name}.csv"
        with open(path, "w", newline="", encoding="utf-8") as sink:
            writer = csv.writer(sink)
            writer.writerow(table.header)
            writer.writerows(table.rows)
        written[table.name] = path
    notes = (
        "Scores in percent (Needle, Mshots, RULER) with 95% intervals (Wilson's over the samples, else lm-eval's "
        "standard error) where the score is a mean over samples; PPL at the longest evaluation length.\n"
    )
    page = folder / "tables.md"
    page.write_text("\n".join(markdown(t) for t in tables) + "\n" + notes, encoding="utf-8")
    written["markdown"] = page
    record = {
        "rows": [dataclasses.asdict(r) for r in rows],
        "columns": columns,
        "kendall": found,
    }
    data = folder / "study.json"
    data.write_text(json.dumps(record, indent=2, default=str), encoding="utf-8")
    written["json"] = data
    return written
