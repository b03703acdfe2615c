"""The shared matching rules: MedCalc-Bench's per-row rule and the generic QP/verifier rule."""

from __future__ import annotations

import datetime as dt

import pytest

from calcmate.scoring.tolerance import (
    medcalc_correct,
    parse_date,
    parse_gestational_age,
    parse_number,
    values_match,
)


# -- MedCalc-Bench rules ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "answer,ok",
    [(83.9, True), ("79.742", True), (88.1359, True), (88.14, False), (79.7, False), ("n/a", False), (None, False)],
)
def test_medcalc_decimal_uses_the_row_limits(answer, ok):
    assert medcalc_correct("decimal", answer, "83.93895", "79.742", "88.1359") is ok


@pytest.mark.parametrize("answer,ok", [(3, True), (3.4, True), (2.6, True), (3.5, False), ("3", True), (4, False)])
def test_medcalc_integer_rounds_the_answer(answer, ok):
    assert medcalc_correct("integer", answer, "3", "3", "3") is ok


def test_medcalc_dates_are_exact_across_formats():
    assert medcalc_correct("date", "01/01/2007", "01/01/2007")
    assert medcalc_correct("date", dt.date(2007, 1, 1), "01/01/2007")
    assert medcalc_correct("date", "2007-01-01", "01/01/2007")
    assert not medcalc_correct("date", "01/02/2007", "01/01/2007")
    assert not medcalc_correct("date", "soon", "01/01/2007")


def test_medcalc_gestational_age_is_exact_weeks_and_days():
    truth = "('35 weeks', '4 days')"
    assert medcalc_correct("integer", (35, 4), truth, truth, truth)
    assert medcalc_correct("integer", "(35 weeks, 4 days)", truth, truth, truth)
    assert not medcalc_correct("integer", (35, 5), truth, truth, truth)
    assert not medcalc_correct("integer", 35, truth, truth, truth)


def test_medcalc_bad_truth_raises():
    with pytest.raises(ValueError):
        medcalc_correct("decimal", 1.0, "1.0", "", "")
    with pytest.raises(ValueError):
        medcalc_correct("bogus", 1.0, "1.0", "0.9", "1.1")


# -- generic rule -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "answer,truth,ok",
    [
        (104.9, 100.0, True),
        (105.1, 100.0, False),
        (95.0, 100.0, True),
        (94.9, 100.0, False),
        (-0.53, -0.5486, True),
        (-0.52, -0.5486, False),
        (0.0, 0.0, True),
        (0.1, 0.0, False),
        (3, 3, True),
        (3.4, 3, True),  # integers: round(answer) == truth
        (4, 3, False),
        ("1200 mg", "1200.0 mg", True),
        (1200, "1200.0 mg", True),
        ("1.2 g", "1200.0 mg", True),
        ("1.3 g", "1200.0 mg", False),
        ("1200 mL", "1200.0 mg", False),  # different dimension never matches
        ("348", "348 mOsm/kg Calculated", True),
        ("31 weeks, 1 day", "31 Weeks 1 Day", True),
        ((31, 1), "31 Weeks 1 Day", True),
        ("31 weeks 2 days", "31 Weeks 1 Day", False),
        ("2a", "2A", True),
        ("2", "2A", False),
        ("class iii", "Class III", True),
        ("Class II", "Class III", False),
        ("High risk", "High Risk", True),
        ("2024-03-05", "03/05/2024", True),
        ("03/06/2024", "03/05/2024", False),
        (None, 1.0, False),
        ("no idea", 1.0, False),
        ("150.4 mEq/L", "150 mEq/L", True),
        ("7.5 mmol/L", "135 mg/dL", False),  # mass<->molar needs an analyte; the generic rule never guesses one
    ],
)
def test_values_match(answer, truth, ok):
    assert values_match(answer, truth) is ok


def test_values_match_respects_rel_tol():
    assert values_match(101.5, 100.0, rel_tol=0.02)
    assert not values_match(101.5, 100.0, rel_tol=0.01)


def test_parsers():
    assert parse_date("03/31/2006") == dt.date(2006, 3, 31)
    assert parse_date("not a date") is None
    assert parse_gestational_age("('4 weeks', '3 days')") == (4, 3)
    assert parse_gestational_age("(1 week, 5 days)") == (1, 5)
    assert parse_gestational_age("8 weeks") == (8, 0)
    assert parse_gestational_age("twelve") is None
    assert parse_number("83.9 mL/min") == (83.9, "mL/min")
    assert parse_number([52.5, "kg"]) == (52.5, "kg")
    assert parse_number(True) is None
