"""Steroid conversion choices and the CDC 2022 MME factor table."""

import pytest

from calcmate.calculators import CalculatorInputError, registry

R = registry()


def test_steroid_round_trip_and_bare_names():
    s = R.get("Steroid Conversion Calculator")
    to_dex = s(from_steroid="PredniSONE PO", dose=50, to_steroid="Dexamethasone IV").value
    assert to_dex == pytest.approx(7.5)
    assert s(from_steroid="Dexamethasone IV", dose=to_dex, to_steroid="PredniSONE PO").value == pytest.approx(50)
    assert s(from_steroid="prednisone", dose=[0.05, "g"], to_steroid="cortisone").value == pytest.approx(250)
    with pytest.raises(CalculatorInputError) as e:
        s(from_steroid="Hydrocortisone", dose=20, to_steroid="PredniSONE PO")  # route ambiguous: PO or IV
    assert e.value.field == "from_steroid"
    with pytest.raises(CalculatorInputError) as e:
        s(from_steroid="Fludrocortisone", dose=1, to_steroid="PredniSONE PO")
    assert e.value.field == "from_steroid"


@pytest.mark.parametrize("drug,factor", [("codeine", 0.15), ("hydromorphone", 5.0), ("methadone", 4.7),
                                         ("oxycodone", 1.5), ("tapentadol", 0.4), ("tramadol", 0.2),
                                         ("fentanyl_buccal", 0.13), ("fentanyl_patch", 2.4)])
def test_mme_factors(drug, factor):
    mme = R.get("MME")
    r = mme({f"{drug}_dose": 10, f"{drug}_doses_per_day": 2})
    assert r.value == pytest.approx(round(20 * factor, 1))
    assert set(r.details["mme_per_drug"]) == {drug}


def test_mme_sums_and_defaults():
    mme = R.get("Morphine Milligram Equivalents (MME) Calculator")
    assert mme().value == 0
    r = mme(methadone_dose=40, methadone_doses_per_day=1, tapentadol_dose=10, tapentadol_doses_per_day=1,
            oxymorphone_dose=30, oxymorphone_doses_per_day=2)
    assert r.value == pytest.approx(372.0)
    assert mme.interpret(90).startswith("≥90")
    with pytest.raises(CalculatorInputError) as e:
        mme(morphine_dose=-5, morphine_doses_per_day=1)
    assert e.value.field == "morphine_dose"
