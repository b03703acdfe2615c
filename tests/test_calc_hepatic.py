"""FIB-4 platelet units and MELD-Na bounds (floors, creatinine cap/dialysis, sodium clamp, cap 40)."""

import pytest

from calcmate.calculators import CalculatorInputError, registry

R = registry()


def test_fib4_platelet_units():
    f = R.get("FIB-4")
    a = f(age=45, ast=150, alt=195, platelets=[130000, "µL"]).value
    assert a == f(age=45, ast=150, alt=195, platelets=130).value == f(age=45, ast=150, alt=195, platelets=[130, "10^9/L"]).value
    with pytest.raises(CalculatorInputError) as e:
        f(age=62, ast=2452, alt=1161, platelets=[119000000.0, "L"])  # 0.119 × 10⁹/L: a unit slip
    assert e.value.field == "platelets"


def test_meld_na_bounds():
    m = R.get("MELDNa/MELD-Na Score for Liver Cirrhosis")
    base = dict(bilirubin=2.0, inr=1.5, sodium=130)
    high_cr = m(creatinine=6.0, **base)
    assert high_cr.details["creatinine_used"] == 4.0
    assert m(creatinine=1.0, dialysis_twice=True, **base).value == high_cr.value
    assert m(creatinine=1.0, cvvhd=True, **base).value == high_cr.value
    assert m(creatinine=1.0, bilirubin=2.0, inr=1.5, sodium=120).details["sodium_used"] == 125
    assert m(creatinine=0.5, bilirubin=0.5, inr=0.9, sodium=140).value == 6  # all floored to 1.0
    assert m(creatinine=4.0, bilirubin=40, inr=6, sodium=125).value == 40  # capped


def test_meld_na_sodium_term_only_above_11():
    m = R.get("meld_na")
    r = m(creatinine=1.0, bilirubin=1.0, inr=1.5, sodium=125)
    assert r.details["meld"] <= 11 and r.value == round(r.details["meld"])
