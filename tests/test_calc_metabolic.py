"""HOMA-IR and Friedewald LDL: molar units and the triglyceride validity limit."""

import pytest

from calcmate.calculators import CalculatorInputError, registry

R = registry()


def test_homa_ir_mmol_glucose():
    h = R.get("HOMA-IR")
    assert h(insulin=[4.8, "µIU/mL"], glucose=165).value == pytest.approx(1.96, abs=0.005)
    assert h(insulin=10, glucose=[5.0, "mmol/L"]).value == pytest.approx(2.22, abs=0.01)


def test_ldl_mmol_and_triglyceride_limit():
    ldl = R.get("LDL Calculated")
    # 5.17 mmol/L TC, 1.29 HDL, 1.69 TG -> about 200, 50, 150 mg/dL -> 120 mg/dL
    assert ldl(total_cholesterol=[5.172, "mmol/L"], hdl=[1.293, "mmol/L"], triglycerides=[1.694, "mmol/L"]).value == pytest.approx(120, abs=0.5)
    assert ldl(total_cholesterol=300, hdl=40, triglycerides=399).value == pytest.approx(180.2)
    with pytest.raises(CalculatorInputError) as e:
        ldl(total_cholesterol=300, hdl=40, triglycerides=400)
    assert e.value.field == "triglycerides"
    assert ldl.interpret(129.9).startswith("Near optimal") and ldl.interpret(190).startswith("Very high")
