"""Cardiovascular and thromboembolic risk scores: AF stroke/bleeding risk, chest pain, peri-operative
cardiac risk, 10-year CHD risk, and VTE/PE probability.

Point-score criteria that a note does not mention count as absent (0 points), as on MDCalc's forms
(every toggle starts at "No") and in MedCalc-Bench's labels; each such input says so in its help.
Measured values (age, blood pressure, lipids) are always required.
"""

from __future__ import annotations

import math

from calcmate.calculators._common import AGE, HEART_RATE, SBP, SEX, age, flag
from calcmate.calculators.spec import (
    Band,
    Calculator,
    CalculatorInputError,
    Choice,
    Example,
    Input,
    Output,
    Reference,
    points,
)
from calcmate.domains import Domain

ABSENT = "Not documented → absent (0 points)."
MISSING_AS_ABSENT = (
    "Criteria not documented are scored as absent (0 points), as on MDCalc's form where every item "
    "starts at 'No'; MedCalc-Bench labels follow the same convention."
)


def crit(key: str, label: str, *aliases: str, help: str = "") -> Input:
    """An optional yes/no criterion that defaults to absent."""
    return flag(key, label, *aliases, help=(help + " " + ABSENT).strip(), optional=True)


def _any(v, *keys: str) -> bool:
    return any(bool(v.get(k)) for k in keys)


# -- CHA2DS2-VASc / CHA2DS2-VA ---------------------------------------------------------------------
_CHF = crit("chf", "Congestive heart failure history", "Congestive Heart Faliure", "Congestive Heart Failure",
            "CHF history", "Chronic heart failure", "History of congestive heart failure",
            help="Signs/symptoms of heart failure or objective evidence of reduced LVEF.")
_HTN = crit("hypertension", "Hypertension history", "Hypertension history", "Hypertension", "History of hypertension")
_DM = crit("diabetes", "Diabetes mellitus history", "Diabetes history", "Diabetes mellitus",
           "History of diabetes mellitus")
_STROKE = crit("stroke", "Prior stroke", "Stroke", "Stroke history", "History of stroke")
_TIA = crit("tia", "Prior transient ischemic attack", "Transient Ischemic Attacks History", "TIA history")
_TE = crit("thromboembolism", "Prior thromboembolism", "Thromboembolism history",
           "Stroke/TIA/thromboembolism history", "Prior stroke, TIA, or arterial thromboembolism",
           help="Systemic (arterial) thromboembolism; the combined MedMCP-Calc field also maps here.")
_VASC = crit("vascular_disease", "Vascular disease history", "Vascular disease history",
             "Vascular disease history (prior MI, peripheral artery disease, or aortic plaque)", "Vascular disease",
             help="Prior myocardial infarction, peripheral artery disease or aortic plaque.")


def _cha2ds2_age(a: float) -> int:
    return 2 if a >= 75 else 1 if a >= 65 else 0


def _cha2ds2_vasc(v):
    pts = {
        "chf": int(v["chf"]),
        "hypertension": int(v["hypertension"]),
        "age": _cha2ds2_age(v["age"]),
        "diabetes": int(v["diabetes"]),
        "stroke_tia_thromboembolism": 2 if _any(v, "stroke", "tia", "thromboembolism") else 0,
        "vascular_disease": int(v["vascular_disease"]),
        "sex_female": 1 if v["sex"] == "female" else 0,
    }
    return sum(pts.values()), pts


def _cha2ds2_va(v):
    total, pts = _cha2ds2_vasc({**v, "sex": "male"})
    pts.pop("sex_female")
    return total, pts


_CHA_FORMULA = """| Criterion | Points |
|---|---|
| Congestive heart failure | 1 |
| Hypertension | 1 |
| Age ≥ 75 years | 2 |
| Diabetes mellitus | 1 |
| Prior stroke, TIA or thromboembolism | 2 |
| Vascular disease (prior MI, PAD, aortic plaque) | 1 |
| Age 65–74 years | 1 |
| Sex category female | 1 |"""

CHA2DS2_VASC = Calculator(
    id="cha2ds2_vasc",
    name="CHA₂DS₂-VASc Score for Atrial Fibrillation Stroke Risk",
    aliases=("CHA2DS2-VASc Score for Atrial Fibrillation Stroke Risk", "CHA2DS2-VASc", "CHA2DS2-VASc Score"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=4,
    tags=("cardiology", "atrial fibrillation", "stroke", "anticoagulation"),
    inputs=(AGE, SEX, _CHF, _HTN, _STROKE, _TIA, _TE, _VASC, _DM),
    compute=_cha2ds2_vasc,
    output=Output("integer", "points", label="CHA₂DS₂-VASc score"),
    bands=(
        Band("Low risk (men 0): anticoagulation not recommended", None, 1),
        Band("Low-moderate risk (1; women 1 = sex only): consider anticoagulation in men", 1, 2),
        Band("Moderate-high risk (≥2): oral anticoagulation recommended", 2, None),
    ),
    reference=Reference(
        purpose="Estimates annual stroke/thromboembolism risk in non-valvular atrial fibrillation.",
        when_to_use="Patients with non-valvular AF deciding on oral anticoagulation.",
        formula=_CHA_FORMULA + "\n\nScore range 0–9. Stroke, TIA and thromboembolism together score 2 once.",
        citation="Lip GYH, Nieuwlaat R, Pisters R, Lane DA, Crijns HJGM. Refining clinical risk stratification for "
        "predicting stroke and thromboembolism in atrial fibrillation using a novel risk factor-based approach: the "
        "Euro Heart Survey on atrial fibrillation. Chest. 2010;137(2):263-272.",
        notes=MISSING_AS_ABSENT + " Female sex alone (score 1) does not by itself indicate anticoagulation.",
    ),
    examples=(
        Example({"age": 72, "sex": "female", "hypertension": True}, 3,
                "Hand-computed from Lip 2010's points table: age 65–74 (1) + female (1) + hypertension (1)"),
        Example({"age": 80, "sex": "male", "stroke": True, "diabetes": True, "chf": True}, 6,
                "Hand-computed from Lip 2010's points table: age ≥75 (2) + stroke (2) + diabetes (1) + CHF (1)"),
    ),
)

CHA2DS2_VA = Calculator(
    id="cha2ds2_va",
    name="CHA₂DS₂-VA Score for Atrial Fibrillation Stroke Risk",
    aliases=("CHA2DS2-VA", "CHA2DS2-VA Score"),
    domain=Domain.MEDICINE,
    tags=("cardiology", "atrial fibrillation", "stroke", "anticoagulation"),
    inputs=(AGE, _CHF, _HTN, _STROKE, _TIA, _TE, _VASC, _DM),
    compute=_cha2ds2_va,
    output=Output("integer", "points", label="CHA₂DS₂-VA score"),
    bands=(
        Band("Low risk: anticoagulation not recommended", None, 1),
        Band("Anticoagulation should be considered", 1, 2),
        Band("Anticoagulation recommended", 2, None),
    ),
    reference=Reference(
        purpose="Sex-neutral version of CHA₂DS₂-VASc for stroke risk in atrial fibrillation (2024 ESC guideline).",
        when_to_use="Patients with AF deciding on oral anticoagulation.",
        formula=_CHA_FORMULA.replace("| Sex category female | 1 |", "").strip() + "\n\nScore range 0–8 (no sex point).",
        citation="Van Gelder IC, Rienstra M, Bunting KV, et al. 2024 ESC Guidelines for the management of atrial "
        "fibrillation developed in collaboration with EACTS. Eur Heart J. 2024;45(36):3314-3414.",
        notes=MISSING_AS_ABSENT,
    ),
    examples=(
        Example({"age": 70, "hypertension": True}, 2,
                "Hand-computed from the ESC 2024 CHA₂DS₂-VA table: age 65–74 (1) + hypertension (1)"),
    ),
)


# -- HAS-BLED --------------------------------------------------------------------------------------
def _has_bled(v):
    alcohol = v["alcohol"] or (v["alcohol_drinks_per_week"] is not None and v["alcohol_drinks_per_week"] >= 8)
    pts = {
        "hypertension": int(v["hypertension"]),
        "renal_disease": int(v["renal_disease"]),
        "liver_disease": int(v["liver_disease"]),
        "stroke": int(v["stroke"]),
        "bleeding": int(v["bleeding"]),
        "labile_inr": int(v["labile_inr"]),
        "elderly": int(v["age"] > 65),
        "drugs": int(v["drugs"]),
        "alcohol": int(alcohol),
    }
    return sum(pts.values()), pts


HAS_BLED = Calculator(
    id="has_bled",
    name="HAS-BLED Score for Major Bleeding Risk",
    aliases=("HAS-BLED", "HAS-BLED Score"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=25,
    tags=("cardiology", "atrial fibrillation", "bleeding", "anticoagulation"),
    inputs=(
        AGE,
        crit("hypertension", "Hypertension (uncontrolled, SBP > 160 mmHg)", "Hypertension history",
             "Hypertension (Uncontrolled, >160 mmHg systolic)", "Uncontrolled hypertension"),
        crit("renal_disease", "Abnormal renal function", "Renal disease criteria for the HAS-BLED rule",
             "Renal disease (Dialysis, transplant, Cr >2.26 mg/dL)", "Renal disease",
             help="Dialysis, renal transplant, or creatinine ≥ 2.26 mg/dL (200 µmol/L)."),
        crit("liver_disease", "Abnormal liver function", "Liver disease criteria for the HAS-BLED rule",
             "Liver disease (Cirrhosis or bilirubin >2x normal with AST/ALT/AP >3x normal)", "Liver disease",
             help="Cirrhosis, or bilirubin > 2× ULN with AST/ALT/ALP > 3× ULN."),
        crit("stroke", "Prior stroke", "Stroke", "Stroke history"),
        crit("bleeding", "Prior major bleeding or predisposition to bleeding",
             "Prior major bleeding or predisposition to bleeding", "Bleeding history"),
        crit("labile_inr", "Labile INR", "Labile international normalized ratio", "Labile INR (TTR <60%)",
             help="Unstable/high INRs or time in therapeutic range < 60%."),
        crit("drugs", "Medication predisposing to bleeding", "Medication usage predisposing to bleeding",
             "Medication usage predisposing to bleeding (Aspirin, clopidogrel, NSAIDs)",
             help="Antiplatelet agents or NSAIDs."),
        crit("alcohol", "Alcohol use (≥ 8 drinks/week)", "Alcohol use (≥8 drinks/week)", "Alcohol use"),
        Input("alcohol_drinks_per_week", "Alcoholic drinks per week", unit="1/week", min=0, max=500,
              optional=True, aliases=("Number of Alcoholic Drinks Per Week",),
              help="If given, ≥ 8 drinks/week scores the alcohol point. Optional, default not given."),
    ),
    compute=_has_bled,
    output=Output("integer", "points", label="HAS-BLED score"),
    bands=(
        Band("Low risk (0–1): ~1 major bleed per 100 patient-years", None, 2),
        Band("Moderate risk (2): ~1.9 bleeds per 100 patient-years", 2, 3),
        Band("High risk (≥3): caution and regular review", 3, None),
    ),
    reference=Reference(
        purpose="Estimates 1-year major bleeding risk in patients with atrial fibrillation on anticoagulation.",
        when_to_use="AF patients being considered for or taking oral anticoagulation, to flag modifiable bleeding risks.",
        formula="One point each: Hypertension (uncontrolled, SBP > 160), Abnormal renal function, Abnormal liver "
        "function, Stroke, Bleeding history or predisposition, Labile INR, Elderly (age > 65), Drugs (antiplatelets/"
        "NSAIDs), Alcohol (≥ 8 drinks/week). Range 0–9.",
        citation="Pisters R, Lane DA, Nieuwlaat R, de Vos CB, Crijns HJGM, Lip GYH. A novel user-friendly score "
        "(HAS-BLED) to assess 1-year risk of major bleeding in patients with atrial fibrillation: the Euro Heart "
        "Survey. Chest. 2010;138(5):1093-1100.",
        notes=MISSING_AS_ABSENT + " MedCalc-Bench's 'Hypertension history' entity feeds the hypertension item.",
    ),
    examples=(
        Example({"age": 70, "hypertension": True, "drugs": True, "alcohol_drinks_per_week": 10}, 4,
                "Hand-computed from Pisters 2010's table: H (1) + E age > 65 (1) + D drugs (1) + alcohol ≥ 8/week (1)"),
        Example({"age": 60}, 0, "Hand-computed from Pisters 2010's table: no criteria"),
    ),
)


# -- HEART -----------------------------------------------------------------------------------------
def _heart(v):
    rf = [k for k in ("hypertension", "hypercholesterolemia", "diabetes", "obesity", "smoking", "family_history")
          if v[k]]
    athero = _any(v, "atherosclerotic_disease", "tia", "stroke")
    risk = 2 if (len(rf) >= 3 or athero) else 1 if rf else 0
    a = v["age"]
    pts = {
        "history": v["history"],
        "ecg": v["ecg"],
        "age": 2 if a >= 65 else 1 if a >= 45 else 0,
        "risk_factors": risk,
        "troponin": v["troponin"],
    }
    return sum(pts.values()), {**pts, "risk_factor_count": len(rf), "atherosclerotic_disease": athero}


HEART = Calculator(
    id="heart_score",
    name="HEART Score for Major Cardiac Events",
    aliases=("HEART Score", "HEART score for chest pain"),
    domain=Domain.CRITICAL_CARE,
    medcalc_bench_id=18,
    tags=("cardiology", "chest pain", "emergency", "acute coronary syndrome"),
    inputs=(
        Input("history", "History (suspicion of ACS)", type="choice", aliases=("Suspicion History", "History"),
              choices=(Choice("Slightly suspicious", 0, ("slightly", "low suspicion")),
                       Choice("Moderately suspicious", 1, ("moderately", "moderate suspicion")),
                       Choice("Highly suspicious", 2, ("highly", "high suspicion")))),
        Input("ecg", "ECG", type="choice", aliases=("Electrocardiogram Test", "EKG", "Electrocardiogram"),
              choices=(Choice("Normal", 0),
                       Choice("Non-specific repolarization disturbance", 1,
                              ("Non-specific repolarization", "nonspecific repolarization",
                               "LBBB, LVH or repolarization changes")),
                       Choice("Significant ST deviation", 2, ("ST deviation", "significant ST depression")))),
        AGE,
        Input("troponin", "Initial troponin", type="choice", aliases=("Initial troponin", "Troponin"),
              choices=(Choice("≤ normal limit", 0, ("less than or equal to normal limit", "normal")),
                       Choice("1–3× normal limit", 1,
                              ("between the normal limit or up to three times the normal limit",
                               "between normal limit and three times normal limit", "1-3x normal limit")),
                       Choice("> 3× normal limit", 2, ("greater than three times normal limit", ">3x normal limit")))),
        crit("hypertension", "Hypertension", "Hypertension history"),
        crit("hypercholesterolemia", "Hypercholesterolemia", "hypercholesterolemia"),
        crit("diabetes", "Diabetes mellitus", "Diabetes mellitus criteria for CCI rule", "Diabetes history"),
        crit("obesity", "Obesity (BMI > 30)", "obesity"),
        crit("smoking", "Smoking (current or quit ≤ 3 months)", "smoking", "Current smoker"),
        crit("family_history", "Family history of cardiovascular disease",
             "parent or sibling with Cardiovascular disease before age 65", "Family history of CVD"),
        crit("atherosclerotic_disease", "Known atherosclerotic disease", "atherosclerotic disease",
             help="Prior MI, PCI/CABG, CVA/TIA or peripheral arterial disease (scores risk factors 2)."),
        crit("tia", "Prior TIA", "Transient Ischemic Attacks History", help="Counts as atherosclerotic disease."),
        crit("stroke", "Prior stroke", "Stroke", "Cerebrovascular Accident",
             help="Counts as atherosclerotic disease."),
    ),
    compute=_heart,
    output=Output("integer", "points", label="HEART score"),
    bands=(
        Band("Low risk (0–3): 0.9–1.7% MACE at 6 weeks", None, 4),
        Band("Moderate risk (4–6): 12–16.6% MACE", 4, 7),
        Band("High risk (7–10): 50–65% MACE", 7, None),
    ),
    reference=Reference(
        purpose="Predicts 6-week risk of major adverse cardiac events in emergency department chest pain.",
        when_to_use="Adults ≥ 21 with suspected acute coronary syndrome; not for STEMI or new ST changes.",
        formula="| Item | 0 | 1 | 2 |\n|---|---|---|---|\n| History | slightly suspicious | moderately | highly |\n"
        "| ECG | normal | non-specific repolarization | significant ST deviation |\n"
        "| Age | < 45 | 45–64 | ≥ 65 |\n"
        "| Risk factors (HTN, hypercholesterolemia, DM, obesity BMI > 30, smoking, family history) | none | 1–2 | ≥ 3 "
        "or known atherosclerotic disease |\n| Initial troponin | ≤ normal limit | 1–3× | > 3× |",
        citation="Six AJ, Backus BE, Kelder JC. Chest pain in the emergency room: value of the HEART score. "
        "Neth Heart J. 2008;16(6):191-196.",
        notes=MISSING_AS_ABSENT + " Prior TIA/stroke count as known atherosclerotic disease (MDCalc, Backus 2013). "
        "MedCalc-Bench names the diabetes entity 'Diabetes mellitus criteria for CCI rule'.",
    ),
    examples=(
        Example({"history": "Moderately suspicious", "ecg": "Normal", "age": 50, "troponin": "≤ normal limit",
                 "hypertension": True, "smoking": True}, 3,
                "Hand-computed from Six 2008's table: history 1 + age 45–64 1 + 1–2 risk factors 1"),
        Example({"history": "Highly suspicious", "ecg": "Significant ST deviation", "age": 70,
                 "troponin": "> 3× normal limit", "tia": True}, 10,
                "Hand-computed from Six 2008's table: maximum score with known atherosclerotic disease"),
    ),
)


# -- RCRI ------------------------------------------------------------------------------------------
def _rcri(v):
    pts = {
        "high_risk_surgery": int(v["high_risk_surgery"]),
        "ischemic_heart_disease": int(v["ischemic_heart_disease"]),
        "chf": int(v["chf"]),
        "cerebrovascular_disease": int(v["cerebrovascular_disease"]),
        "insulin": int(v["insulin"]),
        "creatinine_gt_2": int(v["creatinine"] > 2.0),
    }
    return sum(pts.values()), pts


RCRI = Calculator(
    id="rcri",
    name="Revised Cardiac Risk Index for Pre-Operative Risk",
    aliases=("RCRI", "Revised Cardiac Risk Index", "Lee Index", "Lee Revised Cardiac Risk Index"),
    domain=Domain.CRITICAL_CARE,
    medcalc_bench_id=17,
    tags=("cardiology", "perioperative", "surgery"),
    inputs=(
        crit("high_risk_surgery", "High-risk surgery (intraperitoneal, intrathoracic, suprainguinal vascular)",
             "Elevated-risk surgery", "High-risk surgery (intraperitoneal, intrathoracic, suprainguinal vascular)",
             "High-risk surgery"),
        crit("ischemic_heart_disease", "History of ischemic heart disease", "History of ischemic heart disease",
             help="Prior MI, positive stress test, current ischemic chest pain, nitrate therapy, or pathological Q waves."),
        crit("chf", "History of congestive heart failure", "Congestive Heart Failure criteria for the Cardiac Risk Index rule",
             "History of congestive heart failure"),
        crit("cerebrovascular_disease", "History of cerebrovascular disease (stroke/TIA)",
             "History of cerebrovascular disease", "History of cerebrovascular disease (TIA/stroke)",
             "Cerebrovascular disease history"),
        crit("insulin", "Pre-operative treatment with insulin", "Pre-operative treatment with insulin"),
        Input("creatinine", "Pre-operative creatinine", unit="mg/dL", analyte="creatinine", min=0.05, max=30,
              aliases=("Pre-operative creatinine", "Pre-operative creatinine >2 mg/dL (176.8 µmol/L)", "creatinine",
                       "Serum creatinine"),
              help="> 2 mg/dL (176.8 µmol/L) scores 1."),
    ),
    compute=_rcri,
    output=Output("integer", "points", label="RCRI"),
    bands=(
        Band("Class I (0): 3.9% 30-day MACE", None, 1),
        Band("Class II (1): 6.0% 30-day MACE", 1, 2),
        Band("Class III (2): 10.1% 30-day MACE", 2, 3),
        Band("Class IV (≥3): 15% 30-day MACE", 3, None),
    ),
    reference=Reference(
        purpose="Estimates risk of major cardiac complications after non-cardiac surgery.",
        when_to_use="Adults ≥ 45 (or with risk factors) before elective non-cardiac surgery.",
        formula="One point each: high-risk surgery; ischemic heart disease; congestive heart failure; cerebrovascular "
        "disease; pre-operative insulin; pre-operative creatinine > 2 mg/dL. Range 0–6.",
        citation="Lee TH, Marcantonio ER, Mangione CM, et al. Derivation and prospective validation of a simple index "
        "for prediction of cardiac risk of major noncardiac surgery. Circulation. 1999;100(10):1043-1049.",
        notes=MISSING_AS_ABSENT + " Risk per class from Duceppe 2017 (CCS guideline); Lee 1999 reported 0.4/0.9/6.6/11%.",
    ),
    examples=(
        Example({"high_risk_surgery": True, "ischemic_heart_disease": True, "creatinine": 1.6}, 2,
                "Hand-computed from Lee 1999's criteria: high-risk surgery + ischemic heart disease"),
        Example({"insulin": True, "creatinine": [200, "µmol/L"]}, 2,
                "Hand-computed from Lee 1999's criteria: insulin + creatinine 200 µmol/L (2.26 mg/dL) > 2 mg/dL"),
    ),
)


# -- Framingham (ATP III hard CHD) -------------------------------------------------------------------
def _framingham(v):
    a, tc, hdl, sbp = v["age"], v["total_cholesterol"], v["hdl"], v["sbp"]
    smoker, treated = int(v["smoker"]), int(v["bp_treated"])
    ln = math.log
    if v["sex"] == "male":
        age_smoke = min(a, 70)
        s = (52.00961 * ln(a) + 20.014077 * ln(tc) - 0.905964 * ln(hdl) + 1.305784 * ln(sbp) + 0.241549 * treated
             + 12.096316 * smoker - 4.605038 * ln(a) * ln(tc) - 2.84367 * ln(age_smoke) * smoker
             - 2.93323 * ln(a) * ln(a) - 172.300168)
        s0 = 0.9402
    else:
        age_smoke = min(a, 78)
        s = (31.764001 * ln(a) + 22.465206 * ln(tc) - 1.187731 * ln(hdl) + 2.552905 * ln(sbp) + 0.420251 * treated
             + 13.07543 * smoker - 5.060998 * ln(a) * ln(tc) - 2.996945 * ln(age_smoke) * smoker - 146.5933061)
        s0 = 0.98767
    risk = (1 - s0 ** math.exp(s)) * 100
    return risk, {"linear_predictor": s, "baseline_survival": s0}


FRAMINGHAM = Calculator(
    id="framingham_hard_chd",
    name="Framingham Risk Score for Hard Coronary Heart Disease",
    aliases=("Framingham Risk Score", "ATP III Framingham Risk Score", "Framingham Hard CHD"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=46,
    tags=("cardiology", "prevention", "lipids"),
    inputs=(
        age(min=20, max=120),
        SEX,
        Input("total_cholesterol", "Total cholesterol", unit="mg/dL", analyte="cholesterol", min=50, max=1000,
              aliases=("Total cholesterol", "TC")),
        Input("hdl", "HDL cholesterol", unit="mg/dL", analyte="cholesterol", min=5, max=250,
              aliases=("high-density lipoprotein cholesterol", "HDL cholesterol", "HDL")),
        SBP,
        crit("smoker", "Current smoker", "Smoker", "smoking", help="Any cigarette smoking in the past month."),
        crit("bp_treated", "Blood pressure treated with medication", "Blood pressure being treated with medicines",
             "On antihypertensive medication"),
    ),
    compute=_framingham,
    output=Output("decimal", "%", 3, "10-year risk of hard CHD (MI or coronary death)"),
    bands=(
        Band("Low risk (< 10%)", None, 10),
        Band("Intermediate risk (10–20%)", 10, 20),
        Band("High risk (≥ 20%)", 20, None),
    ),
    reference=Reference(
        purpose="Estimates 10-year risk of myocardial infarction or coronary death (hard CHD) in adults without CHD "
        "or diabetes (NCEP ATP III).",
        when_to_use="Primary prevention, adults 20–79 without known CHD or diabetes, to guide lipid therapy.",
        formula="Men: L = 52.00961·ln(age) + 20.014077·ln(TC) − 0.905964·ln(HDL) + 1.305784·ln(SBP) + 0.241549·BPtx "
        "+ 12.096316·smoker − 4.605038·ln(age)·ln(TC) − 2.84367·ln(age_s)·smoker − 2.93323·ln(age)² − 172.300168; "
        "risk = 1 − 0.9402^exp(L).\n\nWomen: L = 31.764001·ln(age) + 22.465206·ln(TC) − 1.187731·ln(HDL) + "
        "2.552905·ln(SBP) + 0.420251·BPtx + 13.07543·smoker − 5.060998·ln(age)·ln(TC) − 2.996945·ln(age_s)·smoker "
        "− 146.5933061; risk = 1 − 0.98767^exp(L).\n\nTC and HDL in mg/dL; age_s = min(age, 70) for men, "
        "min(age, 78) for women. Risk reported in %, not rounded until the end.",
        citation="Expert Panel on Detection, Evaluation, and Treatment of High Blood Cholesterol in Adults. Executive "
        "summary of the third report of the National Cholesterol Education Program (NCEP) Adult Treatment Panel III. "
        "JAMA. 2001;285(19):2486-2497.",
        notes="Smoking and treated blood pressure not documented are taken as no. MedCalc-Bench v1.0 labels round the "
        "risk early (most become 0); the maintained labels, and this calculator, do not. Cholesterol in mmol/L is "
        "converted with M = 386.65 g/mol.",
    ),
    examples=(
        Example({"sex": "male", "age": 55, "total_cholesterol": 213, "hdl": 50, "sbp": 120, "smoker": False,
                 "bp_treated": False}, 6.51,
                "Hand-computed from the ATP III published equation (men): L = 0.0875, 1 − 0.9402^exp(L) = 6.51%", 0.01),
        Example({"sex": "female", "age": 60, "total_cholesterol": 240, "hdl": 45, "sbp": 150, "smoker": True,
                 "bp_treated": True}, 14.18,
                "Hand-computed from the ATP III published equation (women): L = 2.5118, 1 − 0.98767^exp(L) = 14.18%", 0.01),
    ),
)


# -- Wells PE, Wells DVT, PERC -----------------------------------------------------------------------
def _wells_pe(v):
    pts = {
        "dvt_signs": 3.0 if v["dvt_signs"] else 0.0,
        "pe_most_likely": 3.0 if v["pe_most_likely"] else 0.0,
        "heart_rate_gt_100": 1.5 if v["heart_rate"] > 100 else 0.0,
        "immobilization_or_surgery": 1.5 if _any(v, "immobilization", "recent_surgery") else 0.0,
        "previous_dvt_pe": 1.5 if _any(v, "previous_pe", "previous_dvt") else 0.0,
        "hemoptysis": 1.0 if v["hemoptysis"] else 0.0,
        "malignancy": 1.0 if v["malignancy"] else 0.0,
    }
    return sum(pts.values()), pts


_PREV_PE = crit("previous_pe", "Previously documented pulmonary embolism", "Previously Documented Pulmonary Embolism",
                "Previous PE")
_PREV_DVT = crit("previous_dvt", "Previously documented deep vein thrombosis",
                 "Previously documented Deep Vein Thrombosis", "Previous DVT")
_HEMOPTYSIS = crit("hemoptysis", "Hemoptysis", "Hemoptysis")

WELLS_PE = Calculator(
    id="wells_pe",
    name="Wells' Criteria for Pulmonary Embolism",
    aliases=("Wells PE", "Wells Score for PE", "Wells' Criteria for PE"),
    domain=Domain.CRITICAL_CARE,
    medcalc_bench_id=8,
    tags=("pulmonary embolism", "venous thromboembolism", "emergency"),
    inputs=(
        crit("dvt_signs", "Clinical signs and symptoms of DVT", "Clinical signs and symptoms of Deep Vein Thrombosis",
             help="Minimum of leg swelling and pain with palpation of the deep veins."),
        crit("pe_most_likely", "PE is #1 diagnosis or equally likely", "Pulmonary Embolism is #1 diagnosis OR equally likely"),
        HEART_RATE,
        crit("immobilization", "Immobilization ≥ 3 days", "Immobilization for at least 3 days"),
        crit("recent_surgery", "Surgery in the previous 4 weeks", "Surgery in the previous 4 weeks",
             help="Immobilization or surgery together score 1.5 once."),
        _PREV_PE,
        _PREV_DVT,
        _HEMOPTYSIS,
        crit("malignancy", "Malignancy with treatment within 6 months or palliative",
             "Malignancy with treatment within 6 months or palliative"),
    ),
    compute=_wells_pe,
    output=Output("decimal", "points", 1, "Wells PE score"),
    bands=(
        Band("Low probability (< 2) [three-tier]; PE unlikely (≤ 4) [two-tier]", None, 2),
        Band("Moderate probability (2–6); PE unlikely if ≤ 4, likely if > 4", 2, 6.5),
        Band("High probability (> 6); PE likely", 6.5, None),
    ),
    reference=Reference(
        purpose="Estimates pre-test probability of pulmonary embolism.",
        when_to_use="Suspected acute PE in the emergency department, before D-dimer or imaging.",
        formula="| Criterion | Points |\n|---|---|\n| Clinical signs/symptoms of DVT | 3 |\n| PE #1 diagnosis or equally "
        "likely | 3 |\n| Heart rate > 100 | 1.5 |\n| Immobilization ≥ 3 days or surgery in previous 4 weeks | 1.5 |\n"
        "| Previous PE or DVT | 1.5 |\n| Hemoptysis | 1 |\n| Malignancy (treatment within 6 months or palliative) | 1 |",
        citation="Wells PS, Anderson DR, Rodger M, et al. Derivation of a simple clinical model to categorize patients "
        "probability of pulmonary embolism: increasing the models utility with the SimpliRED D-dimer. Thromb Haemost. "
        "2000;83(3):416-420.",
        notes=MISSING_AS_ABSENT + " Heart rate is required (it is measured, not a history item).",
    ),
    examples=(
        Example({"heart_rate": 110, "recent_surgery": True, "hemoptysis": True}, 4.0,
                "Hand-computed from Wells 2000's table: HR > 100 (1.5) + surgery (1.5) + hemoptysis (1)"),
        Example({"heart_rate": 80, "dvt_signs": True, "pe_most_likely": True, "previous_dvt": True,
                 "previous_pe": True}, 7.5,
                "Hand-computed from Wells 2000's table: 3 + 3 + previous PE/DVT counted once (1.5)"),
    ),
)


def _wells_dvt(v):
    table = {"active_cancer": 1, "bedridden_or_surgery": 1, "calf_swelling": 1, "collateral_veins": 1,
             "entire_leg_swollen": 1, "localized_tenderness": 1, "pitting_edema": 1, "paralysis_or_cast": 1,
             "previous_dvt": 1, "alternative_diagnosis": -2}
    vals = {**v, "bedridden_or_surgery": _any(v, "bedridden_or_surgery", "major_surgery")}
    return points(vals, table)


WELLS_DVT = Calculator(
    id="wells_dvt",
    name="Wells' Criteria for DVT",
    aliases=("Wells DVT", "Wells Score for DVT", "Wells' Criteria for Deep Vein Thrombosis"),
    domain=Domain.CRITICAL_CARE,
    medcalc_bench_id=16,
    tags=("deep vein thrombosis", "venous thromboembolism", "emergency"),
    inputs=(
        crit("active_cancer", "Active cancer", "Active cancer", help="Treatment within 6 months or palliative."),
        crit("bedridden_or_surgery", "Bedridden recently > 3 days or major surgery within 12 weeks",
             "Bedridden recently >3 days or major surgery within 12 weeks"),
        crit("major_surgery", "Major surgery within 12 weeks", "Major surgery within 12 weeks",
             help="Scores together with the bedridden item (1 point once)."),
        crit("calf_swelling", "Calf swelling > 3 cm compared with the other leg",
             "Calf swelling >3 centimeters compared to the other leg"),
        crit("collateral_veins", "Collateral (non-varicose) superficial veins",
             "Collateral (nonvaricose) superficial veins present"),
        crit("entire_leg_swollen", "Entire leg swollen", "Entire Leg Swollen"),
        crit("localized_tenderness", "Localized tenderness along the deep venous system",
             "Localized tenderness along the deep venous system"),
        crit("pitting_edema", "Pitting edema confined to the symptomatic leg", "Pitting edema, confined to symptomatic leg"),
        crit("paralysis_or_cast", "Paralysis, paresis or recent plaster immobilization of the leg",
             "Paralysis, paresis, or recent plaster immobilization of the lower extremity"),
        crit("previous_dvt", "Previously documented DVT", "Previously documented Deep Vein Thrombosis"),
        crit("alternative_diagnosis", "Alternative diagnosis at least as likely as DVT",
             "Alternative diagnosis to Deep Vein Thrombosis as likely or more likely", help="Scores −2."),
    ),
    compute=_wells_dvt,
    output=Output("integer", "points", label="Wells DVT score"),
    bands=(
        Band("DVT unlikely (≤ 1); low probability if ≤ 0", None, 2),
        Band("DVT likely (≥ 2)", 2, None),
    ),
    reference=Reference(
        purpose="Estimates pre-test probability of lower-extremity deep vein thrombosis.",
        when_to_use="Outpatients/ED patients with suspected DVT, before D-dimer or ultrasound.",
        formula="+1 each: active cancer; bedridden > 3 days or major surgery within 12 weeks; calf swelling > 3 cm; "
        "collateral superficial veins; entire leg swollen; localized deep-vein tenderness; pitting edema in the "
        "symptomatic leg; paralysis/paresis/recent cast; previously documented DVT. −2: alternative diagnosis at "
        "least as likely. Range −2 to 9.",
        citation="Wells PS, Anderson DR, Rodger M, et al. Evaluation of D-dimer in the diagnosis of suspected "
        "deep-vein thrombosis. N Engl J Med. 2003;349(13):1227-1235.",
        notes=MISSING_AS_ABSENT,
    ),
    examples=(
        Example({"active_cancer": True, "calf_swelling": True, "localized_tenderness": True}, 3,
                "Hand-computed from Wells 2003's table: three criteria"),
        Example({"alternative_diagnosis": True, "localized_tenderness": True}, -1,
                "Hand-computed from Wells 2003's table: +1 − 2"),
    ),
)


def _perc(v):
    met = {
        "age_ge_50": v["age"] >= 50,
        "heart_rate_ge_100": v["heart_rate"] >= 100,
        "sao2_lt_95": v["o2_sat"] < 95,
        "unilateral_leg_swelling": v["leg_swelling"],
        "hemoptysis": v["hemoptysis"],
        "recent_surgery_or_trauma": v["surgery_trauma"],
        "prior_pe_or_dvt": _any(v, "previous_pe", "previous_dvt"),
        "hormone_use": v["hormone_use"],
    }
    return sum(int(x) for x in met.values()), met


PERC = Calculator(
    id="perc",
    name="PERC Rule for Pulmonary Embolism",
    aliases=("PERC Rule", "Pulmonary Embolism Rule-out Criteria", "PERC"),
    domain=Domain.CRITICAL_CARE,
    medcalc_bench_id=48,
    tags=("pulmonary embolism", "emergency"),
    inputs=(
        AGE,
        HEART_RATE,
        Input("o2_sat", "Oxygen saturation (room air)", unit="%", min=30, max=100,
              aliases=("O₂ saturation percentage", "SaO2", "SpO2", "Oxygen saturation")),
        crit("leg_swelling", "Unilateral leg swelling", "Unilateral Leg Swelling"),
        _HEMOPTYSIS,
        crit("surgery_trauma", "Recent surgery or trauma (≤ 4 weeks, requiring anesthesia)", "Recent surgery or trauma"),
        _PREV_PE,
        _PREV_DVT,
        crit("hormone_use", "Hormone use (oral contraceptives, HRT, estrogen)", "Hormone use"),
    ),
    compute=_perc,
    output=Output("integer", "criteria", label="PERC criteria met"),
    bands=(
        Band("PERC negative (0): PE can be ruled out if pre-test probability is low (< 15%)", None, 1),
        Band("PERC positive (≥ 1): cannot rule out PE with PERC", 1, None),
    ),
    reference=Reference(
        purpose="Rules out pulmonary embolism without testing in low-pretest-probability patients.",
        when_to_use="Only when clinical gestalt pre-test probability of PE is < 15%.",
        formula="One each: age ≥ 50; HR ≥ 100; SaO₂ < 95%; unilateral leg swelling; hemoptysis; recent surgery or "
        "trauma; prior PE or DVT; hormone use. Result = number of criteria met (0 = PERC negative).",
        citation="Kline JA, Mitchell AM, Kabrhel C, Richman PB, Courtney DM. Clinical criteria to prevent unnecessary "
        "diagnostic testing in emergency department patients with suspected pulmonary embolism. J Thromb Haemost. "
        "2004;2(8):1247-1255.",
        notes=MISSING_AS_ABSENT + " MedCalc-Bench reports the count of criteria met; prior PE and prior DVT count once.",
    ),
    examples=(
        Example({"age": 35, "heart_rate": 80, "o2_sat": 98}, 0, "Hand-computed from Kline 2004's criteria: none met"),
        Example({"age": 62, "heart_rate": 104, "o2_sat": 93, "previous_dvt": True, "previous_pe": True}, 4,
                "Hand-computed from Kline 2004's criteria: age, HR, SaO₂, prior DVT/PE"),
    ),
)


# -- Caprini (2005) ----------------------------------------------------------------------------------
_CAPRINI_ITEMS: dict[str, tuple[int, str, tuple[str, ...]]] = {
    # key: (points, label, aliases)
    "major_surgery_recent": (1, "Major surgery in the last month", ("Major Surgery in the last month",)),
    "chf_recent": (1, "Congestive heart failure in the last month", ("Congestive Heart Failure in the last month",)),
    "sepsis_recent": (1, "Sepsis in the last month", ("Sepsis in the last month",)),
    "pneumonia_recent": (1, "Pneumonia in the last month", ("Pneumonia in the last month",)),
    "cast_recent": (2, "Immobilizing plaster cast in the last month", ("Immobilizing plaster cast in the last month",)),
    "fracture_recent": (5, "Hip, pelvis or leg fracture in the last month", ("Hip, pelvis, or leg fracture in the last month",)),
    "stroke_recent": (5, "Stroke in the last month", ("Stroke in the last month",)),
    "multiple_trauma_recent": (5, "Multiple trauma in the last month", ("Multiple trauma in the last month",)),
    "spinal_cord_injury_recent": (5, "Acute spinal cord injury with paralysis in the last month",
                                  ("Acute spinal cord injury causing paralysis in the last month",)),
    "varicose_veins": (1, "Varicose veins", ("Varicose veins",)),
    "swollen_legs": (1, "Current swollen legs", ("Current swollen legs",)),
    "central_venous_access": (2, "Current central venous access", ("Current central venous access",)),
    "family_history_thrombosis": (3, "Family history of thrombosis", ("Family history of thrombosis",)),
    "factor_v_leiden": (3, "Positive factor V Leiden", ("Positive Factor V Leiden",)),
    "prothrombin_20210a": (3, "Positive prothrombin 20210A", ("Positive prothrombin 20210A",)),
    "homocysteine": (3, "Elevated serum homocysteine", ("Elevated serum homocysteine",)),
    "lupus_anticoagulant": (3, "Positive lupus anticoagulant", ("Positive lupus anticoagulant",)),
    "anticardiolipin": (3, "Elevated anticardiolipin antibody", ("Elevated anticardiolipin antibody",)),
    "hit": (3, "Heparin-induced thrombocytopenia", ("Heparin-induced thrombocytopenia",)),
    "other_thrombophilia": (3, "Other congenital or acquired thrombophilia", ("Other congenital or acquired thrombophilia",)),
    "ibd": (1, "History of inflammatory bowel disease", ("History of inflammatory bowel disease",)),
    "acute_mi": (1, "Acute myocardial infarction", ("Acute Myocardial infarction",)),
    "copd": (1, "COPD", ("Chronic Obstructive Pulmonary Disease",)),
    "malignancy": (2, "Present or previous malignancy", ("Present or previous malignancy",)),
    "pregnancy_postpartum": (1, "Pregnant or postpartum (women)", ("Pregnancy or postpartum",)),
    "recurrent_abortion": (1, "History of unexplained stillborn or recurrent spontaneous abortion (women)",
                           ("History of unexplained or recurrent spontaneous abortion",)),
    "hormones": (1, "Oral contraceptives or hormone replacement (women)", ("Oral contraceptives or hormone replacement",)),
}
_FEMALE_ONLY = ("pregnancy_postpartum", "recurrent_abortion", "hormones")


def _caprini(v):
    a = v["age"]
    pts: dict[str, int] = {"age": 3 if a >= 75 else 2 if a >= 61 else 1 if a >= 41 else 0,
                           "surgery": v["surgery_type"], "mobility": v["mobility"]}
    for key, (p, _, _) in _CAPRINI_ITEMS.items():
        if key in _FEMALE_ONLY and v["sex"] != "female":
            if v[key]:
                raise CalculatorInputError("caprini", key, "is a female-only item but sex is male")
            continue
        pts[key] = p if v[key] else 0
    pts["history_dvt_pe"] = 3 if _any(v, "previous_dvt", "previous_pe") else 0
    pts["bmi_gt_25"] = 1 if (v["bmi"] is not None and v["bmi"] > 25) else 0
    return sum(pts.values()), pts


CAPRINI = Calculator(
    id="caprini",
    name="Caprini Score for Venous Thromboembolism (2005)",
    aliases=("Caprini Score", "Caprini Risk Assessment Model", "Caprini VTE score"),
    domain=Domain.CRITICAL_CARE,
    medcalc_bench_id=36,
    tags=("venous thromboembolism", "perioperative", "surgery", "prophylaxis"),
    inputs=(
        AGE,
        SEX,
        Input("surgery_type", "Type of surgery", type="choice", optional=True, default=0,
              aliases=("Surgery Type",),
              choices=(Choice("None", 0, ("no surgery",)),
                       Choice("Minor", 1, ("minor surgery",)),
                       Choice("Major (> 45 min)", 2, ("major", "major surgery", "major >45 min")),
                       Choice("Laparoscopic (> 45 min)", 2, ("laparoscopic", "laparoscopic >45 min")),
                       Choice("Arthroscopic", 2, ("arthroscopic",)),
                       Choice("Elective major lower extremity arthroplasty", 5,
                              ("elective major lower extremity arthroplasty", "arthroplasty"))),
              help="Optional, default None (0 points) when no surgery is documented."),
        Input("mobility", "Mobility", type="choice", optional=True, default=0, aliases=("Mobility",),
              choices=(Choice("Normal/ambulatory", 0, ("normal", "ambulatory")),
                       Choice("Patient currently at bed rest", 1, ("on bed rest", "bed rest")),
                       Choice("Confined to bed > 72 hours", 2, ("confined to bed >72 hours", "bed rest > 72 hours"))),
              help="Optional, default normal (0 points)."),
        *(crit(k, label, *al) for k, (_, label, al) in _CAPRINI_ITEMS.items()),
        _PREV_DVT,
        _PREV_PE,
        Input("bmi", "Body mass index", unit="kg/m^2", min=5, max=150, optional=True,
              aliases=("Body Mass Index (BMI)", "BMI"), help="> 25 kg/m² scores 1. Optional; not given scores 0."),
    ),
    compute=_caprini,
    output=Output("integer", "points", label="Caprini score"),
    bands=(
        Band("Very low risk (0)", None, 1),
        Band("Low risk (1–2)", 1, 3),
        Band("Moderate risk (3–4)", 3, 5),
        Band("High risk (≥ 5)", 5, None),
    ),
    reference=Reference(
        purpose="Estimates venous thromboembolism risk, mainly in surgical patients, to guide prophylaxis.",
        when_to_use="Hospitalised (especially surgical) patients assessed for VTE prophylaxis.",
        formula="Age 41–60 1, 61–74 2, ≥ 75 3. Surgery: minor 1; major > 45 min, laparoscopic > 45 min or "
        "arthroscopic 2; elective major lower-extremity arthroplasty 5. Within the last month: major surgery, CHF, "
        "sepsis, pneumonia 1 each; plaster cast 2; hip/pelvis/leg fracture, stroke, multiple trauma, acute spinal cord "
        "injury with paralysis 5 each. Varicose veins 1, current swollen legs 1, central venous access 2. History of "
        "DVT/PE, family history of thrombosis, factor V Leiden, prothrombin 20210A, elevated homocysteine, lupus "
        "anticoagulant, anticardiolipin antibody, HIT, other thrombophilia 3 each. Mobility: bed rest 1, confined to "
        "bed > 72 h 2. IBD, BMI > 25, acute MI, COPD 1 each; present or previous malignancy 2. Women: pregnancy or "
        "postpartum, unexplained/recurrent abortion, oral contraceptives/HRT 1 each.",
        citation="Caprini JA. Thrombosis risk assessment as a guide to quality patient care. Dis Mon. "
        "2005;51(2-3):70-78.",
        notes=MISSING_AS_ABSENT + " Previous DVT and previous PE are one item ('History of DVT/PE', 3 points once). "
        "MedCalc-Bench v1.0 labels use wrong criteria and sums; see docs/known-label-issues.md.",
    ),
    examples=(
        Example({"age": 67, "sex": "male", "surgery_type": "major", "fracture_recent": True, "varicose_veins": True,
                 "previous_dvt": True, "previous_pe": True, "factor_v_leiden": True,
                 "mobility": "confined to bed >72 hours", "malignancy": True, "bmi": 31}, 21,
                "Hand-computed from Caprini 2005's form: age 61–74 2 + major surgery 2 + fracture 5 + varicose veins 1 "
                "+ history of DVT/PE (once) 3 + factor V Leiden 3 + confined to bed 2 + malignancy 2 + BMI > 25 1"),
        Example({"age": 45, "sex": "female", "surgery_type": "Minor", "hormones": True, "bmi": 27}, 4,
                "Hand-computed from Caprini 2005's form: age 1 + minor surgery 1 + OCP 1 + BMI > 25 1"),
    ),
)


# -- ORBIT, ATRIA bleeding, ATRIA stroke --------------------------------------------------------------
def _orbit(v):
    anemia = v["anemia"]
    if v["hemoglobin"] is not None:
        anemia = anemia or v["hemoglobin"] < (13 if v["sex"] == "male" else 12)
    if v["hematocrit"] is not None:
        anemia = anemia or v["hematocrit"] < (40 if v["sex"] == "male" else 36)
    pts = {
        "anemia": 2 if anemia else 0,
        "age_gt_74": 1 if v["age"] > 74 else 0,
        "bleeding_history": 2 if v["bleeding_history"] else 0,
        "renal_insufficiency": 1 if v["renal_insufficiency"] else 0,
        "antiplatelet": 1 if v["antiplatelet"] else 0,
    }
    return sum(pts.values()), pts


ORBIT = Calculator(
    id="orbit",
    name="ORBIT Bleeding Risk Score for Atrial Fibrillation",
    aliases=("ORBIT Score", "ORBIT bleeding score"),
    domain=Domain.MEDICINE,
    tags=("cardiology", "atrial fibrillation", "bleeding", "anticoagulation"),
    inputs=(
        AGE,
        SEX,
        crit("anemia", "Reduced hemoglobin/hematocrit or anemia", "Hemoglobin <12 g/dL or hematocrit <36%",
             "Low hemoglobin/hematocrit or history of anemia",
             help="Hb < 13 g/dL (men) / < 12 g/dL (women), Hct < 40% / < 36%, or history of anemia."),
        Input("hemoglobin", "Hemoglobin", unit="g/dL", analyte="hemoglobin", min=1, max=25, optional=True,
              aliases=("Hemoglobin",), help="Optional; if given, scores anemia by the sex-specific cut-off."),
        Input("hematocrit", "Hematocrit", unit="%", min=5, max=80, optional=True, aliases=("Hematocrit",),
              help="Optional; if given, scores anemia by the sex-specific cut-off."),
        crit("bleeding_history", "Bleeding history", "Bleeding history (GI bleed, intracranial bleed, or hemorrhagic stroke)",
             help="GI bleeding, intracranial bleeding or hemorrhagic stroke."),
        crit("renal_insufficiency", "eGFR < 60 mL/min/1.73 m²", "GFR <60 mL/min/1.73 m2", "Insufficient kidney function"),
        crit("antiplatelet", "Treatment with antiplatelet agents", "Treatment with antiplatelet agents"),
    ),
    compute=_orbit,
    output=Output("integer", "points", label="ORBIT score"),
    bands=(
        Band("Low risk (0–2): 2.4 bleeds per 100 patient-years", None, 3),
        Band("Medium risk (3): 4.7 bleeds per 100 patient-years", 3, 4),
        Band("High risk (4–7): 8.1 bleeds per 100 patient-years", 4, None),
    ),
    reference=Reference(
        purpose="Estimates major bleeding risk in atrial fibrillation patients on oral anticoagulation.",
        when_to_use="AF patients taking or starting oral anticoagulants.",
        formula="Older age (> 74) 1; Reduced hemoglobin (< 13 g/dL men, < 12 g/dL women), hematocrit (< 40% men, "
        "< 36% women) or anemia history 2; Bleeding history 2; Insufficient kidney function (eGFR < 60) 1; "
        "Treatment with antiplatelets 1. Range 0–7.",
        citation="O'Brien EC, Simon DN, Thomas LE, et al. The ORBIT bleeding score: a simple bedside score to assess "
        "bleeding risk in atrial fibrillation. Eur Heart J. 2015;36(46):3258-3264.",
        notes=MISSING_AS_ABSENT,
    ),
    examples=(
        Example({"age": 80, "sex": "female", "hemoglobin": 11, "antiplatelet": True}, 4,
                "Hand-computed from O'Brien 2015's table: age 1 + anemia 2 + antiplatelet 1"),
        Example({"age": 68, "sex": "female", "renal_insufficiency": True}, 1,
                "Hand-computed from O'Brien 2015's table: eGFR < 60 only"),
    ),
)


def _atria_bleed(v):
    pts = {"anemia": 3 if v["anemia"] else 0, "severe_renal_disease": 3 if v["severe_renal_disease"] else 0,
           "age_ge_75": 2 if v["age"] >= 75 else 0, "prior_hemorrhage": 1 if v["prior_hemorrhage"] else 0,
           "hypertension": 1 if v["hypertension"] else 0}
    return sum(pts.values()), pts


ATRIA_BLEED = Calculator(
    id="atria_bleeding",
    name="ATRIA Bleeding Risk Score",
    aliases=("ATRIA Bleeding Score", "ATRIA Hemorrhage Score"),
    domain=Domain.MEDICINE,
    tags=("cardiology", "atrial fibrillation", "bleeding", "anticoagulation"),
    inputs=(
        AGE,
        crit("anemia", "Anemia (Hb < 13 g/dL men, < 12 g/dL women)", "Anemia (Hemoglobin <13 g/dL male, <12 g/dL female)"),
        crit("severe_renal_disease", "Severe renal disease (eGFR < 30 or dialysis)",
             "Severe Renal Disease (GFR <30 mL/min or dialysis-dependent)"),
        crit("prior_hemorrhage", "Any prior hemorrhage diagnosis", "Any Prior Hemorrhage Diagnosis"),
        crit("hypertension", "Hypertension history", "Hypertension History", "Hypertension"),
    ),
    compute=_atria_bleed,
    output=Output("integer", "points", label="ATRIA bleeding score"),
    bands=(
        Band("Low risk (0–3): 0.76% annual major hemorrhage", None, 4),
        Band("Intermediate risk (4): 2.6%", 4, 5),
        Band("High risk (5–10): 5.8%", 5, None),
    ),
    reference=Reference(
        purpose="Estimates warfarin-associated hemorrhage risk in atrial fibrillation.",
        when_to_use="AF patients considered for warfarin.",
        formula="Anemia 3; severe renal disease (eGFR < 30 or dialysis) 3; age ≥ 75 2; any prior hemorrhage 1; "
        "hypertension 1. Range 0–10.",
        citation="Fang MC, Go AS, Chang Y, et al. A new risk scheme to predict warfarin-associated hemorrhage: the ATRIA "
        "(Anticoagulation and Risk Factors in Atrial Fibrillation) Study. J Am Coll Cardiol. 2011;58(4):395-401.",
        notes=MISSING_AS_ABSENT,
    ),
    examples=(
        Example({"age": 67, "hypertension": True}, 1, "Hand-computed from Fang 2011's table: hypertension only"),
        Example({"age": 78, "anemia": True, "prior_hemorrhage": True}, 6,
                "Hand-computed from Fang 2011's table: anemia 3 + age 2 + prior hemorrhage 1"),
    ),
)


def _atria_stroke(v):
    a, stroke = v["age"], v["prior_stroke"]
    if a >= 85:
        age_pts = 9 if stroke else 6
    elif a >= 75:
        age_pts = 7 if stroke else 5
    elif a >= 65:
        age_pts = 7 if stroke else 3
    else:
        age_pts = 8 if stroke else 0
    pts = {"age_and_prior_stroke": age_pts, "female": 1 if v["sex"] == "female" else 0,
           "diabetes": int(v["diabetes"]), "chf": int(v["chf"]), "hypertension": int(v["hypertension"]),
           "proteinuria": int(v["proteinuria"]), "egfr_lt_45_or_esrd": int(v["egfr_lt_45"])}
    return sum(pts.values()), pts


ATRIA_STROKE = Calculator(
    id="atria_stroke",
    name="ATRIA Stroke Risk Score",
    aliases=("ATRIA Stroke Score",),
    domain=Domain.MEDICINE,
    tags=("cardiology", "atrial fibrillation", "stroke", "anticoagulation"),
    inputs=(
        AGE,
        SEX,
        crit("prior_stroke", "Prior ischemic stroke", "History of stroke"),
        crit("diabetes", "Diabetes mellitus", "History of diabetes mellitus"),
        crit("chf", "Congestive heart failure", "History of congestive heart failure"),
        crit("hypertension", "Hypertension", "History of hypertension"),
        crit("proteinuria", "Proteinuria", "Proteinuria"),
        crit("egfr_lt_45", "eGFR < 45 or end-stage renal disease", "eGFR <45 or end-stage renal disease"),
    ),
    compute=_atria_stroke,
    output=Output("integer", "points", label="ATRIA stroke score"),
    bands=(
        Band("Low risk (0–5): < 1% annual thromboembolism", None, 6),
        Band("Moderate risk (6): 1–2%", 6, 7),
        Band("High risk (7–15): > 2%", 7, None),
    ),
    reference=Reference(
        purpose="Estimates annual thromboembolic stroke risk in atrial fibrillation without anticoagulation.",
        when_to_use="AF patients, as an alternative to CHA₂DS₂-VASc.",
        formula="Age points depend on prior stroke: < 65: 0 (8 with prior stroke); 65–74: 3 (7); 75–84: 5 (7); "
        "≥ 85: 6 (9). Plus 1 each: female sex, diabetes, CHF, hypertension, proteinuria, eGFR < 45 or ESRD.",
        citation="Singer DE, Chang Y, Borowsky LH, et al. A new risk scheme to predict ischemic stroke and other "
        "thromboembolism in atrial fibrillation: the ATRIA study stroke risk score. J Am Heart Assoc. "
        "2013;2(3):e000250.",
        notes=MISSING_AS_ABSENT,
    ),
    examples=(
        Example({"age": 70, "sex": "female", "hypertension": True}, 5,
                "Hand-computed from Singer 2013's table: age 65–74 without stroke 3 + female 1 + hypertension 1"),
        Example({"age": 60, "sex": "male", "prior_stroke": True}, 8,
                "Hand-computed from Singer 2013's table: age < 65 with prior stroke 8"),
    ),
)

CALCULATORS = [CHA2DS2_VASC, CHA2DS2_VA, HAS_BLED, HEART, RCRI, FRAMINGHAM, WELLS_PE, WELLS_DVT, PERC, CAPRINI,
               ORBIT, ATRIA_BLEED, ATRIA_STROKE]
