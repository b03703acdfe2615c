"""Delirium: risk prediction on admission (AWOL) and ICU screening (CAM-ICU)."""

from __future__ import annotations

from dataclasses import replace

from calcmate.calculators._common import AGE_ADULT, flag
from calcmate.calculators.spec import Band, Calculator, CalculatorInputError, Example, Input, Output, Reference
from calcmate.domains import Domain


def _awol(v):
    pts = {
        "age_80_or_older": 1 if v["age"] >= 80 else 0,
        "cannot_spell_world_backward": 1 if v["world_backward_failed"] else 0,
        "disoriented_to_place": 1 if v["disoriented"] else 0,
        "moderate_or_severe_illness": 1 if v["ill"] else 0,
    }
    return sum(pts.values()), pts


AWOL = Calculator(
    id="awol_delirium",
    name="AWOL Score for Delirium",
    aliases=("AWOL Score", "AWOL delirium prediction rule", "AWOL tool"),
    domain=Domain.NEUROLOGY,
    inputs=(
        replace(AGE_ADULT, aliases=(*AGE_ADULT.aliases, "Age ≥80 years")),
        flag("world_backward_failed", "Unable to spell 'world' backward", "Spell 'world' backward", "Unable to spell WORLD backwards",
             "World backward"),
        flag("disoriented", "Not oriented to place", "Orientation", "Disoriented", "Not oriented to city, state, county, hospital name and floor",
             help="Fails to name the city, state, county, hospital and floor."),
        flag("ill", "Nurse-rated illness severity moderate or severe", "Illness severity", "Moderately or severely ill",
             help="Yes if the nurse rates the patient moderately or severely ill (vs mild/not ill)."),
    ),
    compute=_awol,
    output=Output("integer", "points", None, "AWOL score"),
    bands=(
        Band("Score 0: 2% delirium risk", None, 1), Band("Score 1: 4% delirium risk", 1, 2),
        Band("Score 2: 14% delirium risk", 2, 3), Band("Score 3: 20% delirium risk", 3, 4),
        Band("Score 4: 64% delirium risk", 4, None),
    ),
    tags=("neurology", "delirium", "geriatrics", "hospital medicine"),
    reference=Reference(
        purpose="Predicts the risk of developing delirium during a medical hospitalisation, assessed at admission.",
        when_to_use="Medical inpatients over 50 years without delirium on admission.",
        formula="One point each: Age ≥80 years; unable to spell 'World' backward; not Oriented to place "
        "(city, state, county, hospital, floor); iLlness severity moderate or severe (nurse-rated). Total 0-4.",
        citation="Douglas VC, Hessler CS, Dhaliwal G, et al. The AWOL tool: derivation and validation of a delirium "
        "prediction rule. J Hosp Med. 2013;8(9):493-499.",
        interpretation="Delirium rates by score in the combined cohorts: 0: 2%, 1: 4%, 2: 14%, 3: 20%, 4: 64%.",
    ),
    examples=(
        Example({"age": 82, "world_backward_failed": True, "disoriented": False, "ill": True}, 3,
                "Douglas 2013 points: age ≥80 + WORLD + illness = 3 (hand-computed)"),
        Example({"age": 79, "world_backward_failed": False, "disoriented": False, "ill": False}, 0,
                "Douglas 2013 points: age 79 scores 0 (hand-computed)"),
    ),
)


def _cam_icu(v):
    calc = "cam_icu"
    rass = v["rass"]
    if rass is not None and rass <= -4:
        return "Unable to assess", {"reason": "RASS -4/-5: coma; reassess later"}
    f3 = v["altered_loc"] if v["altered_loc"] is not None else (rass != 0 if rass is not None else None)
    feats = {"acute_change_or_fluctuation": v["acute_change"], "inattention": v["inattention"],
             "altered_level_of_consciousness": f3, "disorganized_thinking": v["disorganized_thinking"]}
    if not (v["acute_change"] and v["inattention"]):
        return "Negative", feats
    if f3 is None:
        raise CalculatorInputError(calc, "altered_loc", "needed when features 1 and 2 are present (or give `rass`)")
    if f3:
        return "Positive", feats
    if v["disorganized_thinking"] is None:
        raise CalculatorInputError(calc, "disorganized_thinking", "needed when features 1 and 2 are present and RASS is 0")
    return ("Positive" if v["disorganized_thinking"] else "Negative"), feats


CAM_ICU = Calculator(
    id="cam_icu",
    name="Confusion Assessment Method for the ICU (CAM-ICU)",
    aliases=("CAM-ICU", "Confusion Assessment Method for the ICU"),
    domain=Domain.NEUROLOGY,
    inputs=(
        Input("rass", "RASS", type="integer", min=-5, max=4, optional=True,
              aliases=("RASS", "Richmond Agitation-Sedation Scale", "RASS score"),
              help="Optional. RASS -4/-5 means the patient cannot be assessed; otherwise RASS ≠ 0 is feature 3."),
        flag("acute_change", "Feature 1: acute change or fluctuating course of mental status",
             "Acute onset or fluctuating course", "Acute change or fluctuation in mental status", "Feature 1"),
        flag("inattention", "Feature 2: inattention (>2 errors on the letters test)", "Inattention", "Feature 2",
             "Inattention (>2 errors)"),
        Input("altered_loc", "Feature 3: altered level of consciousness (RASS other than 0)", type="bool", optional=True,
              aliases=("Altered level of consciousness", "Feature 3", "Altered LOC"),
              help="Optional when `rass` is given (then RASS ≠ 0)."),
        Input("disorganized_thinking", "Feature 4: disorganized thinking (>1 error on questions + command)", type="bool",
              optional=True, aliases=("Disorganized thinking", "Feature 4"),
              help="Only needed when features 1 and 2 are present and feature 3 is absent."),
    ),
    compute=_cam_icu,
    output=Output("category", None, None, "CAM-ICU"),
    bands=(
        Band("Delirium present", match="Positive"), Band("No delirium", match="Negative"),
        Band("Too sedated to assess (RASS -4/-5)", match="Unable to assess"),
    ),
    tags=("neurology", "delirium", "critical care"),
    reference=Reference(
        purpose="Detects delirium in ICU patients, including those who are intubated and non-verbal.",
        when_to_use="ICU patients with RASS -3 to +4.",
        formula="Delirium = Feature 1 (acute change or fluctuating course) AND Feature 2 (inattention) AND "
        "(Feature 3 (altered level of consciousness, RASS ≠ 0) OR Feature 4 (disorganized thinking)).",
        citation="Ely EW, Inouye SK, Bernard GR, et al. Delirium in mechanically ventilated patients: validity and "
        "reliability of the confusion assessment method for the intensive care unit (CAM-ICU). JAMA. 2001;286(21):2703-2710.",
        notes="Thresholds (>2 errors of 10 letters for inattention; >1 error for disorganized thinking) are from the "
        "2014 CAM-ICU training manual.",
    ),
    examples=(
        Example({"acute_change": True, "inattention": True, "rass": -1}, "Positive",
                "Ely 2001 algorithm: features 1 + 2 + 3 (RASS -1) = delirium"),
        Example({"acute_change": True, "inattention": True, "rass": 0, "disorganized_thinking": False}, "Negative",
                "Ely 2001 algorithm: RASS 0 and no disorganized thinking = no delirium"),
        Example({"acute_change": False, "inattention": True}, "Negative", "Ely 2001 algorithm: feature 1 absent = no delirium"),
    ),
)

CALCULATORS = [AWOL, CAM_ICU]
