"""Skip marks for tests that need an optional extra."""

from __future__ import annotations

import importlib.util

import pytest

# Tests of kvpress (the optional extra) skip where it is not installed: the main .venv has no
# kvpress (it caps transformers below 5.3); ./scripts/test.sh runs the tier again in .venv-kvpress.
#   from tests.helpers.markers import requires_kvpress
#   @requires_kvpress              (or pytestmark = requires_kvpress for a whole module)
KVPRESS_MISSING_REASON = "kvpress is not installed (pip install 'lm-eval-longmem[kvpress]')"
requires_kvpress = pytest.mark.skipif(importlib.util.find_spec("kvpress") is None, reason=KVPRESS_MISSING_REASON)
