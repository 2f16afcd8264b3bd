"""Reading Markdown the way a renderer does, for the docs tests: code fences hide their lines."""

from __future__ import annotations

import re

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def lines_outside_fences(text: str):
    """(line number, line) for every line outside fenced code blocks (a fence closes only on a
    line of the same character, at least as long, with nothing after it)."""
    fence = None
    for number, line in enumerate(text.splitlines(), start=1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                continue
            yield number, line
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line[m.end() :].strip():
            fence = None
