"""Anthropometrics: imperial units, the 4-2-1 breakpoints, bundles and MAP input checks."""

import pytest

from calcmate.calculators import CalculatorInputError, registry

R = registry()


def test_imperial_and_metre_inputs():
    bmi = R.get("BMI")
    assert bmi(weight=[154, "lbs"], height=[69, "in"]).value == pytest.approx(22.7, abs=0.05)
    assert bmi(weight=48.9, height=[1.56, "m"]).value == pytest.approx(20.1, abs=0.05)
    assert bmi.interpret(24.99) == "Normal weight (18.5-24.9)" and bmi.interpret(25.0).startswith("Overweight")


@pytest.mark.parametrize("w,rate", [(10, 40), (10.5, 41), (20, 60), (21, 61), (1.1, 4.4), ([30, "lbs"], 47.2)])
def test_maintenance_fluid_breakpoints(w, rate):
    assert R.get("maintenance_fluids")(weight=w).value == pytest.approx(rate, abs=0.05)


def test_ibw_abw_target_weight():
    ibw = R.get("ideal_body_weight")
    assert ibw(sex="male", height=[60, "in"]).value == pytest.approx(50.0, abs=0.05)
    abw = R.get("adjusted_body_weight")(sex="male", height=[70, "in"], weight=73)
    assert abw.value == pytest.approx(73.0, abs=0.05)  # actual == ideal -> no adjustment
    assert R.get("target_weight")(bmi=[23.2, "kg/m^2"], height=[78, "in"]).value == pytest.approx(91.1, abs=0.05)


def test_bundles_resolve_to_both_calculators():
    assert [c.id for c in R.resolve("BMI Calculator (Body Mass Index and BSA)")] == ["bmi", "bsa"]
    assert [c.id for c in R.resolve("Ideal Body Weight and Adjusted Body Weight")] == ["ideal_body_weight", "adjusted_body_weight"]


def test_map_rejects_diastolic_above_systolic():
    m = R.get("Mean Arterial Pressure (MAP)")
    assert m(sbp=[116, "mmhg"], dbp=[66, "mmhg"]).value == pytest.approx(82.7, abs=0.05)
    with pytest.raises(CalculatorInputError) as e:
        m(sbp=80, dbp=120)
    assert e.value.field == "dbp"
    with pytest.raises(CalculatorInputError) as e:
        R.get("bsa")(weight=70, height=[70, "kg"])
    assert e.value.field == "height"
