"""Emory TIPS model: thresholds are strict, bilirubin converts from µmol/L."""

from __future__ import annotations

import pytest

from calcmate.calculators import registry
from calcmate.calculators.spec import CalculatorInputError

EMORY = registry().get("Emory Model (TIPSS)")


@pytest.mark.parametrize("inputs,expected,band", [
    ({"emergent": False, "alt": 101, "bilirubin": 1.0, "encephalopathy": False}, 1, "Medium"),
    ({"emergent": True, "alt": 40, "bilirubin": 3.1, "encephalopathy": True}, 4, "High"),
    ({"emergent": True, "alt": 300, "bilirubin": 5, "encephalopathy": True}, 5, "High"),
    ({"emergent": False, "alt": 20, "bilirubin": 1, "encephalopathy": False}, 0, "Low"),
])
def test_emory_points_and_bands(inputs, expected, band):
    r = EMORY(inputs)
    assert r.value == expected and r.interpretation.startswith(band)


def test_bilirubin_molar_units():
    # 60 µmol/L ≈ 3.5 mg/dL (> 3) scores; 45 µmol/L ≈ 2.6 mg/dL does not
    assert EMORY(emergent=False, alt=20, bilirubin="60 umol/L", encephalopathy=False).value == 1
    assert EMORY(emergent=False, alt=20, bilirubin="45 µmol/L", encephalopathy=False).value == 0


def test_missing_input_names_field():
    with pytest.raises(CalculatorInputError) as e:
        EMORY(emergent=False, bilirubin=1, encephalopathy=False)
    assert e.value.field == "alt"
