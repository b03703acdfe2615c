"""Opiate conversion: equianalgesic ratios, round trips, unit handling, errors."""

from __future__ import annotations

import pytest

from calcmate.calculators import registry
from calcmate.calculators.spec import CalculatorInputError

CONV = registry().get("Opiate Conversion Calculator")


def test_round_trip_is_identity():
    there = CONV(from_drug="Oxycodone PO", daily_dose=45, to_drug="Hydromorphone IV").value
    back = CONV(from_drug="Hydromorphone IV", daily_dose=there, to_drug="Oxycodone PO").value
    assert there == pytest.approx(3.38, abs=0.01) and back == pytest.approx(45, abs=0.1)


def test_route_change_same_drug_and_aliases():
    assert CONV(from_drug="morphine iv", daily_dose=10, to_drug="oral morphine").value == 30.0
    assert CONV(from_drug="Fentanyl IV", daily_dose="100 mcg", to_drug="Morphine IV").value == 10.0


def test_cross_tolerance_reduction():
    r = CONV(from_drug="Morphine PO", daily_dose=120, to_drug="Oxycodone PO", cross_tolerance_reduction="50 %")
    assert r.value == 40.0 and r.details["equianalgesic_dose_mg"] == 80.0


def test_errors_name_the_field():
    with pytest.raises(CalculatorInputError) as e:
        CONV(from_drug="Morphine PO", daily_dose=30, to_drug="Morphine PO")
    assert e.value.field == "to_drug"
    with pytest.raises(CalculatorInputError) as e:
        CONV(from_drug="Methadone PO", daily_dose=30, to_drug="Morphine PO")
    assert e.value.field == "from_drug"
