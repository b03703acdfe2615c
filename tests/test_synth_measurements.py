"""The per-patient measurement pool: which inputs are measurements, criteria parsed from labels, and
one coherent set of vitals and labs across every calculator of a composed task (no database)."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
import yaml

from calcmate.calculators.registry import registry
from calcmate.synth.build import TaskCreationError, make_spec
from calcmate.synth.measurements import (DEFAULT_CATALOGUE, Catalogue, check_measurements, default_catalogue,
                                         parse_criterion, sample_pool)
from calcmate.synth.profile import Population, sample_profile
from calcmate.synth.taxonomy import load_taxonomy


@pytest.fixture(scope="module")
def reg():
    return registry()


@pytest.fixture(scope="module")
def cat():
    return default_catalogue()


@pytest.fixture(scope="module")
def specs(reg):
    tax = load_taxonomy(reg=reg)
    out = []
    for i in range(200):
        try:
            out.append(make_spec(tax, reg, "m", i))
        except TaskCreationError:
            continue
    return out


def _b(reg, cat, cid, key):
    c = reg.get(cid)
    return cat.binding(c, c.input(key))


def test_numeric_inputs_are_identified_by_key_label_and_unit(reg, cat):
    assert _b(reg, cat, "perc", "o2_sat").quantity == "spo2"  # another key, same quantity
    assert _b(reg, cat, "nutritional_risk_index", "albumin").quantity == "albumin"  # g/L input
    assert _b(reg, cat, "feurea", "serum_bun").quantity == "bun"
    assert _b(reg, cat, "sofa", "map").quantity == "map"
    assert _b(reg, cat, "carboplatin_calvert", "gfr").quantity == "crcl"  # the data file's mapping
    # a urine sodium is the urine quantity, never serum sodium; a baseline or serial creatinine, a target
    # sodium are no pool quantity
    assert _b(reg, cat, "fena", "urine_sodium").quantity == "urine_sodium"
    for cid, key in (("kdigo_aki", "baseline_creatinine"), ("kinetic_egfr", "creatinine_2"),
                     ("sodium_correction_rate", "target_sodium"), ("sodium_correction_rate", "infusate_sodium")):
        if key in {i.key for i in reg.get(cid).inputs}:
            assert _b(reg, cat, cid, key) is None, (cid, key)
    g = _b(reg, cat, "gcs", "motor")
    assert g.kind == "gcs_component" and g.component == "motor"


def test_criteria_parsed_from_labels(reg, cat):
    (c,) = _b(reg, cat, "plasmic_score", "platelets_below_30").clauses
    assert c.quantity == "platelets" and c.range.contains(29) and not c.range.contains(30)
    anemia = _b(reg, cat, "atria_bleeding", "anemia").clauses
    assert {(x.sex, x.range.hi) for x in anemia} == {("male", 13.0), ("female", 12.0)}
    rr = _b(reg, cat, "smart_cop", "high_rr").clauses
    assert [(x.range.lo, x.age.contains(50), x.age.contains(51)) for x in rr] == [(25, True, False), (30, False, True)]
    temp = _b(reg, cat, "sirs_sepsis_shock", "temp_abnormal").clauses
    assert [(x.quantity, x.range.contains(38.0), x.range.contains(38.1), x.range.contains(35.9)) for x in temp] == \
        [("temperature", False, True, False), ("temperature", False, False, True)]
    wbc = _b(reg, cat, "sirs_sepsis_shock", "wbc_abnormal").clauses  # "> 10% bands" is not a WBC count
    assert [(x.quantity, x.range.lo, x.range.hi) for x in wbc] == [("wbc", 12.0, math.inf), ("wbc", -math.inf, 4.0)]
    mixed = _b(reg, cat, "sirs_sepsis_shock", "rr_high").clauses
    assert [x.quantity for x in mixed] == ["resp_rate", "paco2"]
    assert _b(reg, cat, "sofa", "hypotension").clauses[0].quantity == "map"
    assert _b(reg, cat, "kdigo_aki", "rise_03_48h") is None  # a change, not a level
    # units in the label convert to the quantity's canonical unit
    (cr,) = parse_criterion("Creatinine < 176.8 µmol/L", cat)
    assert cr.quantity == "creatinine" and abs(cr.range.hi - 2.0) < 0.01


def test_pool_is_physiological_and_deterministic():
    prof = sample_profile(Population(40 * 365.25, 41 * 365.25), random.Random(1))
    a, b = sample_pool(prof, random.Random(7)), sample_pool(prof, random.Random(7))
    assert a == b
    for seed in range(50):
        p = sample_pool(prof, random.Random(seed)).values
        assert p["map"] == round((p["sbp"] + 2 * p["dbp"]) / 3)
        assert p["pf_ratio"] == round(p["pao2"] / (p["fio2"] / 100))
        assert abs(p["ph"] - (6.1 + math.log10(p["bicarbonate"] / (0.0307 * p["paco2"])))) < 0.011 or p["ph"] in (6.8, 7.75)
        assert p["dbp"] < p["sbp"]
    sick = [sample_pool(prof, random.Random(s), severity=0.9).values for s in range(60)]
    well = [sample_pool(prof, random.Random(s), severity=0.05).values for s in range(60)]
    mean = lambda xs, k: sum(x[k] for x in xs) / len(xs)  # noqa: E731
    assert mean(sick, "lactate") > mean(well, "lactate") + 1
    assert mean(sick, "platelets") < mean(well, "platelets")
    assert mean(sick, "pf_ratio") < mean(well, "pf_ratio")
    assert mean(sick, "heart_rate") > mean(well, "heart_rate") + 20


def test_composed_patients_have_one_set_of_measurements(specs, reg, cat):
    assert len(specs) >= 150
    kinds: Counter = Counter()
    multi = 0  # quantities read by two or more calculators of one task
    map_checked = 0
    for spec in specs:
        p = spec.patient
        calcs = {c: reg.get(c) for c in p.values}
        skip = {(c, k) for c, d in p.fed.items() for k in d}
        problems = check_measurements(p.values, calcs, p.profile.sex, p.profile.completed("year"),
                                      p.profile.weight_kg, skip)
        assert problems == [], (spec.workflow.category.name, problems)
        per_q: dict[str, set[str]] = {}
        sbp_dbp: dict[str, float] = {}
        for cid, vals in p.values.items():
            for key, v in vals.items():
                b = cat.binding(calcs[cid], calcs[cid].input(key))
                if b is None or (cid, key) in skip:
                    continue
                kinds[b.kind] += 1
                q = b.quantity or ",".join(sorted({c.quantity for c in b.clauses}))
                per_q.setdefault(q, set()).add(cid)
                if b.kind == "number" and b.quantity in ("sbp", "dbp", "map") and not isinstance(v, tuple):
                    sbp_dbp[b.quantity] = float(v)
                if b.kind == "criterion":  # the flag agrees with the pool the task was drawn from
                    held = any(c.range.contains(p.measurements[c.quantity]) and c.sex in (None, p.profile.sex)
                               and (c.age is None or c.age.contains(p.profile.completed("year"))) for c in b.clauses)
                    assert v == held, (cid, key, v, p.measurements.as_dict())
        multi += sum(1 for cs in per_q.values() if len(cs) > 1)
        if {"sbp", "dbp", "map"} <= set(sbp_dbp):
            map_checked += 1
            assert sbp_dbp["map"] == round((sbp_dbp["sbp"] + 2 * sbp_dbp["dbp"]) / 3)
    # the check is not vacuous: shared quantities, criteria and GCS parts did occur
    assert multi >= 50 and kinds["criterion"] >= 20 and kinds["number"] >= 500 and kinds["gcs_component"] >= 10, (multi, kinds)


def test_check_measurements_flags_incoherent_values(reg):
    calcs = {c: reg.get(c) for c in ("plasmic_score", "sofa", "mean_arterial_pressure", "gcs", "apache_ii")}
    assert check_measurements({"plasmic_score": {"platelets_below_30": True}, "sofa": {"platelets": 250}}, calcs)
    assert not check_measurements({"plasmic_score": {"platelets_below_30": True}, "sofa": {"platelets": 25}}, calcs)
    assert check_measurements({"mean_arterial_pressure": {"sbp": 120, "dbp": 80}, "sofa": {"map": 70}}, calcs)
    assert not check_measurements({"mean_arterial_pressure": {"sbp": 120, "dbp": 80}, "sofa": {"map": 93}}, calcs)
    assert check_measurements({"sofa": {"creatinine": 1.2}, "apache_ii": {"creatinine": (300, "µmol/L")}}, calcs)
    assert not check_measurements({"sofa": {"creatinine": 1.2}, "apache_ii": {"creatinine": (106.1, "µmol/L")}}, calcs)
    assert check_measurements({"gcs": {"eye": "Spontaneous", "verbal": "Oriented", "motor": "Obeys commands"},
                               "sofa": {"gcs": 12}}, calcs)


def test_bad_catalogue_names_the_entry(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text("quantities:\n  sbp: {unit: mmHg}\n")
    with pytest.raises(ValueError, match="quantities.sbp"):
        Catalogue.load(f)
    d = yaml.safe_load(DEFAULT_CATALOGUE.read_text(encoding="utf-8"))
    d["inputs"]["sofa.platelets"] = "no_such_quantity"
    f.write_text(yaml.safe_dump(d, allow_unicode=True))
    with pytest.raises(ValueError, match="inputs.sofa.platelets"):
        Catalogue.load(f)
