"""Hatchling build hook: put the start-up hook files at the root of site-packages.

`lm_eval` 0.4.13 has no plugin mechanism, so the only way the stock CLI finds our model
and tasks is a `.pth` line (and, for Python >= 3.15, the PEP 829 `.start` file that
replaces it). Both must land beside the package, in site-packages itself, for regular
and editable installs alike — hatchling's `force-include` only covers the former.
"""

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

STARTUP_FILES = {
    "lm_eval_longmem/_startup/lm_eval_longmem_autoload.pth": "lm_eval_longmem_autoload.pth",
    "lm_eval_longmem/_startup/lm_eval_longmem_autoload.start": "lm_eval_longmem_autoload.start",
}


class StartupHookFiles(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        key = "force_include_editable" if version == "editable" else "force_include"
        build_data.setdefault(key, {}).update(STARTUP_FILES)
