"""The study's columns as lm_eval runs, and what LongBench and RULER need before they start.

PPL, Needle and Mshots are this package's tasks (`longmem_perplexity` with the study's sliding
window, `longmem_passkey`, `longmem_trec_manyshot`); their options are the tasks' own
(`lengths: [..]` under `ppl:` is `--metadata ppl_lengths=[..]`), checked by the tasks, and they
share one lm_eval run per row. LongBench and RULER are lm-eval's own `longbench` and `ruler`
groups, one run each: LongBench at the study's evaluation length with the prompt cut in the
middle (`max_length` and `overlength=middle` in the model args, LongBench's own rule), RULER at
`max_seq_lengths`. Those two need lm-eval's `longbench` / `ruler` extras and download their data
at first use: `missing_extras` says which packages are absent, and a study can run without them.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import re
from typing import Any

from lm_eval_longmem.study.schema import Study, StudyConfigError


@dataclasses.dataclass(frozen=True)
class Column:
    name: str
    title: str  # as Table 1 heads it
    task: str
    prefix: str = ""  # our tasks: option prefix of --metadata
    lm_eval_extra: str | None = None  # lm-eval's own tasks: the pip extra they need
    own_run: bool = False  # evaluated in its own lm_eval run (other model args or metadata)
    data: str = ""  # what it downloads at first use, for the notice before a study starts


COLUMNS = {
    "ppl": Column("ppl", "PPL", "longmem_perplexity", prefix="ppl_"),
    "needle": Column("needle", "Needle", "longmem_passkey", prefix="pk_"),
    "mshots": Column("mshots", "Mshots", "longmem_trec_manyshot", prefix="trec_", data="CogComp/trec"),
    "longbench": Column(
        "longbench",
        "LongBench",
        "longbench",
        lm_eval_extra="longbench",
        own_run=True,
        data="Xnhyacinth/LongBench (21 datasets)",
    ),
    "ruler": Column(
        "ruler",
        "RULER",
        "ruler",
        lm_eval_extra="ruler",
        own_run=True,
        data="RULER's essays, SQuAD and HotpotQA",
    ),
}
ORDER = tuple(COLUMNS)
LONGBENCH_KEYS = ("length",)
RULER_KEYS = ("lengths",)


@dataclasses.dataclass(frozen=True)
class EvalPart:
    """One lm_eval run of a row: its tasks, task options and extra model args."""

    name: str  # core | ppl:<second corpus> | longbench | ruler
    columns: tuple[str, ...]
    tasks: tuple[str, ...]
    metadata: dict[str, Any]
    model_args: dict[str, Any]

    @property
    def runs_our_tasks(self) -> bool:
        """Whether its tasks are this package's (checked and fetched by their declarations)."""
        return not any(COLUMNS[c].own_run for c in self.columns)

    @property
    def second_corpus(self) -> str | None:
        """The corpus of a perplexity-only part (a corpus after the first), else None."""
        return self.name.removeprefix(SECOND_CORPUS_PREFIX) if self.name.startswith(SECOND_CORPUS_PREFIX) else None


SECOND_CORPUS_PREFIX = "ppl:"


def check_columns(study: Study) -> None:
    unknown = sorted(set(study.suite) - set(COLUMNS))
    if unknown:
        raise StudyConfigError(
            f"{study.source}: unknown suite column(s) {', '.join(unknown)}; the study's columns: {', '.join(ORDER)}"
        )


def eval_parts(study: Study) -> list[EvalPart]:
    """The lm_eval runs every row gets, from the suite (one for our columns, one per lm-eval group)."""
    check_columns(study)
    core = [name for name in ORDER if name in study.suite and not COLUMNS[name].own_run]
    parts = []
    if core:
        metadata, corpora = {}, []
        for name in core:
            column, options = COLUMNS[name], dict(study.suite[name])
            if name == "ppl" and "corpus" in options:
                corpora = _corpora(study, options["corpus"])
                options["corpus"] = corpora[0]
            metadata.update({column.prefix + key: value for key, value in options.items()})
        parts.append(EvalPart("core", tuple(core), tuple(COLUMNS[n].task for n in core), metadata, {}))
        ppl_options = {key: value for key, value in metadata.items() if key.startswith(COLUMNS["ppl"].prefix)}
        for corpus in corpora[1:]:  # the study's Table 2 reads PG-19 and Proof-pile: one more run each
            ppl_part = {**ppl_options, "ppl_corpus": corpus}
            name = SECOND_CORPUS_PREFIX + corpus
            parts.append(EvalPart(name, ("ppl",), (COLUMNS["ppl"].task,), ppl_part, {}))
    if "longbench" in study.suite:
        options = _options(study, "longbench", LONGBENCH_KEYS)
        length = options.get("length")
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise StudyConfigError(f"{study.source}: suite.longbench needs length: the evaluation length, e.g. 32768")
        parts.append(
            EvalPart("longbench", ("longbench",), ("longbench",), {}, {"max_length": length, "overlength": "middle"})
        )
    if "ruler" in study.suite:
        lengths = _options(study, "ruler", RULER_KEYS).get("lengths")
        if not isinstance(lengths, list) or not lengths or not all(isinstance(n, int) and n > 0 for n in lengths):
            raise StudyConfigError(
                f"{study.source}: suite.ruler needs lengths: a list, e.g. [4096, 8192, 16384, 32768]"
            )
        metadata = {"max_seq_lengths": lengths}
        if "pretrained" not in study.base:
            metadata["tokenizer"] = embedded_model_path()
        parts.append(EvalPart("ruler", ("ruler",), ("ruler",), metadata, {}))
    return parts


def _corpora(study: Study, value) -> list[str]:
    """suite.ppl.corpus: one corpus, or a list of them (the first is Table 1's PPL and Figure 2's)."""
    corpora = value if isinstance(value, list) else [value]
    if not corpora or not all(isinstance(c, str) and c.strip() for c in corpora) or len(set(corpora)) < len(corpora):
        raise StudyConfigError(
            f"{study.source}: suite.ppl.corpus must be a corpus name or path, or a list of different ones, "
            f"e.g. [pg19, /data/proof-pile]; got {value!r}"
        )
    return corpora


def _options(study: Study, column: str, valid) -> dict[str, Any]:
    options = study.suite[column]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise StudyConfigError(
            f"{study.source}: unknown key(s) {', '.join(unknown)} in suite.{column}; valid: {', '.join(valid)}"
        )
    return options


def embedded_model_path() -> str:
    """The embedded default model's folder: RULER's generators need a tokenizer by name."""
    from lm_eval_longmem.models.checkpoint.default_model import default_model_target

    return str(default_model_target())


def check_task_options(study: Study, parts: list[EvalPart]) -> None:
    """Our columns' options, checked by the tasks themselves, before anything runs."""
    from lm_eval_longmem.errors import LongMemError
    from lm_eval_longmem.harness.preflight import check_task_options as check

    for part in parts:
        if not part.runs_our_tasks:
            continue
        try:
            check(list(part.tasks), {**study.base, **part.metadata})
        except LongMemError as err:
            raise StudyConfigError(f"{study.source}: suite: {err}") from None


def extra_requirements(extra: str) -> list[str]:
    """The packages lm-eval's pip extra `extra` installs, read from lm-eval's own metadata."""
    names = []
    for requirement in importlib.metadata.requires("lm_eval") or []:
        if re.search(rf"extra\s*==\s*['\"]{re.escape(extra)}['\"]", requirement):
            name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)
            if not name.startswith("lm_eval"):
                names.append(name)
    return names


def missing_extras(columns) -> dict[str, str]:
    """{column: why} for the lm-eval columns among `columns` whose extra's packages are absent."""
    missing = {}
    for name in columns:
        extra = COLUMNS[name].lm_eval_extra
        if extra is None:
            continue
        absent = [p for p in extra_requirements(extra) if importlib.util.find_spec(p.replace("-", "_")) is None]
        if absent:
            missing[name] = (
                f"lm-eval's '{extra}' extra is not installed (missing: {', '.join(absent)}); "
                f"pip install 'lm_eval[{extra}]'"
            )
    return missing


def missing_data(study: Study, parts: list[EvalPart]) -> dict[str, str]:
    """{column: why} for our columns whose Hub data is neither cached nor reachable (the tasks'
    own declarations say what they need with the options given)."""
    from lm_eval_longmem.data.requirements import FETCH_COMMAND, is_available
    from lm_eval_longmem.tasks import registry
    from lm_eval_longmem.tasks.dataset_needs import local_alternatives, needed

    by_task = {column.task: name for name, column in COLUMNS.items()}
    known = registry.datasets()
    missing = {}
    for part in parts:
        if not part.runs_our_tasks:
            continue
        for key, users in needed(part.tasks, {**study.base, **part.metadata}).items():
            if is_available(known[key])[0]:
                continue
            for task in users:
                column = by_task.get(task, task)
                prefix = COLUMNS[column].prefix if column in COLUMNS else ""
                local = [
                    f"suite.{column}.{option.removeprefix(prefix)}" for option in local_alternatives({key: [task]})
                ]
                missing[column] = (
                    f"{known[key].title} is not in the local cache and the Hub cannot be reached; fetch it with "
                    f"`{FETCH_COMMAND} {key}`" + (f", or give local copies: {', '.join(local)}" if local else "")
                )
    return missing


def unavailable_message(missing: dict[str, str]) -> str:
    lines = [f"  - {column}: {why}" for column, why in missing.items()]
    return (
        "suite column(s) that cannot run here:\n"
        + "\n".join(lines)
        + f"\nOr run the study without them: --without {','.join(missing)}"
    )
