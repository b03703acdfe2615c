"""Electrolytes: molar conversions, optional defaults, TBW fractions, delta-ratio edge."""

import pytest

from calcmate.calculators import CalculatorInputError, registry

R = registry()


def test_calcium_correction_units_and_normal_albumin_default():
    ca = R.get("Calcium Correction for Hypoalbuminemia and Hyperalbuminemia")
    assert ca.input("normal_albumin").default == 4.0
    assert ca(calcium=8.1, albumin=3.3).value == pytest.approx(8.66, abs=0.005)
    assert ca(calcium=8.1, albumin=[33, "g/L"], normal_albumin=[40, "g/L"]).value == pytest.approx(8.66, abs=0.005)
    with pytest.raises(CalculatorInputError) as e:
        ca(calcium=8.1, albumin=[3.2, "mg/dL"])  # 0.0032 g/dL: a unit slip, not an albumin
    assert e.value.field == "albumin"


def test_sodium_correction_factor_choice_and_glucose_mmol():
    na = R.get("Sodium Correction for Hyperglycemia")
    assert na(sodium=127, glucose=1240).value == pytest.approx(154.4, abs=0.05)
    assert na(sodium=127, glucose=1240, correction_factor="Katz (1.6)").value == pytest.approx(145.2, abs=0.05)
    assert na(sodium=[144, "mmol/L"], glucose=[2.5, "mmol/L"]).value == pytest.approx(142.7, abs=0.05)


def test_serum_osmolality_optional_terms():
    osm = R.get("Serum Osmolality/Osmolarity")
    r = osm(sodium=140, bun=14, glucose=90, ethanol=37, measured_osmolality=320)
    assert r.value == pytest.approx(300.0, abs=0.05)
    assert r.details["osmolal_gap"] == pytest.approx(20.0, abs=0.05)
    assert "osmolal_gap" not in osm(sodium=140, bun=14, glucose=90).details


@pytest.mark.parametrize("age,sex,frac", [([17, "months"], "female", 0.6), (17, "male", 0.6), (64, "male", 0.6),
                                          (65, "male", 0.5), (30, "female", 0.5), (65, "female", 0.45)])
def test_free_water_deficit_tbw_fractions(age, sex, frac):
    r = R.get("free_water_deficit")(age=age, sex=sex, weight=70, sodium=154)
    assert r.details["tbw_fraction"] == frac
    assert r.value == pytest.approx(frac * 70 * 0.1, abs=0.005)


def test_anion_gap_family_consistency():
    lytes = dict(sodium=140, chloride=100, bicarbonate=14)
    ag = R.get("anion_gap")(**lytes).value
    assert ag == 26
    assert R.get("delta_gap")(**lytes).value == ag - 12
    assert R.get("delta_ratio")(**lytes).value == pytest.approx(1.4)
    assert R.get("albumin_corrected_anion_gap")(**lytes, albumin=2.0).value == pytest.approx(31.0)
    assert R.get("albumin_corrected_delta_gap")(**lytes, albumin=2.0).value == pytest.approx(19.0)
    assert R.get("albumin_corrected_delta_ratio")(**lytes, albumin=2.0).value == pytest.approx(1.9)


def test_delta_ratio_undefined_at_bicarbonate_24():
    for cid in ("delta_ratio", "albumin_corrected_delta_ratio"):
        with pytest.raises(CalculatorInputError) as e:
            R.get(cid)(sodium=140, chloride=100, bicarbonate=24, albumin=4.0) if "albumin" in cid else R.get(cid)(
                sodium=140, chloride=100, bicarbonate=24)
        assert e.value.field == "bicarbonate"
