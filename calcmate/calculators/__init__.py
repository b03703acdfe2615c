"""Executable, typed, referenced medical calculators. See ``spec`` and ``registry``."""

from calcmate.calculators.registry import Registry, UnknownCalculatorError, get, lookup, registry
from calcmate.calculators.spec import (
    Band,
    Calculator,
    CalculatorInputError,
    Choice,
    Example,
    Input,
    Output,
    Reference,
    Result,
    normalize_name,
    points,
)

__all__ = [
    "Band", "Calculator", "CalculatorInputError", "Choice", "Example", "Input", "Output", "Reference",
    "Registry", "Result", "UnknownCalculatorError", "get", "lookup", "normalize_name", "points", "registry",
]
