"""Decontamination flags reused benchmark questions and patients, and passes new ones."""

from __future__ import annotations

from pathlib import Path

from calcmate.synth.decontam import Decontaminator, ngrams
from calcmate.tasks import read_tasks

DEV = Path(__file__).resolve().parent / "fixtures" / "medmcp_calc" / "tasks_dev.jsonl"


def test_copied_question_and_patient_are_flagged():
    ref = read_tasks(DEV)
    dc = Decontaminator.from_files([DEV])
    copy = ref[0].model_copy(deep=True, update={"task_id": "synth_copy"})
    kinds = {h.kind for h in dc.check(copy)}
    assert kinds == {"question", "patient"}
    # the question reworded but one long passage kept verbatim still counts
    words = ref[1].fuzzy_question.split()
    q_only = ref[1].model_copy(deep=True, update={"task_id": "q", "calculator_answers": [], "task_description": "",
                                                  "fuzzy_question": "Completely new opening words here. " + " ".join(words[: len(words) // 2])})
    assert [h.kind for h in dc.check(q_only)] == ["question"]
    # the patient copied under a new question
    p_only = ref[2].model_copy(deep=True, update={"task_id": "p", "fuzzy_question": "A fresh question.", "task_description": ""})
    assert [h.kind for h in dc.check(p_only)] == ["patient"]


def test_new_task_passes():
    from calcmate.calculators.registry import registry
    from calcmate.synth.build import offline_task
    from calcmate.synth.taxonomy import load_taxonomy

    reg = registry()
    dc = Decontaminator.from_files([DEV])
    t = offline_task(load_taxonomy(reg=reg), reg, 3, 1)
    assert dc.check(t) == [] and dc.max_question_overlap(t) < 0.1


def test_ngrams_are_normalised():
    assert ngrams("The CHA₂DS₂-VASc score, please!", 2) == ngrams("the cha2ds2 vasc SCORE please", 2)
