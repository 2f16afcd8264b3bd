"""Hatchling build hook: put the start-up hook files at the root of site-packages.

`lm_eval` 0.4.13 has no plugin mechanism, so the only way the stock CLI finds our model
and tasks is a `.pth` line (and, for Python >= 3.15, the PEP 829 `.start` file that
replaces it). Both must land beside the package, in site-packages itself, for regular
and editable installs alike — hatchling's `force-include` only covers the former.

Editable installs also map `lm_eval_longmem_training` to the live `training/` folder. Wheels
rename the folder with hatchling's `sources` option (pyproject.toml), but hatchling's dev mode
refuses such a rename, so this hook asks `editables` (the library hatchling's own
`dev-mode-exact` uses) for its standard import redirect: a meta-path finder that imports the
package from training/, nothing generated besides that one mapping.
"""

import os
import tempfile

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

STARTUP_FILES = {
    "lm_eval_longmem/harness/_startup/lm_eval_longmem_autoload.pth": "lm_eval_longmem_autoload.pth",
    "lm_eval_longmem/harness/_startup/lm_eval_longmem_autoload.start": "lm_eval_longmem_autoload.start",
}
# Import name -> folder, for editable installs (the wheel's `sources` rewrite, pyproject.toml).
RENAMED_PACKAGES = {"lm_eval_longmem_training": "training"}


class StartupHookFiles(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        key = "force_include_editable" if version == "editable" else "force_include"
        build_data.setdefault(key, {}).update(STARTUP_FILES)
        if version == "editable":
            files, dependencies = editable_redirects(self.metadata.core.name, self.root)
            build_data[key].update(files)
            build_data.setdefault("dependencies", []).extend(dependencies)


def editable_redirects(project_name: str, root: str) -> tuple[dict[str, str], list[str]]:
    """`editables`' files mapping each renamed package to its folder ({temporary file: name in
    the wheel}), and the runtime requirement they bring (the `editables` redirector)."""
    from editables import EditableProject  # hatchling's editable builds always install it
    from hatchling.builders.constants import EDITABLES_REQUIREMENT

    project = EditableProject(project_name, root)
    for name, folder in RENAMED_PACKAGES.items():
        project.map(name, folder)
    files = {}
    for name, content in project.files():
        handle, path = tempfile.mkstemp(prefix="lm_eval_longmem_editable_", suffix=os.path.splitext(name)[1])
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(content)
        files[path] = name
    dependencies = [EDITABLES_REQUIREMENT if dep == "editables" else dep for dep in project.dependencies()]
    return files, dependencies
