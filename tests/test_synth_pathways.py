"""Clinical pathways and per-calculator polarity/population: data validity, registry coverage, and the
coherence of 1,000 composed tasks (composition alone, no database)."""

from __future__ import annotations

import random
import statistics
from types import SimpleNamespace

import pytest

from calcmate.calculators.meta import CalcMeta, POPULATIONS, load_meta, meta
from calcmate.calculators.registry import registry
from calcmate.synth.build import pick_category, task_rng
from calcmate.synth.composer import CompositionError, compose, feeds
from calcmate.synth.pathways import CLASS_POPULATION, coherence_issues, load_pathways
from calcmate.synth.profile import population
from calcmate.synth.taxonomy import load_taxonomy
from calcmate.tasks import CalcAnswer, CalcInput


@pytest.fixture(scope="module")
def reg():
    return registry()


@pytest.fixture(scope="module")
def tax(reg):
    return load_taxonomy(reg=reg)


@pytest.fixture(scope="module")
def data():
    return load_pathways()


def test_every_registry_calculator_has_polarity_and_a_composable_population(reg):
    m = load_meta()
    missing = [c.id for c in reg if c.id not in m]
    assert not missing, f"add polarity and populations to calcmate/calculators/data/clinical_meta.yaml: {missing}"
    assert set(m) <= {c.id for c in reg}
    for c in reg:
        for cls in meta(c.id).populations:  # one patient of that class can be drawn for the calculator
            assert not (CLASS_POPULATION[cls] & population(c)).empty, (c.id, cls)
    # the defects that motivated the data: GCS lower is worse; adult BMI bands are not for children
    assert meta("gcs").polarity == meta("gcs_pupils").polarity == "lower_worse"
    assert "paediatric" not in meta("bmi").populations and "pregnancy" not in meta("ckd_epi_2021").populations


def test_meta_validation_names_the_problem(tmp_path):
    with pytest.raises(ValueError, match="normal"):
        CalcMeta(polarity="u_shaped", populations=("adult",))
    with pytest.raises(ValueError):
        CalcMeta(polarity="higher_worse", populations=("adults",))
    assert CalcMeta(polarity="lower_worse", populations=("adult",)).worse_side("<", 9) == "true"
    assert CalcMeta(polarity="u_shaped", normal=(135, 145), populations=("adult",)).worse_side("<", 140) is None
    assert set(POPULATIONS) == set(CLASS_POPULATION)


def test_every_registry_calculator_is_reachable_from_a_category_pathway(reg, tax, data):
    reachable = {c for cat in tax.categories for c in data.union(cat.pathways)}
    missing = [c.id for c in reg if c.id not in reachable]
    assert not missing, f"put these calculators in a pathway of calcmate/synth/pathways.yaml: {missing}"
    named = {p for cat in tax.categories for p in cat.pathways}
    assert named == set(data.pathways), set(data.pathways) - named  # no orphan pathway


def test_pathways_keep_feed_order_and_cite_sources(reg, data):
    for pid in data.pathways:
        ids = data.calculators(pid)
        for i, y in enumerate(ids):
            for x in ids[i + 1:]:
                assert not feeds(reg.get(x), reg.get(y)), f"{pid}: {x} feeds {y} but comes after it"
    assert all(r.source and r.action for r in data.rules.values())
    curb = data.rules["curb65_admit"]
    assert curb.decider == "curb65" and {"psi_port", "smart_cop"} <= set(curb.ge_arm)
    gcs = data.rules["gcs_severe"]  # GCS <= 8 -> airway: the lower side is the worse one
    assert gcs.op == "<" and gcs.worse_arm == "else" and "ett_depth_tidal_volume" in gcs.lt_arm


def test_a_rule_written_backwards_is_rejected(tmp_path, reg):
    f = tmp_path / "p.yaml"
    f.write_text("rules:\n  bad:\n    decider: gcs\n    when: ['>=', 9]\n    true_is: worse\n    if_true: [gcs_pupils]\n"
                 "    action: x\n    source: Somebody et al., 2020\n"
                 "pathways:\n  p: {title: t, source: 'Guideline 2020', steps: [gcs], rules: [bad]}\n")
    with pytest.raises(ValueError, match="reversed"):
        load_pathways(f, reg)
    f.write_text("rules: {}\npathways:\n  p: {title: t, source: 'Guideline 2020', steps: [no_such_calc]}\n")
    with pytest.raises(ValueError, match="no_such_calc"):
        load_pathways(f, reg)


def _as_task(wf, executed):
    plan = wf.to_plan()
    plan["executed"] = executed
    return SimpleNamespace(plan=plan, task_scenario=wf.category.name, calculator_answers=[])


def test_1000_composed_tasks_are_coherent(reg, tax, data):
    """Targets of issue 12 section 2 on composition alone: >= 90% on-pathway, >= 8 calculators per
    task, every registry calculator used, 0 polarity errors, 0 population mismatches."""
    shares, counts, used = [], [], set()
    polarity_errors, population_errors = [], []
    for i in range(1000):
        rng = task_rng("pathway-audit", i)
        for _ in range(25):
            cat = pick_category(tax, rng, i)
            try:
                wf = compose(cat, reg, rng, 4, 10)
                break
            except CompositionError:
                continue
        else:
            pytest.fail(f"task {i}: no workflow")
        executed = wf.executed({b.decider: rng.choice(("then", "else")) for b in wf.branches})
        r = coherence_issues(_as_task(wf, executed), reg, tax, data)
        shares.append(r["on_pathway_share"])
        counts.append(len(executed))
        used |= set(executed)
        polarity_errors += r["polarity_errors"]
        population_errors += r["population_mismatches"]
        assert 4 <= len(executed) <= 10
    assert min(shares) >= 0.9 and statistics.mean(shares) >= 0.9
    assert statistics.mean(counts) >= 8.0, statistics.mean(counts)
    assert used == {c.id for c in reg}, {c.id for c in reg} - used
    assert polarity_errors == [] and population_errors == []


def test_min_and_max_calculators_are_kept(reg, tax):
    for i in range(60):
        rng = random.Random(i)
        cat = tax.categories[i % len(tax.categories)]
        try:
            wf = compose(cat, reg, rng, 3, 5)
        except CompositionError:
            continue
        arms = [b for b in wf.branches]
        for arm in ("then", "else"):
            assert 3 <= len(wf.executed({b.decider: arm for b in arms})) <= 5


def test_checker_flags_reversed_branches_off_pathway_and_wrong_population(reg, tax, data):
    cat = tax.get("Traumatic Brain Injury Prognosis")
    wf = next(w for s in range(200) if (w := compose(cat, reg, random.Random(s))).branches
              and w.branches[0].decider == "gcs")
    ok = _as_task(wf, wf.executed({"gcs": "then"}))
    assert coherence_issues(ok, reg, tax, data)["polarity_errors"] == []
    bad = _as_task(wf, wf.executed({"gcs": "then"}))
    b = bad.plan["branches"][0]
    b["then"], b["else"] = b["else"], b["then"]  # GCS >= 9 would now send the patient to intubation
    assert any("reversed" in e for e in coherence_issues(bad, reg, tax, data)["polarity_errors"])
    b["worse_arm"] = "then"
    assert any("polarity says else" in e for e in coherence_issues(bad, reg, tax, data)["polarity_errors"])
    random_branch = _as_task(wf, ["gcs"])
    random_branch.plan["branches"] = [{"decider": "gcs_pupils", "op": ">=", "threshold": 9, "then": ["triss"], "else": []}]
    assert any("no published rule" in e for e in coherence_issues(random_branch, reg, tax, data)["polarity_errors"])
    # a cardiology score in a suicide-risk task is off-pathway; adult BMI on a toddler is a mismatch
    off = SimpleNamespace(plan={"category": "Suicide Risk Assessment", "executed": ["gcs", "heart_score"]},
                          task_scenario="Suicide Risk Assessment", calculator_answers=[])
    r = coherence_issues(off, reg, tax, data)
    assert r["off_pathway"] == ["heart_score"] and r["on_pathway_share"] == 0.5
    toddler = SimpleNamespace(plan={"category": "Pediatric Fluids and Dosing", "executed": ["bsa", "bmi"]},
                              task_scenario="Pediatric Fluids and Dosing", calculator_answers=[
                                  CalcAnswer(order=1, name="Body Mass Index (BMI)", final_answer=16.0,
                                             inputs=[CalcInput(field="Age", value="24 months")])])
    r = coherence_issues(toddler, reg, tax, data)
    assert r["population"] == "paediatric" and any("bmi" in m for m in r["population_mismatches"])
    adult_age = SimpleNamespace(plan={"category": "Sepsis Screening and Organ Dysfunction", "executed": ["qsofa"]},
                                task_scenario="Sepsis Screening and Organ Dysfunction", calculator_answers=[
                                    CalcAnswer(order=1, name="qSOFA", final_answer=1,
                                               inputs=[CalcInput(field="Age", value="7 years")])])
    assert coherence_issues(adult_age, reg, tax, data)["population_mismatches"]
