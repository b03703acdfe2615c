"""AKI: KDIGO creatinine/urine-output staging edges and input pairing, kinetic eGFR direction and
clamping, FEUrea unit paths and bands."""

import pytest

from calcmate.calculators import CalculatorInputError, registry

R = registry()
KDIGO = R.get("KDIGO AKI Staging")


@pytest.mark.parametrize("base,cr,extra,stage", [
    (1.0, 1.49, {}, "No AKI"), (1.0, 1.5, {}, "Stage 1"), (1.0, 1.99, {}, "Stage 1"), (1.0, 2.0, {}, "Stage 2"),
    (1.0, 2.99, {}, "Stage 2"), (1.0, 3.0, {}, "Stage 3"),
    (3.0, 4.1, {"rise_03_48h": True}, "Stage 3"),  # ≥ 4.0 with an acute rise
    (3.0, 4.1, {}, "No AKI"),  # ≥ 4.0 without a stage-1 criterion is not AKI by itself
    (1.0, 1.1, {"rrt": True}, "Stage 3"),
    (1.0, 1.0, {"uo_rate": 0.4, "uo_hours": 6}, "Stage 1"), (1.0, 1.0, {"uo_rate": 0.4, "uo_hours": 5}, "No AKI"),
    (1.0, 1.0, {"uo_rate": 0.4, "uo_hours": 12}, "Stage 2"), (1.0, 1.0, {"uo_rate": 0.29, "uo_hours": 24}, "Stage 3"),
    (1.0, 1.0, {"anuria_12h": True}, "Stage 3"),
])
def test_kdigo_stage_edges(base, cr, extra, stage):
    assert KDIGO(baseline_creatinine=base, creatinine=cr, **extra).value == stage


def test_kdigo_takes_the_worse_criterion_and_reports_both():
    r = KDIGO(baseline_creatinine=1.0, creatinine=1.6, uo_rate=0.3, uo_hours=14)
    assert r.value == "Stage 2"
    assert r.details["creatinine_stage"] == 1 and r.details["urine_output_stage"] == 2


def test_kdigo_creatinine_in_umol_and_urine_only():
    assert KDIGO(baseline_creatinine="80 µmol/L", creatinine="250 µmol/L").value == "Stage 3"
    assert KDIGO(uo_rate="0.2 mL/kg/hr", uo_hours="30 hours").value == "Stage 3"


@pytest.mark.parametrize("kwargs,field", [
    ({"creatinine": 2.0}, "baseline_creatinine"), ({"uo_rate": 0.3}, "uo_hours"), ({}, "creatinine"),
])
def test_kdigo_incomplete_pairs_name_the_field(kwargs, field):
    with pytest.raises(CalculatorInputError) as e:
        KDIGO(**kwargs)
    assert e.value.field == field


def test_kinetic_egfr_steady_state_and_direction():
    ke = R.get("kinetic_egfr")
    steady = ke(baseline_creatinine=1.0, baseline_egfr=90, creatinine_1=2.0, creatinine_2=2.0, hours=24)
    assert steady.value == pytest.approx(45.0, abs=0.05)  # steady state: SSPCr × eGFR / PCr
    rising = ke(baseline_creatinine=1.0, baseline_egfr=90, creatinine_1=1.8, creatinine_2=2.2, hours=24)
    falling = ke(baseline_creatinine=1.0, baseline_egfr=90, creatinine_1=2.2, creatinine_2=1.8, hours=24)
    assert rising.value < steady.value < falling.value
    assert ke.input("max_increase_per_day").default == 1.5


def test_kinetic_egfr_default_max_rise_and_its_effect():
    ke = R.get("kinetic_egfr")
    args = dict(baseline_creatinine=1.0, baseline_egfr=90, creatinine_1=1.5, creatinine_2=2.1, hours=24)
    default = ke(**args).value
    assert default == pytest.approx(ke(**args, max_increase_per_day=1.5).value)
    # (1.0 × 90 / 1.8) × (1 − 24 × 0.6 / (24 × 1.5)) = 50 × 0.6
    assert default == pytest.approx(30.0, abs=0.05)
    # a smaller assumed maximum rise means the observed rise uses more of it: lower GFR
    assert ke(**args, max_increase_per_day=1.0).value == pytest.approx(20.0, abs=0.05)


def test_kinetic_egfr_clamps_at_zero():
    r = R.get("kinetic_egfr")(baseline_creatinine=1.0, baseline_egfr=90, creatinine_1=1.0, creatinine_2=3.0, hours=24)
    assert r.value == 0.0 and "note" in r.details


def test_feurea_units_and_bands():
    fe = R.get("Fractional Excretion of Urea (FEUrea)")
    r = fe(serum_bun=60, urine_urea=300, serum_creatinine=2.0, urine_creatinine=100)
    assert r.value == pytest.approx(10.0) and r.interpretation.startswith("≤ 35%")
    # urea in mmol/L (SI) on both sides gives the same ratio
    si = fe(serum_bun="21.4 mmol/L", urine_urea="107 mmol/L", serum_creatinine="177 µmol/L", urine_creatinine="8840 µmol/L")
    assert si.value == pytest.approx(10.0, abs=0.1)
    assert fe(serum_bun=30, urine_urea=600, serum_creatinine=3.0, urine_creatinine=100).interpretation.startswith("> 50%")
    with pytest.raises(CalculatorInputError) as e:
        fe(serum_bun=30, urine_urea=600, serum_creatinine=3.0, urine_creatinine=0)
    assert e.value.field == "urine_creatinine"


def test_crrt_dose_predilution_and_filtration_fraction():
    crrt = R.get("CRRT Dosing Calculator")
    r = crrt(weight=80, pre_replacement_rate=1000, post_replacement_rate=500, net_uf_rate=100, blood_flow=200,
             hematocrit=30)
    assert r.value == pytest.approx(20.0)
    plasma = 200 * 60 * 0.7  # 8400 mL/h
    assert r.details["predilution_factor"] == pytest.approx(plasma / (plasma + 1000), abs=1e-3)
    assert r.details["filtration_fraction_percent"] == pytest.approx(1600 / 9400 * 100, abs=0.05)
    assert "predilution_factor" not in crrt(weight=80, dialysate_rate=2000).details
    with pytest.raises(CalculatorInputError) as e:
        crrt(weight=80, dialysate_rate=2000, blood_flow=200)
    assert e.value.field == "hematocrit"
    with pytest.raises(CalculatorInputError) as e:
        crrt(weight=80)
    assert e.value.field == "dialysate_rate"
    assert crrt(weight=80, dialysate_rate="2 L/h").value == pytest.approx(25.0)
