"""Every calculator in the registry reproduces the worked examples of its primary reference."""

from __future__ import annotations

import datetime as dt

import pytest

from calcmate.calculators import registry

CALCS = sorted(registry(), key=lambda c: c.id)


def _close(got, expected, tol):
    if isinstance(expected, float) or (isinstance(expected, int) and tol):
        return isinstance(got, (int, float)) and abs(got - expected) <= tol
    if isinstance(expected, dt.date):
        return got == expected
    if isinstance(expected, str) and isinstance(got, str):
        return got.strip().casefold() == expected.strip().casefold()
    return got == expected


@pytest.mark.parametrize("calc", CALCS, ids=[c.id for c in CALCS])
def test_has_reference_and_examples(calc):
    assert calc.reference.citation.strip(), f"{calc.id} has no primary citation"
    assert calc.reference.formula.strip(), f"{calc.id} has no formula/points table"
    assert calc.examples, f"{calc.id} has no worked example from its reference"
    assert all(e.source.strip() for e in calc.examples), f"{calc.id}: every example must say where it comes from"
    md = calc.reference_markdown()
    assert calc.name in md and calc.url in md


@pytest.mark.parametrize(
    "calc,ex",
    [(c, e) for c in CALCS for e in c.examples],
    ids=[f"{c.id}-{i}" for c in CALCS for i, _ in enumerate(c.examples)],
)
def test_worked_example(calc, ex):
    got = calc(dict(ex.inputs)).value
    assert _close(got, ex.expected, ex.tol), f"{calc.id}: {dict(ex.inputs)} -> {got!r}, reference says {ex.expected!r} ({ex.source})"
