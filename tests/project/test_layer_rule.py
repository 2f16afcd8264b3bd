"""The layer rule of docs/architecture.md, enforced: no module imports from a higher layer,
and no two modules import each other, directly or around a loop.

Imports are read from the source with `ast`, including those inside functions: a lazy import
is still a dependency, only a later one. The package root (`lm_eval_longmem/__init__.py`:
the version and `register()`) sits in the lowest layer so that any module may read the
version; its one lazy import of the harness, in `register()`, is the documented exception.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = {"lm_eval_longmem": REPO / "lm_eval_longmem", "lm_eval_longmem_training": REPO / "training"}

# Lowest first. A module belongs to the layer of the longest prefix that names it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("lm_eval_longmem", "lm_eval_longmem.errors", "lm_eval_longmem.common")),
    ("data and kernels", ("lm_eval_longmem.data", "lm_eval_longmem.kernels")),
    ("model machinery", ("lm_eval_longmem.models",)),
    ("method framework", ("lm_eval_longmem.models.method_framework",)),
    ("methods", ("lm_eval_longmem.models.methods",)),
    ("method registry", ("lm_eval_longmem.models.method_registry",)),
    ("tasks", ("lm_eval_longmem.tasks",)),
    ("harness glue", ("lm_eval_longmem.harness",)),
    ("the lm-eval model", ("lm_eval_longmem.lm_eval_model",)),
    ("reports and sweeps", ("lm_eval_longmem.report", "lm_eval_longmem.sweep")),
    ("training", ("lm_eval_longmem_training",)),
    ("the study", ("lm_eval_longmem.study",)),
    ("command line", ("lm_eval_longmem.cli", "lm_eval_longmem.harness_examples")),
]
# Inside the training module, lowest first, by the same longest-prefix rule. `recipes/` sits on
# both sides of the approaches: they declare their keys with its key modules, and its `Recipe`
# merges those keys (so its loading and folder checks sit above them too).
TRAINING = "lm_eval_longmem_training"
TRAINING_LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("the package and its error", (TRAINING, f"{TRAINING}.errors")),
    (
        "recipe keys",
        tuple(f"{TRAINING}.recipes.{name}" for name in ("key", "key_checks", "config_fields", "yaml_reader")),
    ),
    ("data and modeling", (f"{TRAINING}.data", f"{TRAINING}.modeling")),
    ("approaches", (f"{TRAINING}.approaches",)),
    ("recipes", (f"{TRAINING}.recipes",)),
    ("checkpoints", (f"{TRAINING}.checkpoints",)),
    ("the loop", (f"{TRAINING}.loop",)),
    ("command line", (f"{TRAINING}.cli", f"{TRAINING}.__main__")),
]
# (importer, imported): allowed although it points upward; each says why.
EXCEPTIONS = {
    # `lm_eval_longmem.register()`: the public entry point of the Python API loads the harness lazily.
    ("lm_eval_longmem", "lm_eval_longmem.harness.registration"),
}


def module_files() -> dict[str, Path]:
    """Dotted module name -> source file, for both installed packages."""
    modules = {}
    for package, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ours that `module` imports anywhere in its source."""
    found = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from package import module` imports the module; `from module import name` the module
            candidates = [f"{target}.{alias.name}" for alias in node.names] + [target]
        else:
            continue
        for name in candidates:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
                break
    return found


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    return {module: imports_of(module, path, set(files)) for module, path in files.items()}


def layer_of(module: str, layers: list[tuple[str, tuple[str, ...]]] = LAYERS) -> int:
    best, best_length = None, -1
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_length:
                best, best_length = index, len(prefix)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add its package to LAYERS and to docs/architecture.md")
    return best


GRAPH = import_graph()


def test_every_module_has_a_layer():
    for module in GRAPH:
        layer_of(module)


def test_no_module_imports_from_a_higher_layer():
    upward = [
        f"{importer} ({LAYERS[layer_of(importer)][0]}) imports {imported} ({LAYERS[layer_of(imported)][0]})"
        for importer, targets in sorted(GRAPH.items())
        for imported in sorted(targets)
        if layer_of(imported) > layer_of(importer) and (importer, imported) not in EXCEPTIONS
    ]
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_training_packages_import_only_downward():
    """Inside the training module each package is a layer (training/README.md), lowest first."""
    inside = {m: {t for t in targets if t.startswith(TRAINING + ".")} for m, targets in GRAPH.items()}
    upward = [
        f"{importer} ({TRAINING_LAYERS[layer_of(importer, TRAINING_LAYERS)][0]}) imports {imported} "
        f"({TRAINING_LAYERS[layer_of(imported, TRAINING_LAYERS)][0]})"
        for importer, targets in sorted(inside.items())
        if importer.startswith(TRAINING)
        for imported in sorted(targets)
        if layer_of(imported, TRAINING_LAYERS) > layer_of(importer, TRAINING_LAYERS)
    ]
    assert not upward, "imports from a higher training layer:\n" + "\n".join(upward)


def test_no_import_cycles():
    cycles = strongly_connected(GRAPH)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(sorted(c)) for c in cycles)


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """The groups of two or more modules that reach each other (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(group)
    return groups


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}}, [{"a", "b"}]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [{"a", "b", "c"}]),
        ({"a": {"b"}, "b": set(), "c": {"b"}}, []),
    ],
)
def test_the_cycle_finder_finds_loops_and_only_loops(graph, expected):
    assert sorted(map(sorted, strongly_connected(graph))) == sorted(map(sorted, expected))


def test_the_import_reader_sees_lazy_relative_and_package_imports(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text(
        "from . import sibling\n"
        "from .sub.leaf import thing\n"
        "def later():\n"
        "    import pkg.other\n"
        "    from pkg.sub import leaf\n"
    )
    known = {"pkg", "pkg.mod", "pkg.sibling", "pkg.sub", "pkg.sub.leaf", "pkg.other"}
    assert imports_of("pkg.mod", source, known) == {"pkg.sibling", "pkg.sub.leaf", "pkg.other"}


def test_the_architecture_page_names_every_layer():
    page = (REPO / "docs" / "architecture.md").read_text("utf-8")
    missing = [name for name, _ in LAYERS if name not in page]
    assert not missing, f"docs/architecture.md does not describe the layers {missing}"
