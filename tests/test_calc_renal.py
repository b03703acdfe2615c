"""Renal calculators: unit paths, sex-specific branches, band edges, bad input."""

import pytest

from calcmate.calculators import CalculatorInputError, registry

R = registry()


def test_creatinine_in_umol_per_l_matches_mg_per_dl():
    cg = R.get("cockcroft_gault")
    a = cg(age=60, sex="male", weight=70, creatinine=1.2).value
    b = cg(age=60, sex="male", weight=70, creatinine=[106.08, "µmol/L"]).value
    assert a == pytest.approx(b, abs=0.1)
    assert cg(age=60, sex="female", weight=70, creatinine=1.2).value == pytest.approx(a * 0.85, abs=0.1)


def test_ckd_epi_branches_at_kappa():
    ckd = R.get("CKD-EPI Equations for Glomerular Filtration Rate (GFR)")
    assert ckd.id == "ckd_epi_2021"
    # at SCr = κ both min() and max() terms are 1: eGFR = 142 × 0.9938^age (× 1.012 for women)
    assert ckd(age=40, sex="male", creatinine=0.9).value == pytest.approx(142 * 0.9938**40, abs=0.05)
    assert ckd(age=40, sex="female", creatinine=0.7).value == pytest.approx(142 * 0.9938**40 * 1.012, abs=0.05)
    low = ckd(age=40, sex="female", creatinine=0.5).details
    assert low["scr_over_kappa"] < 1
    assert ckd.interpret(59.9).startswith("G3a") and ckd.interpret(60).startswith("G2")


def test_mdrd_race_is_optional_and_documented():
    mdrd = R.by_medcalc_id(9)
    base = mdrd(age=60, sex="male", creatinine=1.9).value
    assert mdrd(age=60, sex="male", creatinine=1.9, black_race=True).value == pytest.approx(base * 1.212, abs=0.1)
    assert "default" in mdrd.input("black_race").help


def test_fena_mmol_sodium_and_bad_input():
    fena = R.get("FENa")
    v = fena(sodium=[134, "mmol/L"], creatinine=0.65, urine_sodium=[179, "mmol/L"], urine_creatinine=37).value
    assert v == pytest.approx(2.35, abs=0.01)
    assert fena.interpret(0.5).startswith("<1%")
    with pytest.raises(CalculatorInputError) as e:
        fena(sodium=134, creatinine=0.65, urine_sodium=179)
    assert e.value.field == "urine_creatinine"
    with pytest.raises(CalculatorInputError) as e:
        fena(sodium=134, creatinine=-1, urine_sodium=179, urine_creatinine=37)
    assert e.value.field == "creatinine"


def test_adult_only():
    with pytest.raises(CalculatorInputError) as e:
        R.get("ckd_epi_2021")(age=12, sex="male", creatinine=0.6)
    assert e.value.field == "age"
