"""The `longmem` model wrapper, its backends (methods/) and its memory-lean scoring."""
