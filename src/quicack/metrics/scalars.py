"""A numeric column's aggregate as a Python number: polars types `Series.min()`, `.max()`, `.median()`, `.mean()`
and `.item()` as any Python value a column can hold (a date, text, a list...), and they give None for no rows or
only nulls. These say which of the two a caller expects, and fail loudly on anything else."""

from __future__ import annotations


def optional_number(value: object) -> float | None:
    """The aggregate as a float, or None for no rows / only nulls."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"not a number: {value!r}")
    return float(value)


def number(value: object) -> float:
    """The aggregate of a numeric column that has a value (the caller checked the rows are there)."""
    result = optional_number(value)
    if result is None:
        raise ValueError("no value: an aggregate over no rows or only nulls")
    return result


def integer(value: object) -> int:
    """The aggregate of an integer column that has a value (a count, an index)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"not an integer: {value!r}")
    return value
