"""Venous thromboembolism: age-adjusted D-dimer cut-off and bleeding risk on anticoagulation."""

from __future__ import annotations

from dataclasses import replace

from calcmate.calculators._common import AGE_ADULT, SEX, flag
from calcmate.calculators.spec import Band, Calculator, Example, Input, Output, Reference
from calcmate.domains import Domain


def _age_adjusted_ddimer(v):
    cutoff = v["age"] * 10 if v["age"] > 50 else 500.0
    details = {"cutoff_ug_per_l_feu": cutoff}
    if v["d_dimer"] is not None:
        details["d_dimer_ug_per_l_feu"] = round(v["d_dimer"], 1)
        details["d_dimer_above_cutoff"] = v["d_dimer"] >= cutoff
    return cutoff, details


AGE_ADJUSTED_DDIMER = Calculator(
    id="age_adjusted_d_dimer",
    name="Age-Adjusted D-dimer for Venous Thromboembolism (VTE)",
    aliases=("Age-Adjusted D-dimer", "Age adjusted D-dimer cutoff", "ADJUST-PE D-dimer"),
    domain=Domain.MEDICINE,
    inputs=(
        AGE_ADULT,
        Input("d_dimer", "D-dimer (FEU)", unit="ug/L", min=0, max=100000, optional=True,
              aliases=("D-dimer", "D-dimer level", "D-dimer (FEU)", "D-dimer, µg/L"),
              help="Optional; in fibrinogen-equivalent units (µg/L = ng/mL FEU). If given, the details say whether it is above the cut-off."),
    ),
    compute=_age_adjusted_ddimer,
    output=Output("decimal", "µg/L FEU", 0, "Age-adjusted D-dimer cut-off"),
    tags=("thrombosis", "pulmonary embolism", "DVT", "emergency"),
    reference=Reference(
        purpose="Raises the D-dimer cut-off with age to rule out VTE in more older patients without loss of safety.",
        when_to_use="Patients with suspected PE (or DVT) and non-high clinical probability (e.g. Wells/Geneva), age >50.",
        formula="Cut-off (µg/L FEU) = age × 10 for patients older than 50 years; 500 µg/L for 50 years and younger.\n"
        "A D-dimer below the cut-off excludes VTE in non-high-probability patients.",
        citation="Righini M, Van Es J, Den Exter PL, et al. Age-adjusted D-dimer cutoff levels to rule out pulmonary "
        "embolism: the ADJUST-PE study. JAMA. 2014;311(11):1117-1124.",
        notes="Validated for assays with a conventional 500 µg/L FEU cut-off. For D-dimer units (DDU) assays halve "
        "the values (age × 5 µg/L DDU). 1 mg/L FEU = 1000 µg/L FEU.",
    ),
    examples=(
        Example({"age": 78}, 780.0, "Righini 2014: age × 10 for >50 years: 78 → 780 µg/L", 0.5),
        Example({"age": 45}, 500.0, "Righini 2014: conventional 500 µg/L at age ≤50", 0.5),
    ),
)


def _vte_bleed(v):
    pts = {
        "active_cancer": 2.0 if v["active_cancer"] else 0.0,
        "male_uncontrolled_hypertension": 1.0 if v["sex"] == "male" and v["uncontrolled_hypertension"] else 0.0,
        "anemia": 1.5 if v["anemia"] else 0.0,
        "history_of_bleeding": 1.5 if v["history_of_bleeding"] else 0.0,
        "age_60_or_older": 1.5 if v["age"] >= 60 else 0.0,
        "renal_dysfunction": 1.5 if v["renal_dysfunction"] else 0.0,
    }
    return sum(pts.values()), pts


VTE_BLEED = Calculator(
    id="vte_bleed",
    name="VTE-BLEED Score",
    aliases=("VTE-BLEED", "VTE BLEED score for bleeding on anticoagulation"),
    domain=Domain.MEDICINE,
    inputs=(
        replace(AGE_ADULT, aliases=(*AGE_ADULT.aliases, "Age ≥60 years")),
        SEX,
        flag("active_cancer", "Active cancer", "Active cancer",
             help="Cancer diagnosed or treated (surgery, chemo, radiotherapy) in the past 6 months, or recurrent/progressive."),
        flag("uncontrolled_hypertension", "Uncontrolled hypertension (SBP ≥140 mmHg)", "Uncontrolled hypertension",
             "Male with uncontrolled hypertension", help="Scores only in men."),
        flag("anemia", "Anemia (Hb <13 g/dL men, <12 g/dL women)", "Anemia", "Anaemia"),
        flag("history_of_bleeding", "History of bleeding", "History of bleeding", "Prior bleeding",
             help="Prior major or clinically relevant non-major bleeding, rectal bleeding, frequent nose bleeding, haematuria."),
        flag("renal_dysfunction", "Renal dysfunction (CrCl 30-60 mL/min)", "Renal dysfunction", "Renal dysfunction (CrCl 30-60 mL/min)"),
    ),
    compute=_vte_bleed,
    output=Output("decimal", "points", 1, "VTE-BLEED score"),
    bands=(
        Band("Low risk of major bleeding on anticoagulation (<2)", None, 2),
        Band("High risk of major bleeding on anticoagulation (≥2)", 2, None),
    ),
    tags=("thrombosis", "bleeding", "anticoagulation"),
    reference=Reference(
        purpose="Predicts major bleeding during stable anticoagulation (after the first 30 days) for VTE.",
        when_to_use="Patients with VTE on anticoagulation beyond the initial month, e.g. when weighing extended therapy.",
        formula="| Criterion | Points |\n|---|---|\n| Active cancer | 2 |\n| Male with uncontrolled hypertension (SBP ≥140) | 1 |\n"
        "| Anaemia (Hb <13 g/dL men, <12 g/dL women) | 1.5 |\n| History of bleeding | 1.5 |\n| Age ≥60 years | 1.5 |\n"
        "| Renal dysfunction (CrCl 30-60 mL/min) | 1.5 |\n\nScore ≥2: high risk.",
        citation="Klok FA, Hösel V, Clemens A, et al. Prediction of bleeding events in patients with venous "
        "thromboembolism on stable anticoagulation treatment. Eur Respir J. 2016;48(5):1369-1376.",
    ),
    examples=(
        Example({"age": 67, "sex": "female", "active_cancer": False, "uncontrolled_hypertension": False, "anemia": False,
                 "history_of_bleeding": False, "renal_dysfunction": True}, 3.0,
                "Klok 2016 points table: age ≥60 (1.5) + renal dysfunction (1.5) = 3 (hand-computed)", 0.01),
        Example({"age": 50, "sex": "male", "active_cancer": True, "uncontrolled_hypertension": True, "anemia": False,
                 "history_of_bleeding": False, "renal_dysfunction": False}, 3.0,
                "Klok 2016 points table: cancer (2) + male uncontrolled hypertension (1) = 3 (hand-computed)", 0.01),
        Example({"age": 55, "sex": "female", "active_cancer": False, "uncontrolled_hypertension": True, "anemia": False,
                 "history_of_bleeding": False, "renal_dysfunction": False}, 0.0,
                "Klok 2016: uncontrolled hypertension scores only in men → 0 (hand-computed)", 0.01),
    ),
)

CALCULATORS = [AGE_ADJUSTED_DDIMER, VTE_BLEED]
