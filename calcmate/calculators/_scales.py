"""Helpers for ordinal clinical scales: a choice input whose values are the item's points.

Each option is accepted by its label, its aliases, the points alone ("5") and the label with the
points as MDCalc-style forms print them ("Needs help (+5)", "Needs help (5)").
"""

from __future__ import annotations

from calcmate.calculators.spec import Choice, Input

Level = tuple[str, "int | float", tuple[str, ...]]


def _forms(name: str, val) -> tuple[str, ...]:
    v = f"{val:g}" if isinstance(val, float) else str(val)
    return (f"{name} (+{v})", f"{name} ({v})", f"{name} {v}")


def graded(key: str, label: str, levels: list[Level], *aliases: str, help: str = "") -> Input:
    choices = []
    for lbl, val, als in levels:
        names = (lbl, *als)
        extra = tuple(f for n in names for f in _forms(n, val))
        choices.append(Choice(lbl, val, (str(val), *als, *extra)))
    return Input(key, label, type="choice", aliases=aliases, help=help, choices=tuple(choices))
