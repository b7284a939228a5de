"""A package's names imported from its submodules on first use (PEP 562), listed in one table.

A package whose `__init__` would otherwise import every submodule (and what those import) for any one name writes
`_MODULES = {submodule: (names, ...)}` and `__getattr__ = lazy_names(__name__, _MODULES)`. The table is a literal
on purpose: quicack.jobs.code_graph reads it to follow `from package import name` to the one submodule that defines the
name, so that a job's code inputs are what it really imports.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module


def lazy_names(package: str, modules: Mapping[str, tuple[str, ...]]) -> Callable[[str], object]:
    """The package's module `__getattr__`: each name of `modules` from its submodule, imported once on first use."""
    module_of = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> object:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
