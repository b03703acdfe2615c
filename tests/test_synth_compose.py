"""Synthesizer stages 1-5 without a database: taxonomy, composer, sampler, question, plan header."""

from __future__ import annotations

import logging
import random

import pytest

from calcmate.calculators.registry import registry
from calcmate.domains import Domain
from calcmate.synth.build import TaskCreationError, make_spec, offline_task, task_id_for
from calcmate.synth.composer import Branch, can_decide, compose, feeds
from calcmate.synth.fuzzy import check_question, find_names
from calcmate.synth.sampler import sample_patient
from calcmate.synth.taxonomy import load_taxonomy


@pytest.fixture(scope="module")
def reg():
    return registry()


@pytest.fixture(scope="module")
def tax(reg):
    return load_taxonomy(reg=reg)


def test_taxonomy_covers_four_domains_and_about_125_categories(tax):
    assert 115 <= len(tax.categories) <= 140
    for d in Domain:
        assert len(tax.by_domain(d)) >= 25, d
    names = [c.name for c in tax.categories]
    assert len(set(names)) == len(names)
    assert all(c.task_category.startswith(f"Clinical Medicine / {c.domain.value} / ") for c in tax.categories)


def test_shipped_taxonomy_names_only_registry_calculators(tax, reg):
    assert tax.missing == {}, f"taxonomy names calculators the registry lacks: {tax.missing}"
    assert all(cid in {c.id for c in reg} for cat in tax.categories for cid in cat.calculators)
    # every category draws its calculators from its clinical pathways, enough of them for a long task
    af = tax.get("Atrial Fibrillation Stroke and Bleeding Risk")
    assert "cha2ds2_vasc" in af.calculators and "has_bled" in af.calculators
    assert all(c.pathways for c in tax.categories)
    assert all(len(c.calculators) >= 7 for c in tax.categories), [c.name for c in tax.categories if len(c.calculators) < 7]
    # no cardiology scores in a suicide-risk task (the defect that motivated pathways)
    assert not {"cha2ds2_vasc", "heart_score", "has_bled", "rcri"} & set(tax.get("Suicide Risk Assessment").calculators)


def test_unknown_ids_are_skipped_with_a_warning(tmp_path, reg, caplog):
    f = tmp_path / "tax.yaml"
    f.write_text('domains:\n  "Medicine & Organ Systems":\n'
                 '    - {name: Kidneys, specialty: Nephrology, tags: [], calculators: [cockcroft_gault, no_such_calc]}\n')
    with caplog.at_level(logging.WARNING):
        t = load_taxonomy(f, reg)
    assert t.categories[0].calculators == ["cockcroft_gault"]
    assert t.missing == {"Kidneys": ["no_such_calc"]}
    assert "no_such_calc" in caplog.text


def test_bad_taxonomy_file_names_the_entry(tmp_path, reg):
    f = tmp_path / "tax.yaml"
    f.write_text('domains:\n  "Cardiology":\n    - {name: X, specialty: Y}\n')
    with pytest.raises(ValueError, match="Cardiology"):
        load_taxonomy(f, reg)


def test_workflows_have_size_dependency_and_branch(tax, reg):
    from calcmate.synth.pathways import load_pathways

    rules = load_pathways().rules
    checked = 0
    for i in range(40):
        try:
            spec = make_spec(tax, reg, "t", i)
        except TaskCreationError:
            continue
        wf, p = spec.workflow, spec.patient
        checked += 1
        assert 4 <= len(p.executed) <= 10
        assert len(wf.branches) <= 1
        if not wf.branches:
            continue
        b = wf.branches[0]
        r = rules[b.rule]  # a published rule, its arms on the sides the rule gives
        assert b.decider == r.decider and set(b.then) <= set(r.ge_arm) and set(b.else_) <= set(r.lt_arm)
        assert b.then and not set(b.then) & set(b.else_) and b.source == r.source
        assert any(d.kind == "triggers" for d in wf.dependencies)
        ids = [s.calc_id for s in wf.steps]
        assert len(set(ids)) == len(ids)
        for d in wf.dependencies:
            if d.kind == "feeds":
                assert d.quantity in feeds(reg.get(d.src), reg.get(d.dst))
                assert ids.index(d.src) < ids.index(d.dst)
        # the branch taken is the one the registry value selects, and only that arm executes
        arm = b.arm(p.results[b.decider].value)
        assert p.arms[b.decider] == arm
        skipped = b.else_ if arm == "then" else b.then
        assert not set(skipped) & set(p.executed)
        assert set(b.then if arm == "then" else b.else_) <= set(p.executed)
        assert p.executed[-1] != b.decider  # something follows the branch, whichever arm is taken
    assert checked >= 30


def test_patients_are_valid_shared_and_fed(tax, reg):
    fed_seen = 0
    for i in range(30):
        try:
            spec = make_spec(tax, reg, "p", i)
        except TaskCreationError:
            continue
        p = spec.patient
        for cid in p.executed:
            calc = reg.get(cid)
            assert calc(p.values[cid]).value == p.results[cid].value  # registry ground truth
            for inp in calc.inputs:
                if inp.key in p.values[cid] and inp.type in ("number", "integer") and cid not in p.fed:
                    v = p.values[cid][inp.key]
                    assert inp.min is None or v >= inp.min
                    assert inp.max is None or v <= inp.max
        for cid, keys in p.fed.items():
            for key, src in keys.items():
                fed_seen += 1
                v = p.values[cid][key]
                assert (v[0] if isinstance(v, tuple) else v) == p.results[src].value
        ages = {p.values[c]["age"] for c in p.executed if "age" in p.values[c] and reg.get(c).input("age").type == "number"}
        assert len(ages) <= 1  # one patient, one age
    assert fed_seen > 0


def test_branch_arm_follows_threshold():
    b = Branch("x", ">=", 60.0, ["a"], ["b"])
    assert b.arm(60) == "then" and b.arm(59.9) == "else" and b.arm("n/a") == "else"
    c = Branch("y", "==", "High risk", ["a"], [])
    assert c.arm("high  risk") == "then" and c.arm("Low risk") == "else"


def test_offline_tasks_follow_question_rules_and_are_deterministic(tax, reg):
    made = 0
    for i in range(12):
        try:
            t = offline_task(tax, reg, 7, i)
        except TaskCreationError:
            continue
        made += 1
        assert t.task_id == task_id_for(7, i)
        assert offline_task(tax, reg, 7, i).model_dump() == t.model_dump()
        calcs = [reg.get(s["calc_id"]) for s in t.plan["steps"]]
        assert find_names(t.fuzzy_question, calcs) == []
        assert check_question(t.fuzzy_question, calcs, [str(x.value) for a in t.calculator_answers for x in a.inputs]) == []
        # the planning header names every calculator of the plan, both branch arms included
        assert all(c.name in t.plan["header"] for c in calcs)
        assert [a.name for a in t.calculator_answers] == t.required_calculators
        assert t.domain is not None and all(b["taken"] in ("then", "else") for b in t.plan["branches"])
    assert made >= 10


def test_question_checker_flags_names_and_values(reg):
    calc = reg.get("cockcroft_gault")
    issues = check_question("Please compute the Cockcroft-Gault clearance; creatinine is 1.4 mg/dL.", [calc], ["1.4 mg/dL"])
    assert {i.kind for i in issues} == {"calculator_name", "patient_value"}


def test_compose_refuses_an_empty_category(tax, reg):
    from calcmate.synth.composer import CompositionError
    from calcmate.synth.taxonomy import Category

    with pytest.raises(CompositionError):
        compose(Category("Empty", Domain.MEDICINE, "None"), reg, random.Random(0))


def test_sampler_reaches_both_arms(tax, reg):
    arms = set()
    cat = tax.get("Sodium Disorders")
    for s in range(12):
        rng = random.Random(s)
        try:
            wf = compose(cat, reg, rng)
            arms.add(sample_patient(wf, reg, rng).arms[wf.branches[0].decider])
        except Exception:
            continue
    assert arms == {"then", "else"}


# -- one patient per task: profile, populations, derived inputs ---------------------------------------
from calcmate.calculators.spec import Choice, Input  # noqa: E402
from calcmate.synth.profile import (  # noqa: E402
    DAYS_PER_MONTH, DAYS_PER_YEAR, PatientModel, Population, Profile, check_consistency, classify, default_model,
    derive, parse_range, population, population_of,
)


def _age_days_of(calc, inp, binding, value) -> tuple[float, float]:
    """Independent reading of one age-type input: the exact ages (days) it allows."""
    from calcmate.units import convert

    if binding.attr == "age":
        v = value[0] if isinstance(value, tuple) else value
        if inp.unit == "year":
            return v * DAYS_PER_YEAR, (v + 1) * DAYS_PER_YEAR
        return convert(v - 0.05, inp.unit, "day"), convert(v + 0.05, inp.unit, "day")
    r = dict(binding.bands)[value] if binding.attr == "age_band" else binding.criterion
    return r.exact_age_days()


def test_attribute_inputs_are_read_from_registry_metadata(reg):
    m = default_model()
    attr = lambda cid, key: (b.attr if (b := m.binding(reg.get(cid), reg.get(cid).input(key))) else None)  # noqa: E731
    assert attr("cockcroft_gault", "age") == "age" and attr("cdc_infant_length_for_age", "age_months") == "age"
    assert attr("g8_geriatric_screening", "age_group") == "age_band"
    assert attr("sodium_correction_rate", "age_group") == "age_band"
    assert attr("cockcroft_gault", "sex") == "sex" and attr("cockcroft_gault", "weight") == "weight"
    assert attr("cdc_infant_length_for_age", "length") == "height"  # recumbent length is the infant's height
    assert attr("cdc_infant_head_circumference_for_age", "head_circumference") == "head_circumference"
    assert attr("caprini", "bmi") == "bmi" and attr("caprini", "pregnancy_postpartum") == "pregnancy"
    assert attr("g8_geriatric_screening", "bmi_category") == "bmi_band"
    assert attr("heart_score", "obesity") == "bmi_criterion"
    assert attr("bsa_based_dosing", "bsa") == "bsa"
    # not patient attributes: a goal BMI, lab values, the dose, the menstrual cycle length
    assert attr("target_weight", "bmi") is None and attr("cockcroft_gault", "creatinine") is None
    assert attr("weight_based_liquid_dosing", "dose_mg_per_kg") is None
    assert attr("estimated_due_date", "cycle_length") is None
    # the explicit data mapping binds what names alone leave ambiguous, and every entry resolves
    assert attr("nutritional_risk_index", "usual_weight") == "usual_weight"
    assert attr("nutritional_risk_index", "current_weight") == "weight"
    for name, want in m.inputs.items():
        cid, key = name.split(".", 1)
        assert attr(cid, key) == want, name


def test_criteria_bands_and_units_derive_from_one_profile():
    p = Profile(age_days=int(77.4 * DAYS_PER_YEAR), sex="female", weight_kg=70.0, height_cm=160.0, pregnant=False)
    cases = [
        (Input("age75", "Age ≥ 75 years", type="bool"), True),
        (Input("age_gt_80", "Age > 80", type="bool"), False),
        (Input("age_65_74", "Age 65-74 years", type="bool"), False),
        (Input("age_75_84", "Age ≥ 75 and < 85 years", type="bool"), True),
        (Input("elderly", "Elderly (> 65)", type="bool"), True),
        (Input("female", "Female sex", type="bool"), True),
        (Input("age", "Age", unit="year", min=18, max=120), 77),
        (Input("age_m", "Age", unit="month", min=0, max=1500), round(77.4 * 12, 1)),
        (Input("wt", "Body weight", unit="lb", min=1, max=1000), round(70 / 0.45359237, 1)),
        (Input("ht", "Height", unit="in", min=10, max=100), round(160 / 2.54, 2)),
        (Input("bmi", "Body mass index", unit="kg/m**2", min=5, max=100), 27.3),
        (Input("obese", "Obesity (BMI ≥ 30)", type="bool"), False),
        (Input("sex", "Gender", type="choice", choices=(Choice("Man", 0), Choice("Woman", 1))), "Woman"),
        (Input("age_cat", "Age", type="choice", choices=(Choice("<65", 0), Choice("65-74", 1), Choice("≥75", 2))), "≥75"),
        (Input("bmi_cat", "BMI", type="choice", choices=(Choice("BMI <25", 0), Choice("BMI 25 to <30", 1),
                                                          Choice("BMI ≥30", 2))), "BMI 25 to <30"),
    ]
    for inp, want in cases:
        b = classify(inp)
        assert b is not None, inp.label
        got = derive(b, inp, p)
        assert got == pytest.approx(want) if isinstance(want, float) else got == want, (inp.label, got, want)
    # composite criteria (another measurement decides) are not age criteria
    assert classify(Input("high_rr", "Respiratory rate high for age (≥ 25 if age ≤ 50; ≥ 30 if age > 50)", type="bool")) is None
    assert parse_range("80-85 years").contains(85) and not parse_range(">85 years").contains(85)
    assert parse_range("Child (<18 years)").contains(17) and not parse_range("Child (<18 years)").contains(18)


def test_populations_come_from_input_ranges_tags_and_data(reg):
    infant = population(reg.get("cdc_infant_head_circumference_for_age"))
    assert infant.hi_days <= 36 * DAYS_PER_MONTH + 1 and infant.lo_days == 0
    g8 = population(reg.get("g8_geriatric_screening"))
    assert g8.lo_days == 65 * DAYS_PER_YEAR  # tag geriatrics
    assert (infant & g8).empty
    assert (population(reg.get("cdc_infant_length_for_age")) & population(reg.get("carg_tt"))).empty
    edd = population(reg.get("estimated_due_date"))
    assert edd.sexes == {"female"} and edd.pregnant is True
    assert population(reg.get("cockcroft_gault")).lo_days == 18 * DAYS_PER_YEAR  # its age input's minimum
    # age bands that cover children say the calculator applies to them
    assert population(reg.get("sodium_correction_rate")).lo_days == 0
    # the data file names only registry calculators and known groups; every calculator has a population
    m = default_model()
    ids = {c.id for c in reg}
    assert set(m.calculators) <= ids and {k.split(".")[0] for k in m.inputs} <= ids
    assert all(not population(c).empty for c in reg)


def test_bad_populations_file_names_the_field(tmp_path):
    f = tmp_path / "pop.yaml"
    f.write_text("groups:\n  adult: {age: [18, 120]}\ndefault: adult\ncalculators:\n  bmi: toddler\n")
    with pytest.raises(ValueError, match="calculators.bmi"):
        PatientModel.load(f)
    f.write_text("groups:\n  adult: {age: [18, 120]}\ndefault: adult\ninputs:\n  bmi.weight: mass\n")
    with pytest.raises(ValueError, match="inputs.bmi.weight"):
        PatientModel.load(f)


def test_consistency_check_catches_impossible_patients(reg):
    calcs = {c.id: c for c in reg}
    # the defect that motivated profiles: a 16-month-old's growth chart and an 80-85-year-old's geriatric screen
    bad = {"cdc_infant_head_circumference_for_age": {"sex": "Male", "age_months": 16.1, "head_circumference": 46.0},
           "g8_geriatric_screening": {"age_group": "80-85 years", "bmi_category": "BMI ≥23"}}
    assert any(p.startswith("age") for p in check_consistency(bad, calcs))
    two_sexes = {"cockcroft_gault": {"age": 70, "sex": "Male", "weight": 80.0, "creatinine": 1.0},
                 "ckd_epi_2021": {"age": 70, "sex": "Female", "creatinine": 1.0}}
    assert any(p.startswith("sex") for p in check_consistency(two_sexes, calcs))
    bmi = {"bmi": {"weight": 100.0, "height": 170.0}, "heart_score": {"obesity": False, "age": 50}}
    assert any(p.startswith("bmi") for p in check_consistency(bmi, calcs))
    ok = {"cockcroft_gault": {"age": 85, "sex": "Female", "weight": 60.0, "creatinine": 1.0},
          "g8_geriatric_screening": {"age_group": "80-85 years", "bmi_category": "BMI ≥23"},
          "bmi": {"weight": 60.0, "height": 160.0}}
    assert check_consistency(ok, calcs) == []


def test_composer_never_combines_infant_and_geriatric_calculators(reg):
    """A category's patient class decides: an adult category drops the infant charts, an infant one
    the geriatric screens, and neither ever mixes them."""
    from calcmate.synth.taxonomy import Category

    ids = ["cdc_infant_length_for_age", "cdc_infant_head_circumference_for_age", "cdc_infant_weight_for_length",
           "g8_geriatric_screening", "carg_tt", "clinical_frailty_scale", "awol_delirium", "maintenance_fluids",
           "bsa", "glucose_infusion_rate", "weight_based_liquid_dosing", "barthel_index"]
    seen_pops = set()
    for group in (None, "infant", "geriatric"):
        mixed = Category("Mixed ages", Domain.SPECIAL_POPULATIONS, "Geriatrics and Pediatrics", calculators=ids,
                         population=group)
        for s in range(15):
            try:
                wf = compose(mixed, reg, random.Random(s), min_calcs=3, max_calcs=6)
            except Exception:
                continue
            pop = wf.population(reg)
            assert not pop.empty, [x.calc_id for x in wf.steps]
            seen_pops.add("infant" if pop.hi_days <= 36 * DAYS_PER_MONTH + 1 else "geriatric" if pop.lo_days >= 65 * DAYS_PER_YEAR else "other")
    assert {"infant", "geriatric"} <= seen_pops  # both populations of the category are still composed


def test_200_tasks_each_describe_one_patient(tax, reg):
    """Every age-type input agrees (unit conversion, band membership, criterion truth), one sex, one body size,
    each input within its calculator's range, the profile inside every calculator's population."""
    m = default_model()
    calcs = {c.id: c for c in reg}
    checked = infant = geriatric = 0
    for i in range(200):
        try:
            spec = make_spec(tax, reg, "one-patient", i)
        except TaskCreationError:
            continue
        checked += 1
        wf, p = spec.workflow, spec.patient
        prof = p.profile
        assert prof is not None
        pop = population_of(reg.get(s.calc_id) for s in wf.steps)
        assert not pop.empty and pop.contains_age(prof.age_days) and prof.sex in pop.sexes
        if spec.category.population:  # "a newborn ...", "an older adult ...": the context's group
            group = m.groups[spec.category.population]
            assert group.contains_age(prof.age_days) and prof.sex in group.sexes, (spec.category.name, prof)
        assert check_consistency({c: p.values[c] for c in p.executed}, calcs) == [], spec.task_id
        infant += prof.age_days < 36 * DAYS_PER_MONTH
        geriatric += prof.age_years >= 65
        ids = {s.calc_id for s in wf.steps}
        assert not (ids & {"cdc_infant_length_for_age", "cdc_infant_head_circumference_for_age", "cdc_infant_weight_for_length"}
                    and ids & {"g8_geriatric_screening", "carg_tt", "clinical_frailty_scale", "awol_delirium"})
        sexes, weights, heights = set(), set(), set()
        for cid in p.executed:
            calc = reg.get(cid)
            for key, v in p.values[cid].items():
                inp = calc.input(key)
                if inp.type in ("number", "integer") and key not in p.fed.get(cid, {}):
                    assert (inp.min is None or v >= inp.min) and (inp.max is None or v <= inp.max), (cid, key, v)
                b = m.binding(calc, inp)
                if b is None or key in p.fed.get(cid, {}):
                    continue
                if b.attr in ("age", "age_band", "age_criterion"):
                    lo, hi = _age_days_of(calc, inp, b, v)
                    truth = lo <= prof.age_days < hi
                    assert truth if b.attr != "age_criterion" or v else not truth, (spec.task_id, cid, key, v, prof)
                elif b.attr == "sex":
                    sexes.add(dict(b.sexes)[v] if inp.type == "choice" else (b.sexes[0][1] if v else "other"))
                elif b.attr == "weight":
                    weights.add(round(v, 1))
                elif b.attr == "height":
                    heights.add(round(v))
                elif b.attr == "bmi":
                    assert v == pytest.approx(prof.weight_kg / (prof.height_cm / 100) ** 2, abs=0.06)
                elif b.attr == "pregnancy":
                    assert v == prof.pregnant and (not v or prof.sex == "female")
        assert len(sexes) <= 1 and len(weights) <= 1 and len(heights) <= 1, (spec.task_id, sexes, weights, heights)
    assert checked >= 190
    assert infant >= 1 and geriatric >= 20  # populations at both ends of life are still drawn


def test_category_population_is_validated_and_feeds_respect_goals_and_units(tmp_path, reg, tax):
    f = tmp_path / "tax.yaml"
    f.write_text('domains:\n  "Special Populations & General Tools":\n'
                 '    - {name: Babies, specialty: Pediatrics, population: babies, calculators: [bsa]}\n')
    with pytest.raises(ValueError, match="Babies.*babies"):
        load_taxonomy(f, reg)
    f.write_text('domains:\n  "Special Populations & General Tools":\n'
                 '    - {name: Kids, specialty: Pediatrics, context: a child with fever, cough and wheeze}\n')
    with pytest.raises(ValueError, match="Kids.*unknown keys.*quote"):
        load_taxonomy(f, reg)
    assert tax.get("Potassium, Calcium and Other Electrolytes").context == "a patient with muscle cramps and abnormal electrolytes"
    assert tax.get("Community-Acquired Pneumonia Severity").context == "an adult with fever, cough and a new infiltrate"
    assert tax.get("Geriatric Frailty Screening").population == "geriatric"
    assert tax.get("Pregnancy Dating").population == "obstetric"
    # a goal is not fed by the current value, and an indexed eGFR (mL/min/1.73 m²) is not a GFR in mL/min
    assert feeds(reg.get("bmi"), reg.get("target_weight")) == []
    assert feeds(reg.get("ckd_epi_2021"), reg.get("carboplatin_calvert")) == []
    assert feeds(reg.get("cockcroft_gault"), reg.get("carg_tt")) == ["crcl"]
    assert feeds(reg.get("bmi"), reg.get("caprini")) == ["bmi"]


def test_derived_age_bands_are_met_by_the_age_the_ehr_returns(reg):
    """The verifier finds a band input ("Child (<18 years)", "80-85 years") through the returned age."""
    from calcmate.agent.trajectory import ToolCallRecord, Trajectory
    from calcmate.scoring.metrics import SqlEvidence

    m = default_model()
    bands = [(c, i, b) for c in reg for i in c.inputs if (b := m.binding(c, i)) is not None and b.attr == "age_band"]
    assert len(bands) >= 2
    for days in (70, 400, 9 * 365, 40 * 365, 70 * 365, 82 * 366, 90 * 366):
        p = Profile(age_days=days, sex="female", weight_kg=50.0, height_cm=150.0)
        age, unit = (p.completed("month"), "months") if days < 730 else (p.completed("year"), "years")
        ev = SqlEvidence(Trajectory(task_id="t", policy="test", tool_calls=[ToolCallRecord(
            id="1", server="postgres", tool="run_sql", arguments={"query": "SELECT ..."},
            result=f"patient_age | patient_age_unit\n{age} | {unit}")]))
        for calc, inp, b in bands:
            if not population(calc).contains_age(days):
                continue
            label = derive(b, inp, p)
            assert ev.contains(label, inp.label), (calc.id, label, age, unit)
            others = [x for x, r in b.bands if x != label and not r.contains(p.completed(r.unit or "year"))]
            assert not any(ev.contains(x, inp.label) for x in others if "(" not in x), (calc.id, others, age)
