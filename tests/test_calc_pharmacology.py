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


def test_liquid_dosing_units_and_cap():
    liquid = registry().get("Weight-based liquid medication dosing")
    r = liquid(weight="44 lb", dose_mg_per_kg=15, concentration="0.032 g/mL")
    assert r.value == pytest.approx(9.36, abs=0.01) and r.details["dose_mg"] == pytest.approx(299.4, abs=0.1)
    assert liquid(weight=80, dose_mg_per_kg=10, concentration=20, max_dose=500).value == 25.0
    with pytest.raises(CalculatorInputError) as e:
        liquid(weight=20, dose_mg_per_kg=15, concentration="160 mg/5 mL")
    assert e.value.field == "concentration"
