"""Oncology: performance status, chemotherapy dosing and toxicity risk, radiation dose equivalence."""

from __future__ import annotations

import math
from dataclasses import replace

from calcmate.calculators._scales import graded
from calcmate.calculators._common import SEX, WEIGHT, HEIGHT, CREATININE, age, flag, optional
from calcmate.calculators.spec import (
    Band, Calculator, CalculatorInputError, Choice, Example, Input, Output, Reference, points,
)
from calcmate.domains import Domain


# -- Radiation biologically effective dose ----------------------------------------------------------

def _bed(v):
    n, d, total, ab = v["fractions"], v["dose_per_fraction"], v["total_dose"], v["alpha_beta"]
    calc = "radiation_bed"
    if d is None and total is None:
        raise CalculatorInputError(calc, "dose_per_fraction", "give the dose per fraction or the total dose")
    if d is None:
        d = total / n
    elif total is not None and not math.isclose(total, n * d, rel_tol=0.01):
        raise CalculatorInputError(calc, "total_dose", f"{total:g} Gy ≠ {n} fractions × {d:g} Gy")
    bed = n * d * (1 + d / ab)
    eqd2 = bed / (1 + 2 / ab)
    return bed, {"total_dose_gy": round(n * d, 4), "dose_per_fraction_gy": round(d, 4), "eqd2_gy": round(eqd2, 2)}


RADIATION_BED = Calculator(
    id="radiation_bed",
    name="Radiation Biologically Effective Dose (BED) Calculator",
    aliases=("Biologically Effective Dose", "BED", "Radiation BED", "BED and EQD2"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(
        Input("fractions", "Number of fractions", type="integer", min=1, max=100,
              aliases=("Number of fractions", "n", "fractions")),
        Input("dose_per_fraction", "Dose per fraction", unit="Gy", min=0.1, max=40, optional=True,
              aliases=("Dose per fraction", "Dose per fraction (Gy)", "d", "fraction dose"),
              help="Optional if the total dose is given (then d = total / n)."),
        Input("total_dose", "Total dose", unit="Gy", min=0.1, max=200, optional=True,
              aliases=("Total dose", "Total dose (Gy)", "Prescribed dose", "D"),
              help="Optional if the dose per fraction is given."),
        Input("alpha_beta", "α/β ratio", unit="Gy", min=0.5, max=25,
              aliases=("alpha/beta ratio", "α/β", "alpha beta", "α/β ratio (Gy)", "Alpha/beta ratio"),
              help="Tissue α/β: about 10 Gy for tumours and early-responding tissue, 3 Gy for late-responding tissue."),
    ),
    compute=_bed,
    output=Output("decimal", "Gy", 2, "BED"),
    tags=("oncology", "radiation therapy"),
    produces=("bed", "eqd2"),
    reference=Reference(
        purpose="Compares radiotherapy schedules with different fraction sizes on one biological scale (linear-quadratic model).",
        when_to_use="Converting or comparing fractionation schedules, e.g. hypofractionation or re-irradiation planning.",
        formula="BED = n × d × (1 + d / (α/β)), with n fractions of d Gy (total dose D = n·d).\n\n"
        "EQD2 (equivalent dose in 2-Gy fractions) = BED / (1 + 2 / (α/β)), reported in the details.",
        citation="Fowler JF. The linear-quadratic formula and progress in fractionated radiotherapy. "
        "Br J Radiol. 1989;62(740):679-694.",
        notes="No correction for overall treatment time (repopulation) or incomplete repair is applied. "
        "The α/β ratio must be chosen for the tissue of interest; there is no default.",
    ),
    examples=(
        Example({"fractions": 30, "dose_per_fraction": 2, "alpha_beta": 10}, 72.0,
                "Fowler 1989 LQ formula, 30 × 2 Gy with α/β = 10: 60 × (1 + 2/10) = 72 Gy", 0.01),
        Example({"fractions": 5, "total_dose": 40, "alpha_beta": 3}, 146.67,
                "Fowler 1989 LQ formula, 5 × 8 Gy with α/β = 3: 40 × (1 + 8/3) = 146.67 Gy (hand-computed)", 0.01),
    ),
)

# -- Performance status --------------------------------------------------------------------------

ECOG = Calculator(
    id="ecog_performance_status",
    name="Eastern Cooperative Oncology Group (ECOG) Performance Status",
    aliases=("ECOG Performance Status", "ECOG", "Zubrod score", "WHO performance status", "ECOG/Zubrod"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(
        graded("grade", "Patient description", [
            ("Fully active, able to carry on all pre-disease performance without restriction", 0,
             ("Asymptomatic", "Asymptomatic (Fully active, able to carry on all predisease activities without restriction)")),
            ("Restricted in physically strenuous activity but ambulatory and able to carry out light or sedentary work", 1,
             ("Symptomatic but completely ambulatory", "Symptomatic but completely ambulatory (Restricted in physically strenuous activity)")),
            ("Ambulatory and capable of all self-care but unable to carry out any work; up and about >50% of waking hours", 2,
             ("Symptomatic, <50% in bed during the day", "Symptomatic, <50% in bed during the day (Ambulatory and capable of all self care but unable to carry out any work activities)")),
            ("Capable of only limited self-care; confined to bed or chair >50% of waking hours", 3,
             ("Symptomatic, >50% in bed, but not bedbound", "Symptomatic, >50% in bed, but not bedbound (Capable of only limited self-care)")),
            ("Completely disabled; cannot carry on any self-care; totally confined to bed or chair", 4,
             ("Bedbound", "Bedbound (Completely disabled)")),
            ("Dead", 5, ("Death",)),
        ], "Patient description", "ECOG grade", "Performance status"),
    ),
    compute=lambda v: v["grade"],
    output=Output("integer", None, None, "ECOG grade"),
    bands=(
        Band("Grade 0: fully active", 0, 1), Band("Grade 1: restricted in strenuous activity", 1, 2),
        Band("Grade 2: ambulatory, capable of self-care, no work", 2, 3),
        Band("Grade 3: limited self-care, in bed/chair >50% of day", 3, 4),
        Band("Grade 4: completely disabled", 4, 5), Band("Grade 5: dead", 5, None),
    ),
    tags=("oncology", "functional status"),
    produces=("ecog",),
    reference=Reference(
        purpose="Grades a cancer patient's functional status (0-5), used for trial eligibility and treatment choice.",
        when_to_use="Any patient with cancer being considered for systemic therapy.",
        formula="| Grade | Description |\n|---|---|\n| 0 | Fully active |\n| 1 | Restricted in strenuous activity, ambulatory, light work |\n"
        "| 2 | Ambulatory, self-care, no work; up >50% of waking hours |\n| 3 | Limited self-care; bed/chair >50% of waking hours |\n"
        "| 4 | Completely disabled |\n| 5 | Dead |",
        citation="Oken MM, Creech RH, Tormey DC, et al. Toxicity and response criteria of the Eastern Cooperative "
        "Oncology Group. Am J Clin Oncol. 1982;5(6):649-655.",
        interpretation="Approximate Karnofsky equivalents: ECOG 0 ≈ KPS 90-100, 1 ≈ 70-80, 2 ≈ 50-60, 3 ≈ 30-40, 4 ≈ 10-20.",
    ),
    examples=(
        Example({"grade": "Symptomatic, <50% in bed during the day"}, 2, "Oken 1982 grade table: up >50% of day, no work = grade 2"),
        Example({"grade": "Bedbound"}, 4, "Oken 1982 grade table: totally confined to bed or chair = grade 4"),
    ),
)

KARNOFSKY = Calculator(
    id="karnofsky_performance_status",
    name="Karnofsky Performance Status Scale",
    aliases=("Karnofsky Performance Status", "KPS", "Karnofsky score", "Karnofsky Performance Scale"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(
        graded("score", "Patient description", [
            ("Normal; no complaints; no evidence of disease", 100, ()),
            ("Able to carry on normal activity; minor signs or symptoms of disease", 90, ()),
            ("Normal activity with effort; some signs or symptoms of disease", 80, ()),
            ("Cares for self; unable to carry on normal activity or to do active work", 70, ()),
            ("Requires occasional assistance, but is able to care for most personal needs", 60, ()),
            ("Requires considerable assistance and frequent medical care", 50, ()),
            ("Disabled; requires special care and assistance", 40, ()),
            ("Severely disabled; hospital admission is indicated although death not imminent", 30, ()),
            ("Very sick; hospital admission necessary; active supportive treatment necessary", 20, ()),
            ("Moribund; fatal processes progressing rapidly", 10, ()),
            ("Dead", 0, ()),
        ], "Patient description", "KPS", "Karnofsky score"),
    ),
    compute=lambda v: v["score"],
    output=Output("integer", "points", None, "Karnofsky score"),
    bands=(
        Band("Unable to care for self; requires institutional or hospital care (0-40)", None, 50),
        Band("Unable to work; able to live at home and care for most personal needs (50-70)", 50, 80),
        Band("Able to carry on normal activity and work; no special care needed (80-100)", 80, None),
    ),
    tags=("oncology", "functional status"),
    produces=("karnofsky",),
    reference=Reference(
        purpose="Scores functional impairment from 100 (normal) to 0 (dead) in steps of 10.",
        when_to_use="Patients with cancer or other serious illness, for prognosis and treatment eligibility.",
        formula="One descriptor per 10-point step: 100 normal … 50 requires considerable assistance and frequent "
        "medical care … 10 moribund, 0 dead.",
        citation="Karnofsky DA, Burchenal JH. The clinical evaluation of chemotherapeutic agents in cancer. "
        "In: MacLeod CM, ed. Evaluation of Chemotherapeutic Agents. Columbia University Press; 1949:191-205.",
        interpretation="KPS 50-60 corresponds to ECOG 2.",
    ),
    examples=(
        Example({"score": "Requires considerable assistance and frequent medical care"}, 50, "Karnofsky 1949 scale: descriptor of the 50 level"),
        Example({"score": 90}, 90, "Karnofsky 1949 scale: level given directly"),
    ),
)

# -- Carboplatin (Calvert) -------------------------------------------------------------------------

def _carboplatin(v):
    calc = "carboplatin_calvert"
    gfr, source = v["gfr"], "given"
    if gfr is None:
        missing = [k for k in ("age", "sex", "weight", "creatinine") if v[k] is None]
        if missing:
            raise CalculatorInputError(calc, missing[0], "needed to estimate GFR by Cockcroft-Gault when `gfr` is not given")
        from calcmate.calculators.registry import registry

        cg = registry().get("Creatinine Clearance (Cockcroft-Gault Equation)")
        gfr = cg({k: v[k] for k in ("age", "sex", "weight", "creatinine")}).value
        source = "Cockcroft-Gault"
    used = min(gfr, 125.0) if v["cap_gfr"] else gfr
    dose = v["target_auc"] * (used + 25)
    return dose, {"gfr_ml_min": round(gfr, 1), "gfr_used_ml_min": round(used, 1), "gfr_source": source}


CARBOPLATIN = Calculator(
    id="carboplatin_calvert",
    name="Carboplatin AUC Dosing (Calvert)",
    aliases=("Carboplatin AUC Dosing", "Calvert formula", "Carboplatin Dosing (Calvert Formula)", "Carboplatin dose"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(
        Input("target_auc", "Target AUC", unit="mg/mL*min", min=1, max=10,
              aliases=("Target AUC", "AUC", "Target AUC (mg/mL·min)", "Target area under the curve")),
        Input("gfr", "GFR", unit="mL/min", min=1, max=250, optional=True,
              aliases=("GFR", "Glomerular filtration rate", "Creatinine clearance", "CrCl", "GFR (mL/min)"),
              help="Measured GFR or creatinine clearance. Optional: without it, Cockcroft-Gault CrCl from age, sex, weight, creatinine is used."),
        optional(age(min=18)), optional(SEX), optional(WEIGHT), optional(CREATININE),
        Input("cap_gfr", "Cap GFR at 125 mL/min", type="bool", optional=True, default=False,
              aliases=("Cap GFR", "FDA GFR cap"),
              help="Default no (Calvert's formula has no cap); the FDA (2010) advises capping GFR at 125 mL/min, i.e. dose ≤ AUC × 150 mg."),
    ),
    compute=_carboplatin,
    output=Output("decimal", "mg", 0, "Carboplatin dose"),
    tags=("oncology", "chemotherapy", "dosing", "renal"),
    reference=Reference(
        purpose="Total carboplatin dose (mg, not mg/m²) that achieves a target area under the concentration-time curve.",
        when_to_use="Dosing carboplatin for a target AUC (typically 4-7 mg/mL·min).",
        formula="Dose (mg) = target AUC (mg/mL·min) × (GFR (mL/min) + 25).",
        citation="Calvert AH, Newell DR, Gumbrell LA, et al. Carboplatin dosage: prospective evaluation of a simple "
        "formula based on renal function. J Clin Oncol. 1989;7(11):1748-1756.",
        notes="Calvert used measured (51Cr-EDTA) GFR; Cockcroft-Gault creatinine clearance is the usual substitute "
        "(used here when no GFR is given). The FDA recommends capping the GFR at 125 mL/min; set `cap_gfr`.",
    ),
    examples=(
        Example({"target_auc": 5, "gfr": 100}, 625.0, "Calvert 1989 formula: 5 × (100 + 25) = 625 mg", 0.5),
        Example({"target_auc": 6, "gfr": 140, "cap_gfr": True}, 900.0,
                "Calvert formula with the FDA 2010 cap: 6 × (125 + 25) = 900 mg", 0.5),
    ),
)

# -- Body surface area based dosing ----------------------------------------------------------------

def _bsa_dose(v):
    bsa, source = v["bsa"], "given"
    if bsa is None:
        for k in ("height", "weight"):
            if v[k] is None:
                raise CalculatorInputError("bsa_based_dosing", k, "needed to compute BSA (Mosteller) when `bsa` is not given")
        from calcmate.calculators.registry import registry

        bsa_calc = registry().get("Body Surface Area Calculator")  # Mosteller, the registry's one BSA
        bsa, source = bsa_calc(height=v["height"], weight=v["weight"]).value, "Mosteller"
    return bsa * v["dose_per_m2"], {"bsa_m2": round(bsa, 3), "bsa_source": source}


BSA_DOSING = Calculator(
    id="bsa_based_dosing",
    name="Body Surface Area Based Dosing",
    aliases=("BSA Based Dosing", "BSA dosing", "Body surface area dose", "Chemotherapy dose by BSA"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(
        Input("dose_per_m2", "Dose per m²", unit="mg/m**2", min=0.001, max=100000,
              aliases=("Dose", "Dose per m2", "Dose (mg/m²)", "Drug dose per BSA", "Ordered dose")),
        Input("bsa", "Body surface area", unit="m**2", min=0.1, max=4, optional=True,
              aliases=("BSA", "Body surface area", "BSA (m²)"),
              help="Optional: without it, BSA is computed by Mosteller from height and weight."),
        optional(HEIGHT), optional(WEIGHT),
    ),
    compute=_bsa_dose,
    output=Output("decimal", "mg", 1, "Dose"),
    tags=("oncology", "chemotherapy", "dosing", "pharmacology"),
    reference=Reference(
        purpose="Converts a dose prescribed per square metre of body surface area into an absolute dose.",
        when_to_use="Chemotherapy and other drugs dosed per m².",
        formula="Dose = BSA (m²) × dose per m²; BSA (Mosteller) = √(height (cm) × weight (kg) / 3600).",
        citation="Mosteller RD. Simplified calculation of body-surface area. N Engl J Med. 1987;317(17):1098.",
        notes="The dose unit follows the prescription (mg/m² → mg). Dose capping at BSA 2.0 m² is an institutional "
        "practice and is not applied; ASCO advises full weight-based dosing in obese adults (Griggs 2012).",
    ),
    examples=(
        Example({"dose_per_m2": 100, "height": 180, "weight": 80}, 200.0,
                "Mosteller 1987: BSA = √(180×80/3600) = 2.0 m²; 2.0 × 100 mg/m² = 200 mg (hand-computed)", 0.05),
        Example({"dose_per_m2": 75, "bsa": 1.8}, 135.0, "1.8 m² × 75 mg/m² = 135 mg (hand-computed)", 0.05),
    ),
)

# -- CARG chemotherapy toxicity tool ----------------------------------------------------------------

def _carg(v):
    anemia = v["hemoglobin"] < (11 if v["sex"] == "male" else 10)
    crit = {
        "age_72_or_older": v["age"] >= 72,
        "gi_or_gu_cancer": v["cancer_type"] == "gi_gu",
        "standard_dose": v["dosage"] == "standard",
        "polychemotherapy": v["chemo_drugs"] >= 2,
        "anemia": anemia,
        "crcl_below_34": v["crcl"] < 34,
        "hearing_fair_or_worse": v["hearing_impaired"],
        "falls_in_6_months": v["falls"] >= 1,
        "needs_help_with_medications": v["help_with_meds"],
        "limited_walking_one_block": v["walking_limited"],
        "decreased_social_activity": v["social_activity_decreased"],
    }
    table = {"age_72_or_older": 2, "gi_or_gu_cancer": 2, "standard_dose": 2, "polychemotherapy": 2, "anemia": 3,
             "crcl_below_34": 3, "hearing_fair_or_worse": 2, "falls_in_6_months": 3,
             "needs_help_with_medications": 1, "limited_walking_one_block": 2, "decreased_social_activity": 1}
    return points(crit, table)


CARG_TT = Calculator(
    id="carg_tt",
    name="Cancer and Aging Research Group Chemotherapy Toxicity Tool (CARG-TT)",
    aliases=("CARG-TT", "CARG Chemotherapy Toxicity Tool", "CARG toxicity score", "Hurria chemotherapy toxicity score"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(
        SEX,
        replace(age(min=18), aliases=("age", "Age (years)", "Age, years")),
        Input("cancer_type", "Cancer type", type="choice", aliases=("Cancer type",), choices=(
            Choice("Gastrointestinal or genitourinary", "gi_gu", ("GI or GU", "Gastrointestinal", "Genitourinary", "GI", "GU")),
            Choice("Other", "other", ("Other cancer",)),
        )),
        Input("dosage", "Chemotherapy dosage (first dose)", type="choice",
              aliases=("Dosage (first dose of chemotherapy)", "Dosage", "Chemotherapy dosing"), choices=(
                  Choice("Standard dose", "standard", ("Standard",)),
                  Choice("Dose reduced", "reduced", ("Reduced dose", "Reduced")),
              )),
        Input("chemo_drugs", "Number of chemotherapy drugs", type="integer", min=1, max=10,
              aliases=("Number of chemotherapy drugs", "Number of chemo drugs")),
        Input("hemoglobin", "Hemoglobin", unit="g/dL", analyte="hemoglobin", min=2, max=25,
              aliases=("Hemoglobin, g/dL", "Hemoglobin", "Hb", "Hgb")),
        Input("crcl", "Creatinine clearance", unit="mL/min", min=1, max=250,
              aliases=("Creatinine clearance, mL/min", "Creatinine clearance", "CrCl"),
              help="Hurria used the Jelliffe equation with ideal body weight."),
        Input("hearing_impaired", "Hearing fair or worse", type="bool", aliases=("Hearing",),
              help="Yes when hearing (with aid if used) is fair, poor or totally deaf; no when excellent or good."),
        Input("falls", "Number of falls in the past 6 months", type="integer", min=0, max=100,
              aliases=("Number of falls in the past six months", "Falls in last 6 months", "Falls")),
        flag("help_with_meds", "Needs some help taking medications", "Needs help taking meds", "Help taking medications"),
        flag("walking_limited", "Limited in walking one block", "Walking ability within one block", "Walking one block limited"),
        flag("social_activity_decreased", "Decreased social activities due to health", "Social activity decreased due to health"),
    ),
    compute=_carg,
    output=Output("integer", "points", None, "CARG-TT score"),
    bands=(
        Band("Low risk (0-5): ~30% risk of grade 3-5 chemotherapy toxicity", None, 6),
        Band("Intermediate risk (6-9): ~52% risk of grade 3-5 toxicity", 6, 10),
        Band("High risk (10-23): ~83% risk of grade 3-5 toxicity", 10, None),
    ),
    tags=("oncology", "geriatrics", "chemotherapy", "toxicity"),
    reference=Reference(
        purpose="Predicts grade 3-5 chemotherapy toxicity in adults aged 65 or older starting chemotherapy.",
        when_to_use="Patients ≥65 years with cancer about to start a new chemotherapy regimen.",
        formula="| Criterion | Points |\n|---|---|\n| Age ≥72 years | 2 |\n| GI or GU cancer | 2 |\n| Standard dose (no reduction) | 2 |\n"
        "| Polychemotherapy (≥2 drugs) | 2 |\n| Hemoglobin <11 g/dL (male) or <10 g/dL (female) | 3 |\n| Creatinine clearance <34 mL/min | 3 |\n"
        "| Hearing fair, poor or deaf | 2 |\n| ≥1 fall in past 6 months | 3 |\n| Needs some help taking medications | 1 |\n"
        "| Somewhat/very limited walking one block | 2 |\n| Decreased social activities due to physical/emotional health | 1 |",
        citation="Hurria A, Togawa K, Mohile SG, et al. Predicting chemotherapy toxicity in older adults with cancer: "
        "a prospective multicenter study. J Clin Oncol. 2011;29(25):3457-3465.",
        notes="Risk groups (0-5, 6-9, 10-23) and their toxicity rates (30%, 52%, 83%) are from the derivation cohort.",
    ),
    examples=(
        Example({"sex": "male", "age": 74, "cancer_type": "other", "dosage": "standard", "chemo_drugs": 2, "hemoglobin": 10.5,
                 "crcl": 52, "hearing_impaired": False, "falls": 0, "help_with_meds": True, "walking_limited": False,
                 "social_activity_decreased": True}, 11,
                "Hurria 2011 points table: 2 (age ≥ 72) + 2 (standard dose) + 2 (polychemotherapy) + 3 (Hb < 11, man) "
                "+ 1 (help with medications) + 1 (decreased social activity) = 11 (hand-computed)"),
        Example({"sex": "female", "age": 70, "cancer_type": "gi_gu", "dosage": "reduced", "chemo_drugs": 2, "hemoglobin": 9.5,
                 "crcl": 30, "hearing_impaired": False, "falls": 0, "help_with_meds": False, "walking_limited": False,
                 "social_activity_decreased": False}, 10,
                "Hurria 2011 points table: GI 2 + polychemo 2 + anemia (female <10) 3 + CrCl <34 3 = 10 (hand-computed)"),
    ),
)

CALCULATORS = [RADIATION_BED, ECOG, KARNOFSKY, CARBOPLATIN, BSA_DOSING, CARG_TT]
