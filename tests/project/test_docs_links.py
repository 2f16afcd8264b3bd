"""The README and docs/ hold together: every relative link resolves, the README stays a front door.

Checked for README.md and every docs/**/*.md: each relative Markdown link `[text](target)` or
image `![alt](target)` outside fenced code blocks (http(s):, mailto: and other schemes are not
followed) must name a file or folder that exists, relative to the Markdown file and inside the
repository. When it carries `#anchor`, the anchor must be the slug of a heading of the target
Markdown file (or of the file itself for a bare `#anchor`).

Slugs follow GitHub's rule, kept simple: the heading's text lower-cased, every character that is
not a letter, digit, `_`, `-` or space dropped (backticks, colons, parentheses, dots, ...),
spaces turned into `-`; a repeated heading gets `-1`, `-2`, ... as on GitHub.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.markdown import lines_outside_fences

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
README_MAX_LINES = 300

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_INLINE_CODE = re.compile(r"(`+).*?\1")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def markdown_files() -> list[Path]:
    return [README, *sorted((ROOT / "docs").rglob("*.md"))]


def slug(heading: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = text.strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in "-_ ")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, line in lines_outside_fences(path.read_text(encoding="utf-8")):
        m = _HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def links(path: Path):
    """(line number, target) of every link outside fenced code and inline code."""
    for number, line in lines_outside_fences(path.read_text(encoding="utf-8")):
        for m in _LINK.finditer(_INLINE_CODE.sub("", line)):
            yield number, m.group(1).strip("<>")


def broken_links(files: list[Path], root: Path = ROOT) -> list[str]:
    problems = []
    for md in files:
        where = md.relative_to(root)
        for number, target in links(md):
            if _SCHEME.match(target) or target.startswith("//"):
                continue
            file_part, _, anchor = target.partition("#")
            resolved = (md.parent / file_part).resolve() if file_part else md
            if not resolved.is_relative_to(root):
                problems.append(f"{where}:{number}: {target} points outside the repository")
                continue
            if not resolved.exists():
                problems.append(f"{where}:{number}: {target}: no such file or folder")
                continue
            if not anchor:
                continue
            if resolved.is_dir() or resolved.suffix.lower() != ".md":
                problems.append(f"{where}:{number}: {target}: #{anchor} on something that is not a Markdown file")
            elif anchor not in anchors(resolved):
                problems.append(
                    f"{where}:{number}: {target}: no heading of {resolved.relative_to(root)} has the slug '{anchor}'"
                )
    return problems


def test_relative_links_in_readme_and_docs_resolve():
    problems = broken_links(markdown_files())
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_readme_stays_a_front_door():
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move detail into docs/"
    )


def test_ci_runs_the_test_command_the_readme_shows():
    text = README.read_text(encoding="utf-8")
    m = re.search(r"^\| set up and run the tests \| `([^`]+)` \|$", text, re.M)
    assert m, "README.md's 'The two commands' table has no 'set up and run the tests' row"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert m.group(1) in (line.strip() for line in ci), f".ci/run does not run the README's test command {m.group(1)!r}"


# The checker itself, on small made-up pages.


def test_slug_follows_githubs_rule():
    assert (
        slug("Bounded KV caches: `statedclm`, `streamingllm`, `longcache`")
        == "bounded-kv-caches-statedclm-streamingllm-longcache"
    )
    assert (
        slug("lm-eval's own long tasks through `longmem` (RULER, LongBench)")
        == "lm-evals-own-long-tasks-through-longmem-ruler-longbench"
    )
    assert slug("Infini-attention: `method=infini`") == "infini-attention-methodinfini"
    assert slug("Task: `longmem_passkey`") == "task-longmem_passkey"


def test_checker_reports_each_broken_link_with_file_and_line(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Page A\n\n## Same\n\n## Same\n", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text(
        "# Top\n"
        "[ok](docs/a.md) [ok](docs/a.md#page-a) [ok](docs/a.md#same-1) [ok](#top)\n"
        "[ok](docs) [web](https://example.com/x) [mail](mailto:a@b.c) `[code](nowhere.md)`\n"
        "```\n[fenced](nowhere.md)\n```\n"
        "[gone](docs/b.md)\n"
        "[bad anchor](docs/a.md#nope) [self](#nope)\n"
        "[out](../elsewhere.md)\n",
        encoding="utf-8",
    )
    problems = broken_links([page], root=tmp_path)
    assert [p.split(": ")[0] for p in problems] == ["README.md:7", "README.md:8", "README.md:8", "README.md:9"], (
        problems
    )
