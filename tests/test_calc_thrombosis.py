"""Age-adjusted D-dimer and VTE-BLEED."""

from __future__ import annotations

import pytest

from calcmate.calculators import registry
from calcmate.calculators.spec import CalculatorInputError

R = registry()


@pytest.mark.parametrize("age,cutoff", [(50, 500), (51, 510), (85, 850), (30, 500)])
def test_age_adjusted_cutoff(age, cutoff):
    assert R.get("Age-Adjusted D-dimer for Venous Thromboembolism (VTE)")(age=age).value == cutoff


def test_d_dimer_units_and_comparison():
    dd = R.get("age_adjusted_d_dimer")
    r = dd(age=72, d_dimer="0.68 mg/L")
    assert r.details["d_dimer_ug_per_l_feu"] == 680 and r.details["d_dimer_above_cutoff"] is False
    assert dd(age=72, d_dimer="800 ng/mL").details["d_dimer_above_cutoff"] is True
    with pytest.raises(CalculatorInputError) as e:
        dd(age=72, d_dimer="800 mmHg")
    assert e.value.field == "d_dimer"


def test_vte_bleed_points_and_sex_specific_hypertension():
    vb = R.get("VTE-BLEED Score")
    everything = {"age": 70, "active_cancer": True, "uncontrolled_hypertension": True, "anemia": True,
                  "history_of_bleeding": True, "renal_dysfunction": True}
    assert vb(sex="male", **everything).value == 9.0
    assert vb(sex="female", **everything).value == 8.0
    r = vb(sex="female", age=59, active_cancer=False, uncontrolled_hypertension=False, anemia=True,
           history_of_bleeding=False, renal_dysfunction=False)
    assert r.value == 1.5 and r.interpretation.startswith("Low")
    with pytest.raises(CalculatorInputError) as e:
        vb(sex="female", age=59, active_cancer="maybe", uncontrolled_hypertension=False, anemia=True,
           history_of_bleeding=False, renal_dysfunction=False)
    assert e.value.field == "active_cancer"
