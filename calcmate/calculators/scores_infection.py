"""Infection scores: pneumonia severity (CURB-65, PSI/PORT), strep pharyngitis (Centor/McIsaac,
FeverPAIN) and the SIRS criteria count.

Findings a note does not mention count as absent (0 points), as on MDCalc's forms and in
MedCalc-Bench's labels. PSI's laboratory and vital-sign items that were not measured are scored
normal, as in the PSI derivation (Fine 1997).
"""

from __future__ import annotations

from calcmate.calculators._common import (
    AGE,
    BUN,
    DBP,
    GLUCOSE,
    HEART_RATE,
    RESP_RATE,
    SBP,
    SEX,
    SODIUM,
    TEMPERATURE,
    age,
    optional,
)
from calcmate.calculators.scores_cardiovascular import MISSING_AS_ABSENT, crit
from calcmate.calculators.spec import Band, Calculator, Example, Input, Output, Reference
from calcmate.domains import Domain

UREA_MMOL_PER_BUN_MGDL = 10 / 28.02  # mmol/L urea per mg/dL urea nitrogen (2 N atoms per urea)

PAO2 = Input("pao2", "PaO₂", unit="mmHg", min=10, max=700,
             aliases=("Partial pressure of oxygen (PaO₂) for Apache II", "PaO₂", "PaO2",
                      "Partial pressure of oxygen", "Arterial PaO2"))
HEMATOCRIT = Input("hematocrit", "Hematocrit", unit="%", min=5, max=80, aliases=("Hematocrit", "Hct"))
WBC = Input("wbc", "White blood cell count", unit="10^9/L", analyte="count", min=0, max=500,
            aliases=("White blood cell count", "WBC", "White blood cells", "Leukocyte count"))
PH = Input("ph", "Arterial pH", min=6.5, max=8.0, aliases=("pH", "Arterial pH"))


# -- CURB-65 ---------------------------------------------------------------------------------------
def _curb65(v):
    urea = v["bun"] * UREA_MMOL_PER_BUN_MGDL
    pts = {
        "confusion": int(v["confusion"]),
        "urea_gt_7": int(urea > 7),
        "resp_rate_ge_30": int(v["resp_rate"] >= 30),
        "low_bp": int(v["sbp"] < 90 or v["dbp"] <= 60),
        "age_ge_65": int(v["age"] >= 65),
    }
    return sum(pts.values()), {**pts, "urea_mmol_l": round(urea, 2)}


CURB65 = Calculator(
    id="curb65",
    name="CURB-65 Score for Pneumonia Severity",
    aliases=("CURB-65", "CURB65"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=45,
    tags=("pulmonology", "pneumonia", "infection"),
    inputs=(
        crit("confusion", "Confusion", "Confusion", help="New disorientation to person, place or time."),
        BUN,
        RESP_RATE,
        SBP,
        DBP,
        AGE,
    ),
    compute=_curb65,
    output=Output("integer", "points", label="CURB-65 score"),
    bands=(
        Band("Low risk (0–1): 30-day mortality 0.6–2.7%, consider outpatient care", None, 2),
        Band("Moderate risk (2): 6.8%, consider short inpatient stay", 2, 3),
        Band("Severe (3–5): 14–27.8%, hospitalise, consider ICU if 4–5", 3, None),
    ),
    reference=Reference(
        purpose="Stratifies 30-day mortality of community-acquired pneumonia to guide site of care.",
        when_to_use="Adults with community-acquired pneumonia.",
        formula="One point each: Confusion; Urea > 7 mmol/L (BUN > 19.6 mg/dL); Respiratory rate ≥ 30/min; "
        "SBP < 90 or DBP ≤ 60 mmHg; age ≥ 65. Range 0–5.",
        citation="Lim WS, van der Eerden MM, Laing R, et al. Defining community acquired pneumonia severity on "
        "presentation to hospital: an international derivation and validation study. Thorax. 2003;58(5):377-382.",
        notes=MISSING_AS_ABSENT + " BUN (mg/dL) is converted to urea (mmol/L) as BUN × 10 / 28.02; MDCalc's "
        "shortcut 'BUN > 19 mg/dL' differs only between 19 and 19.6 mg/dL.",
    ),
    examples=(
        Example({"confusion": True, "bun": 30, "resp_rate": 32, "sbp": 85, "dbp": 50, "age": 70}, 5,
                "Hand-computed from Lim 2003's criteria: all five met"),
        Example({"bun": [8, "mmol/L"], "resp_rate": 18, "sbp": 120, "dbp": 70, "age": 44}, 1,
                "Hand-computed from Lim 2003's criteria: urea 8 mmol/L > 7 only"),
    ),
)


# -- PSI / PORT --------------------------------------------------------------------------------------
def _psi(v):
    a = v["age"]
    pts = {
        "age": a - 10 if v["sex"] == "female" else a,
        "nursing_home": 10 if v["nursing_home"] else 0,
        "neoplastic_disease": 30 if v["neoplastic_disease"] else 0,
        "liver_disease": 20 if v["liver_disease"] else 0,
        "chf": 10 if v["chf"] else 0,
        "cerebrovascular_disease": 10 if v["cerebrovascular_disease"] else 0,
        "renal_disease": 10 if v["renal_disease"] else 0,
        "altered_mental_status": 20 if v["altered_mental_status"] else 0,
        "resp_rate_ge_30": 20 if v["resp_rate"] >= 30 else 0,
        "sbp_lt_90": 20 if v["sbp"] < 90 else 0,
        "temperature_abnormal": 15 if (v["temperature"] < 35 or v["temperature"] >= 40) else 0,
        "pulse_ge_125": 10 if v["heart_rate"] >= 125 else 0,
        "ph_lt_7_35": 30 if v["ph"] < 7.35 else 0,
        "bun_ge_30": 20 if v["bun"] >= 30 else 0,
        "sodium_lt_130": 20 if v["sodium"] < 130 else 0,
        "glucose_ge_250": 10 if v["glucose"] >= 250 else 0,
        "hematocrit_lt_30": 10 if v["hematocrit"] < 30 else 0,
        "hypoxemia": 10 if (v["pao2"] < 60 or (v["o2_sat"] is not None and v["o2_sat"] < 90)) else 0,
        "pleural_effusion": 10 if v["pleural_effusion"] else 0,
    }
    return int(round(sum(pts.values()))), pts



PSI = Calculator(
    id="psi_port",
    name="PSI/PORT Score: Pneumonia Severity Index for CAP",
    aliases=("PSI Score: Pneumonia Severity Index for CAP", "Pneumonia Severity Index", "PSI", "PORT Score",
             "PSI/PORT Score"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=29,
    tags=("pulmonology", "pneumonia", "infection"),
    inputs=(
        age(min=18),
        SEX,
        crit("nursing_home", "Nursing home resident", "Nursing home resident"),
        crit("neoplastic_disease", "Neoplastic disease", "Neoplastic disease",
             help="Active cancer (except basal/squamous skin cancer) within the past year."),
        crit("liver_disease", "Liver disease history", "Liver disease severity", "Liver disease history",
             help="Cirrhosis or chronic active hepatitis."),
        crit("chf", "Congestive heart failure history", "Congestive Heart Faliure", "Congestive heart failure"),
        crit("cerebrovascular_disease", "Cerebrovascular disease history", "Cerebrovascular disease history"),
        crit("renal_disease", "Renal disease history", "Renal disease", "Renal disease history"),
        crit("altered_mental_status", "Altered mental status", "Altered mental status"),
        optional(RESP_RATE, 16.0),
        optional(SBP, 120.0),
        optional(TEMPERATURE, 37.0),
        optional(HEART_RATE, 80.0),
        optional(PH, 7.40),
        optional(BUN, 14.0),
        optional(SODIUM, 140.0),
        optional(GLUCOSE, 100.0),
        optional(HEMATOCRIT, 42.0),
        optional(PAO2, 90.0),
        Input("o2_sat", "Oxygen saturation", unit="%", min=30, max=100, optional=True,
              aliases=("O₂ saturation percentage", "SaO2", "SpO2"), help="< 90% scores the hypoxemia item."),
        crit("pleural_effusion", "Pleural effusion on x-ray", "Pleural effusion on x-ray"),
    ),
    compute=_psi,
    output=Output("integer", "points", label="PSI score"),
    bands=(
        Band("Class II (≤ 70): low risk, 0.6–0.7% mortality, outpatient care", None, 71),
        Band("Class III (71–90): low risk, 0.9–2.8%, outpatient or brief observation", 71, 91),
        Band("Class IV (91–130): moderate risk, 8.2–9.3%, inpatient", 91, 131),
        Band("Class V (> 130): high risk, 27–31%, inpatient (consider ICU)", 131, None),
    ),
    reference=Reference(
        purpose="Estimates 30-day mortality in community-acquired pneumonia to guide site of care.",
        when_to_use="Adults with community-acquired pneumonia (not immunocompromised).",
        formula="Age (years; women age − 10); nursing home +10; neoplastic disease +30; liver disease +20; CHF +10; "
        "cerebrovascular disease +10; renal disease +10; altered mental status +20; RR ≥ 30 +20; SBP < 90 +20; "
        "temperature < 35 °C or ≥ 40 °C +15; pulse ≥ 125 +10; pH < 7.35 +30; BUN ≥ 30 mg/dL +20; sodium < 130 +20; "
        "glucose ≥ 250 mg/dL +10; hematocrit < 30% +10; PaO₂ < 60 mmHg (or SaO₂ < 90%) +10; pleural effusion +10. "
        "Class I (age < 50 with no comorbidity or abnormal finding) is decided before scoring.",
        citation="Fine MJ, Auble TE, Yealy DM, et al. A prediction rule to identify low-risk patients with "
        "community-acquired pneumonia. N Engl J Med. 1997;336(4):243-250.",
        notes=MISSING_AS_ABSENT + " Vital signs and laboratory values not measured are scored normal, as in Fine "
        "1997 ('missing values were assumed to be normal'); their defaults are normal values. Result is the point "
        "total (MedCalc-Bench), not the risk class.",
    ),
    examples=(
        Example({"age": 70, "sex": "female", "nursing_home": True, "chf": True, "resp_rate": 32, "bun": 35}, 120,
                "Hand-computed from Fine 1997's table: 70 − 10 + 10 + 10 + 20 + 20"),
        Example({"age": 50, "sex": "male", "ph": 7.30, "pao2": 55, "pleural_effusion": True}, 100,
                "Hand-computed from Fine 1997's table: 50 + 30 + 10 + 10"),
    ),
)


# -- Centor (McIsaac) and FeverPAIN -----------------------------------------------------------------
def _centor(v):
    a = v["age"]
    pts = {
        "age": 1 if 3 <= a < 15 else -1 if a >= 45 else 0,
        "exudate": int(v["exudate"]),
        "lymph_nodes": int(v["lymph_nodes"]),
        "temperature_gt_38": int(v["temperature"] > 38.0),
        "cough_absent": int(v["cough_absent"]),
    }
    return sum(pts.values()), pts


CENTOR = Calculator(
    id="centor_mcisaac",
    name="Centor Score (Modified/McIsaac) for Strep Pharyngitis",
    aliases=("Centor Score", "McIsaac Score", "Modified Centor Score"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=20,
    tags=("infectious disease", "pharyngitis", "primary care", "ENT"),
    inputs=(
        age(min=3),
        crit("exudate", "Exudate or swelling on tonsils", "Exudate or swelling on tonsils"),
        crit("lymph_nodes", "Tender/swollen anterior cervical lymph nodes", "Tender/swollen anterior cervical lymph nodes"),
        TEMPERATURE,
        Input("cough_absent", "Cough absent", type="bool", optional=True, default=True,
              aliases=("Cough Absent", "Absence of cough"),
              help="Yes scores 1. Not documented → yes: cough, like every finding not recorded, is taken as absent."),
    ),
    compute=_centor,
    output=Output("integer", "points", label="McIsaac score"),
    bands=(
        Band("≤ 0: 1–2.5% strep risk, no testing or antibiotics", None, 1),
        Band("1: 5–10%, no testing or antibiotics", 1, 2),
        Band("2: 11–17%, rapid strep test/culture", 2, 3),
        Band("3: 28–35%, rapid strep test/culture", 3, 4),
        Band("≥ 4: 51–53%, test and consider empiric antibiotics", 4, None),
    ),
    reference=Reference(
        purpose="Estimates the likelihood of group A streptococcal pharyngitis.",
        when_to_use="Patients ≥ 3 years with acute sore throat.",
        formula="Age 3–14 +1, 15–44 0, ≥ 45 −1; tonsillar exudate or swelling +1; tender/swollen anterior cervical "
        "nodes +1; temperature > 38 °C +1; cough absent +1. Range −1 to 5.",
        citation="McIsaac WJ, White D, Tannenbaum D, Low DE. A clinical score to reduce unnecessary antibiotic use in "
        "patients with sore throat. CMAJ. 1998;158(1):75-83.",
        notes=MISSING_AS_ABSENT + " 'Cough absent' is phrased as an absence, so an undocumented cough makes it "
        "score 1 (as FeverPAIN's 'no cough or coryza'). Temperature is required (measured).",
    ),
    examples=(
        Example({"age": 10, "exudate": True, "lymph_nodes": True, "temperature": 38.5, "cough_absent": True}, 5,
                "Hand-computed from McIsaac 1998's table: all criteria, age 3–14"),
        Example({"age": 50, "temperature": [100.1, "degrees fahrenheit"], "cough_absent": True}, 0,
                "Hand-computed from McIsaac 1998's table: 100.1 °F = 37.8 °C (no point), cough absent 1, age −1"),
    ),
)


def _feverpain(v):
    table = ("fever", "purulence", "rapid_attendance", "inflamed_tonsils", "no_cough_coryza")
    pts = {k: int(v[k]) for k in table}
    return sum(pts.values()), pts


FEVERPAIN = Calculator(
    id="feverpain",
    name="FeverPAIN Score for Strep Pharyngitis",
    aliases=("FeverPAIN", "FeverPAIN Score"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=33,
    tags=("infectious disease", "pharyngitis", "primary care", "ENT"),
    inputs=(
        crit("fever", "Fever in past 24 hours", "Fever in past 24 hours"),
        crit("purulence", "Purulent tonsils", "Purulent tonsils", "Purulence"),
        crit("rapid_attendance", "Attended rapidly (symptom onset ≤ 3 days)", "Symptom onset ≤3 days"),
        crit("inflamed_tonsils", "Severely inflamed tonsils", "Severe tonsil inflammation"),
        Input("no_cough_coryza", "Absence of cough or coryza", type="bool", optional=True, default=True,
              aliases=("Absence of cough or coryza", "No cough or coryza"),
              help="Yes scores 1. Not documented → yes: cough and coryza, like every finding not recorded, are "
              "taken as absent."),
    ),
    compute=_feverpain,
    output=Output("integer", "points", label="FeverPAIN score"),
    bands=(
        Band("0–1: 13–18% streptococcus; no antibiotics", None, 2),
        Band("2–3: 34–40%; consider delayed antibiotic prescription", 2, 4),
        Band("4–5: 62–65%; consider immediate antibiotics if severe", 4, None),
    ),
    reference=Reference(
        purpose="Predicts streptococcal pharyngitis and guides antibiotic prescribing in primary care.",
        when_to_use="Patients ≥ 3 years with acute sore throat.",
        formula="One point each: Fever in past 24 h; Purulence; Attend rapidly (≤ 3 days); severely Inflamed tonsils; "
        "No cough or coryza. Range 0–5.",
        citation="Little P, Moore M, Hobbs FDR, et al. PRImary care Streptococcal Management (PRISM) study: "
        "identifying clinical variables associated with Lancefield group A β-haemolytic streptococci and Lancefield "
        "non-Group A streptococcal throat infections from two cohorts of patients presenting with an acute sore "
        "throat. BMJ Open. 2013;3(10):e003943.",
        notes=MISSING_AS_ABSENT + " The fifth item is phrased as an absence: when cough/coryza are not documented "
        "they are taken as absent, so the item scores 1 (the maintained MedCalc-Bench implementation agrees; the "
        "v1.0 labels missed this point).",
    ),
    examples=(
        Example({"fever": True, "purulence": True, "rapid_attendance": True, "inflamed_tonsils": True,
                 "no_cough_coryza": True}, 5, "Hand-computed from Little 2013's score: all five items"),
        Example({"fever": True, "no_cough_coryza": False}, 1,
                "Hand-computed from Little 2013's score: fever only, cough present"),
    ),
)


# -- SIRS criteria count ------------------------------------------------------------------------------
def _sirs(v):
    t = v["temperature"]
    met = {
        "temperature": t > 38.0 or t < 36.0,
        "heart_rate_gt_90": v["heart_rate"] > 90,
        "resp_rate_or_paco2": v["resp_rate"] > 20 or (v["paco2"] is not None and v["paco2"] < 32),
        "wbc_or_bands": v["wbc"] > 12 or v["wbc"] < 4 or (v["bands"] is not None and v["bands"] > 10),
    }
    return sum(int(x) for x in met.values()), met


SIRS = Calculator(
    id="sirs_criteria",
    name="SIRS Criteria",
    aliases=("SIRS Criteria Count", "Systemic Inflammatory Response Syndrome criteria"),
    domain=Domain.CRITICAL_CARE,
    medcalc_bench_id=51,
    tags=("sepsis", "infection", "critical care"),
    inputs=(
        TEMPERATURE,
        HEART_RATE,
        RESP_RATE,
        Input("paco2", "PaCO₂", unit="mmHg", min=5, max=200, optional=True, aliases=("PaCO₂", "PaCO2"),
              help="Optional; < 32 mmHg meets the respiratory criterion. Not given → not met."),
        WBC,
        Input("bands", "Band forms", unit="%", min=0, max=100, optional=True, aliases=("Bands", "Band neutrophils"),
              help="Optional; > 10% immature forms meets the WBC criterion. Not given → not met."),
    ),
    compute=_sirs,
    output=Output("integer", "criteria", label="SIRS criteria met"),
    bands=(
        Band("< 2 criteria: SIRS not met", None, 2),
        Band("≥ 2 criteria: SIRS", 2, None),
    ),
    reference=Reference(
        purpose="Counts the systemic inflammatory response syndrome criteria.",
        when_to_use="Adults with suspected infection or systemic inflammation (the 1992 consensus definitions).",
        formula="One each: temperature > 38 °C or < 36 °C; heart rate > 90/min; respiratory rate > 20/min or PaCO₂ "
        "< 32 mmHg; WBC > 12,000/mm³ or < 4,000/mm³ or > 10% bands. SIRS = ≥ 2 criteria.",
        citation="Bone RC, Balk RA, Cerra FB, et al. Definitions for sepsis and organ failure and guidelines for the "
        "use of innovative therapies in sepsis. The ACCP/SCCM Consensus Conference Committee. Chest. "
        "1992;101(6):1644-1655.",
        notes="Temperature, heart rate, respiratory rate and WBC are required; PaCO₂ and bands are optional and "
        "count as not met when absent. This is the criteria count; the separate 'SIRS, Sepsis, and Septic Shock "
        "Criteria' calculator gives the category. MedCalc-Bench writes WBC per mm³ as 'm^3'; read as mm³.",
    ),
    examples=(
        Example({"temperature": 38.5, "heart_rate": 110, "resp_rate": 24, "wbc": 15}, 4,
                "Hand-computed from Bone 1992's criteria: all four met"),
        Example({"temperature": [95.9, "°F"], "heart_rate": 84, "resp_rate": 18, "wbc": [9800, "mm^3"]}, 1,
                "Hand-computed from Bone 1992's criteria: only temperature < 36 °C (95.9 °F = 35.5 °C)"),
    ),
)

CALCULATORS = [CURB65, PSI, CENTOR, FEVERPAIN, SIRS]
