"""Registry lookup, validation and bad-input behaviour (on the shipped registry and a local one)."""

import pytest

from calcmate.calculators import CalculatorInputError, Registry, UnknownCalculatorError, normalize_name, registry
from calcmate.calculators.renal import COCKCROFT_GAULT
from calcmate.domains import Domain


def test_normalize_name_is_case_punctuation_unicode_insensitive():
    assert normalize_name("SpO₂/FiO₂ Ratio") == normalize_name("spo2 / fio2 RATIO") == "spo2 fio2 ratio"
    assert normalize_name("CHA₂DS₂-VASc") == normalize_name("cha2ds2 vasc")
    assert normalize_name("Parkinson’s") == normalize_name("Parkinson's")
    assert normalize_name("µmol/L") == normalize_name("umol/l")


def test_lookup_by_id_alias_and_domain():
    r = registry()
    assert r.get("cockcroft_gault") is r.get("CREATININE CLEARANCE (Cockcroft–Gault equation)") is r.get("crcl")
    assert all(c.domain == Domain.MEDICINE for c in r.by_domain("Medicine & Organ Systems"))
    assert r.get("cockcroft_gault") in r.by_domain(Domain.MEDICINE)


def test_unknown_name_suggests():
    with pytest.raises(UnknownCalculatorError) as e:
        registry().get("Cockroft Gault creatinine clearence")
    assert "Creatinine Clearance (Cockcroft-Gault Equation)" in str(e.value)


def test_duplicate_alias_and_bad_bundle_rejected():
    with pytest.raises(ValueError, match="duplicate calculator id"):
        Registry([COCKCROFT_GAULT, COCKCROFT_GAULT])
    with pytest.raises(ValueError, match="unknown calculators"):
        Registry([COCKCROFT_GAULT], {"Kidney bundle": ("cockcroft_gault", "nope")})
    r = Registry([COCKCROFT_GAULT], {"Kidney bundle": ("cockcroft_gault",)})
    assert r.resolve("kidney BUNDLE") == (COCKCROFT_GAULT,)


def test_bad_input_names_field_and_reason():
    cg = COCKCROFT_GAULT
    with pytest.raises(CalculatorInputError, match=r"'creatinine': missing required input"):
        cg(age=50, sex="male", weight=70)
    with pytest.raises(CalculatorInputError, match=r"'weight': .*above the allowed maximum"):
        cg(age=50, sex="male", weight=900, creatinine=1)
    with pytest.raises(CalculatorInputError, match=r"'creatinine': unknown unit 'blorps'"):
        cg(age=50, sex="male", weight=70, creatinine=(1, "blorps"))
    with pytest.raises(CalculatorInputError, match=r"'sex': 'x' is not one of"):
        cg(age=50, sex="x", weight=70, creatinine=1)
    with pytest.raises(CalculatorInputError, match=r"'height': unknown input"):
        cg(age=50, sex="male", weight=70, creatinine=1, height=170)


def test_unit_conversion_on_input():
    cg = COCKCROFT_GAULT
    a = cg(age=60, sex="female", weight=(154, "lb"), creatinine=(88.4, "µmol/L")).value
    b = cg(age=60, sex="female", weight=69.85, creatinine=1.0).value
    assert a == pytest.approx(b, abs=0.1)
