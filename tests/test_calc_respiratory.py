"""Respiratory calculators: FiO₂ as % or fraction, Berlin edges, R/I clamping, unit paths, and the
MedMCP-Calc dev answers (tests/fixtures, MIT, SPIRAL-MED/MedMCP-Calc) reproduced from their inputs."""

from pathlib import Path

import pytest

from calcmate.agent.oracle import registry_inputs
from calcmate.calculators import CalculatorInputError, registry
from calcmate.scoring.tolerance import values_match
from calcmate.tasks import read_tasks

R = registry()
DEV = read_tasks(Path(__file__).parent / "fixtures" / "medmcp_calc" / "tasks_dev.jsonl")
DEV_NAMES = [
    "Horowitz Index for Lung Function (P/F Ratio)", "A-a O₂ Gradient", "SpO₂/FiO₂ Ratio",
    "Endotracheal Tube (ETT) Depth and Tidal Volume Calculator", "Static Lung Compliance (Cstat) Calculation",
    "Pulmonary Resistance", "Recruitment to Inflation Ratio", "Rapid Shallow Breathing Index (RSBI)",
    "ROX Index for Intubation after HFNC",
]


@pytest.mark.parametrize("name", DEV_NAMES)
def test_medmcp_dev_answers_reproduced(name):
    answers = [a for t in DEV for a in t.calculator_answers if a.name == name]
    assert answers, f"no dev answer for {name}"
    calc = R.get(name)
    for a in answers:
        inputs = registry_inputs(calc, a)
        assert inputs is not None, f"{name}: fields {[i.field for i in a.inputs]} not all mapped to inputs"
        got = calc(inputs).value
        assert values_match(got, a.final_answer), f"{name}: {got!r} vs benchmark {a.final_answer!r}"


@pytest.mark.parametrize("fio2", [40, "40 %", 0.4, [40, "%"]])
def test_fio2_percent_or_fraction(fio2):
    assert R.get("pf_ratio")(pao2=80, fio2=fio2).value == pytest.approx(200.0)
    assert R.get("sf_ratio")(spo2=92, fio2=fio2).value == pytest.approx(230.0)


@pytest.mark.parametrize("fio2", [5, 20.9, 0.1, 101])
def test_fio2_impossible_values_name_the_field(fio2):
    with pytest.raises(CalculatorInputError) as e:
        R.get("pf_ratio")(pao2=80, fio2=fio2)
    assert e.value.field == "fio2"


def test_pao2_in_kpa_is_converted():
    assert R.get("pf_ratio")(pao2="10.7 kPa", fio2=0.5).value == pytest.approx(160.5, abs=0.2)


@pytest.mark.parametrize("pf,expected", [(300, "Mild ARDS"), (300.1, "Does not meet Berlin ARDS criteria"),
                                         (200, "Moderate ARDS"), (200.1, "Mild ARDS"), (100, "Severe ARDS"),
                                         (100.1, "Moderate ARDS")])
def test_berlin_edges_are_inclusive_upper(pf, expected):
    base = {"timing": True, "bilateral_opacities": True, "not_cardiac": True, "peep_5": True}
    assert R.get("berlin_ards")(base, pf_ratio=pf).value == expected


def test_pf_bands_match_berlin_edges():
    pf = R.get("pf_ratio")
    assert pf(pao2=90, fio2=0.3).interpretation.startswith("Mild")  # exactly 300.0
    assert pf(pao2=60, fio2=0.3).interpretation.startswith("Moderate")  # exactly 200.0


def test_berlin_needs_an_oxygenation_input():
    base = {"timing": True, "bilateral_opacities": True, "not_cardiac": True, "peep_5": True}
    with pytest.raises(CalculatorInputError) as e:
        R.get("berlin_ards")(base, pao2=70)
    assert e.value.field == "pf_ratio"
    assert R.get("berlin_ards")(base, pao2=70, fio2=50).value == "Moderate ARDS"


def test_aa_gradient_altitude_and_expected_for_age():
    r = R.get("aa_gradient")(patm=630, pao2=60, fio2=21, paco2=35, age=40)
    assert r.value == pytest.approx(0.21 * 583 - 35 / 0.8 - 60, abs=0.05)
    assert r.details["expected_aa_gradient"] == 14.0
    assert "expected_aa_gradient" not in R.get("aa_gradient")(pao2=60, fio2=21, paco2=35).details


def test_aa_gradient_defaults_sea_level_and_r_08():
    """Patm defaults to 760 (sea level); PH2O 47 and R 0.8 give West's room-air PAO2 of about 100 at PaCO2 40."""
    aa = R.get("aa_gradient")
    r = aa(pao2=90, fio2=21, paco2=40)
    assert r.details["PAO2"] == pytest.approx(99.7, abs=0.05)  # 0.21 × 713 − 40/0.8
    assert r.value == pytest.approx(aa(patm=760, pao2=90, fio2=21, paco2=40).value)
    assert aa.input("patm").default == 760.0


def test_ett_tidal_volumes_by_sex():
    m = R.get("ett_depth_tidal_volume")(height="70 in", sex="Male")
    f = R.get("ett_depth_tidal_volume")(height="70 in", sex="Female")
    assert m.details["ibw_kg"] == pytest.approx(73.0) and m.details["tidal_volume_6_ml_kg"] == 438
    assert f.details["ibw_kg"] == pytest.approx(68.5) and f.details["tidal_volume_8_ml_kg"] == 548
    assert m.value == f.value == 22.0


def test_cstat_rejects_pplat_not_above_peep():
    with pytest.raises(CalculatorInputError) as e:
        R.get("static_compliance")(tidal_volume=450, pplat=8, peep=10)
    assert e.value.field == "pplat"


def test_recruitment_ratio_clamps_negative_and_warns():
    r = R.get("recruitment_inflation_ratio")(aop=5, peep_high=12, vt_set=460, vt_high=455, peep_low=8,
                                              vt_release=220, pplat_low=22)
    assert r.value == 0.0 and r.interpretation.startswith("Low recruiter")
    assert r.details["ri_unclamped"] < 0 and "warning" in r.details


def test_recruitment_ratio_uses_airway_opening_pressure_when_higher():
    calc = R.get("recruitment_inflation_ratio")
    args = dict(peep_high=15, vt_set=420, vt_high=420, peep_low=5, vt_release=620, pplat_low=29)
    with_aop = calc(args, aop=8)
    assert with_aop.details["crs_low_peep"] == pytest.approx(20.0)
    assert calc(args).details["crs_low_peep"] == pytest.approx(17.5)  # 420/(29-5)
    with pytest.raises(CalculatorInputError) as e:
        calc(args, aop=16)
    assert e.value.field == "peep_high"


def test_rsbi_tidal_volume_litres_and_bad_unit():
    assert R.get("rsbi")(resp_rate=30, tidal_volume="0.3 L").value == 100
    with pytest.raises(CalculatorInputError) as e:
        R.get("rsbi")(resp_rate=30, tidal_volume="300 mmHg")
    assert e.value.field == "tidal_volume"


def test_rox_bands():
    rox = R.get("rox_index")
    assert rox(spo2=88, fio2=0.9, resp_rate=30).interpretation.startswith("High risk")  # 3.26
    assert rox(spo2=92, fio2=0.5, resp_rate=40).interpretation.startswith("Indeterminate")  # 4.6


def test_pvr_units():
    pvr = R.get("pulmonary_resistance")
    r = pvr(mpap=40, pcwp=10, cardiac_output=5)
    assert r.value == 6.0 and r.details["unit"] == "Wood units" and r.details["total_pulmonary_resistance"] == 8.0
    assert pvr(mpap=40, pcwp=10, cardiac_output=5, units="dyn·s·cm⁻⁵").value == 480.0


def test_smart_cop_bands():
    calc = R.get("smart_cop")
    none = {k: False for k in ("low_sbp", "multilobar", "low_albumin", "high_rr", "tachycardia", "confusion",
                               "low_oxygen", "low_ph")}
    assert calc(none, low_sbp=True, multilobar=True).interpretation.startswith("Moderate")
    assert calc(none, low_sbp=True, low_oxygen=True, low_ph=True, confusion=True).value == 7
    with pytest.raises(CalculatorInputError) as e:
        calc({k: v for k, v in none.items() if k != "low_ph"})
    assert e.value.field == "low_ph"
