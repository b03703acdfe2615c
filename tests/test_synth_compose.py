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
    # explicit ids are assigned, and tag matching adds more than the explicit lists
    af = tax.get("Atrial Fibrillation Stroke and Bleeding Risk")
    assert "cha2ds2_vasc" in af.calculators
    assert sum(len(c.calculators) for c in tax.categories) > sum(len(c.explicit) for c in tax.categories)


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
    checked = 0
    for i in range(40):
        try:
            spec = make_spec(tax, reg, "t", i)
        except TaskCreationError:
            continue
        wf, p = spec.workflow, spec.patient
        checked += 1
        assert 4 <= len(p.executed) <= 10
        assert len(wf.branches) == 1
        b = wf.branches[0]
        assert can_decide(reg.get(b.decider))
        assert b.then and not set(b.then) & set(b.else_)
        assert any(d.kind in ("feeds", "triggers") for d in wf.dependencies)
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
        assert t.domain is not None and t.plan["branches"][0]["taken"] in ("then", "else")
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
