"""Classes of modules loaded lazily, read without loading them (the first screen starts without them)."""

from __future__ import annotations

import sys


def loaded_class(module: str, name: str) -> type | None:
    """Class `name` of `module` if that module is loaded, else None (nothing imported for the answer). A module
    the warm-up thread is still importing is in sys.modules without its classes yet: None too."""
    return getattr(sys.modules.get(module), name, None)
