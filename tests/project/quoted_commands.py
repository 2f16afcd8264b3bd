"""The commands the README and docs quote, read as a user copies them: every line of a fenced or
indented code block that starts with `lm_eval`, `lm-eval-longmem`, `accelerate launch`,
`python benchmarks/` (after any `VAR=value`, `nice -n N` and `.venv/bin/` in front) or
`./scripts/`, its backslash continuations joined and its `# comment` cut off. The shell variables
a block sets first (`META="..."`, `for margs in A B; do`) are kept with each command, so that it
can be checked with each value the user's shell would give it."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STARTS = re.compile(r"^(?:(?:lm_eval|lm-eval-longmem|accelerate launch)(?:\s|$)|python benchmarks/|\./scripts/)")
PREFIX = re.compile(r"^(?:[A-Z_]+=\S+\s+)*(?:nice -n \d+\s+)?(?:\.venv/bin/)?")
ASSIGNMENT = re.compile(r"^([A-Za-z_]+)=(.*)$")
FOR_LOOP = re.compile(r"^for ([A-Za-z_]+) in (.+?); do$")


@dataclass(frozen=True)
class Quoted:
    page: str  # relative to the repository root
    line: int
    command: str  # as written, continuations joined, comment cut off
    variables: dict[str, list[str]] = field(default_factory=dict, hash=False, compare=False)

    def word_lists(self) -> list[list[str]]:
        """The command's words once per value of the block's variables (one list without any)."""
        words = shlex.split(self.command.replace("$(lm-eval-longmem default-model)", "DEFAULT_MODEL_FOLDER"))
        used = [name for name in self.variables if f"${name}" in self.command]
        if not used:
            return [words]
        name = used[0]  # the docs use one variable per command
        return [
            [w for word in words for w in (shlex.split(value) if word == f"${name}" else [word])]
            for value in self.variables[name]
        ]


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def code_lines(text: str):
    """(line number, line) for each line of a fenced or indented block; (number, None) between blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            yield number, None
        elif fenced or line.startswith(("    ", "\t")):
            yield number, line.strip()
        else:
            yield number, None


def without_comment(line: str) -> str:
    """The line up to its `# comment` (the docs put no `#` inside an argument)."""
    return re.sub(r"(^|\s+)#.*$", "", line).strip()


def quoted_commands() -> list[Quoted]:
    found = []
    for page in pages():
        relative = str(page.relative_to(ROOT))
        variables: dict[str, list[str]] = {}
        pending: tuple[int, str] | None = None
        for number, line in code_lines(page.read_text("utf-8")):
            if line is None:
                variables, pending = {}, None
                continue
            if pending is not None:
                start, text = pending
                text = f"{text} {without_comment(line).rstrip(chr(92)).strip()}"
                pending = (start, text) if line.endswith("\\") else None
                if pending is None:
                    found.append(Quoted(relative, start, text, dict(variables)))
                continue
            if match := FOR_LOOP.match(line):
                variables[match.group(1)] = shlex.split(match.group(2))
                continue
            if (match := ASSIGNMENT.match(line)) and len(shlex.split(line)) == 1:
                variables[match.group(1)] = shlex.split(match.group(2))[:1]
                continue
            command = PREFIX.sub("", line)
            if not STARTS.match(command):
                continue
            if line.endswith("\\"):
                pending = (number, without_comment(command).rstrip("\\").strip())
            else:
                found.append(Quoted(relative, number, without_comment(command), dict(variables)))
    return found
