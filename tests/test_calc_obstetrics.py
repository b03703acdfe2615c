"""Pregnancy dating: cycle-length sign, date formats, GA from LMP or due date, bad dates."""

import datetime as dt

import pytest

from calcmate.calculators import CalculatorInputError, registry

R = registry()


@pytest.mark.parametrize("cycle,expected", [(28, dt.date(2021, 10, 15)), (21, dt.date(2021, 10, 8)),
                                            (35, dt.date(2021, 10, 22))])
def test_due_date_shifts_with_cycle_length_sign(cycle, expected):
    assert R.get("Estimated Due Date")(lmp="01/08/2021", cycle_length=cycle).value == expected


def test_conception_is_lmp_plus_14_with_ovulation_detail():
    r = R.get("estimated_conception_date")(lmp="2019-08-28", cycle_length=23)
    assert r.value == dt.date(2019, 9, 11)
    assert r.details["ovulation_adjusted"] == dt.date(2019, 9, 6)


def test_gestational_age_from_lmp_or_due_date():
    ga = R.get("Gestational Age")
    assert ga(current_date="01/04/2011", lmp="05/11/2010").value == (34, 0)
    assert ga(current_date="2024-01-01", due_date="2024-01-01").value == (40, 0)
    with pytest.raises(CalculatorInputError) as e:
        ga(current_date="2024-01-01")
    assert e.value.field == "lmp"
    with pytest.raises(CalculatorInputError) as e:
        ga(current_date="2020-01-01", lmp="2021-01-01")
    assert e.value.field == "current_date"
    with pytest.raises(CalculatorInputError) as e:
        ga(current_date="yesterday", lmp="2021-01-01")
    assert e.value.field == "current_date"


def test_cycle_length_range():
    with pytest.raises(CalculatorInputError) as e:
        R.get("estimated_due_date")(lmp="2021-01-01", cycle_length=60)
    assert e.value.field == "cycle_length"
