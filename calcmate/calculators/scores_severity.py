"""Severity and comorbidity scores: Glasgow Coma Scale, Child-Pugh, Charlson Comorbidity Index and
the Glasgow-Blatchford bleeding score.

Comorbidities and findings a note does not mention count as absent (as on MDCalc's forms and in
MedCalc-Bench's labels); measured values are required.
"""

from __future__ import annotations

from dataclasses import replace

from calcmate.calculators._common import AGE, ALBUMIN, BUN, HEART_RATE, SBP, SEX
from calcmate.calculators.scores_cardiovascular import MISSING_AS_ABSENT, crit
from calcmate.calculators.scores_infection import UREA_MMOL_PER_BUN_MGDL
from calcmate.calculators.spec import Band, Calculator, CalculatorInputError, Choice, Example, Input, Output, Reference
from calcmate.domains import Domain

# -- Glasgow Coma Scale --------------------------------------------------------------------------------
_NT = "not testable"


def _gcs_choices(*opts: tuple[str, int, tuple[str, ...]]) -> tuple[Choice, ...]:
    return (*(Choice(label, pts, aliases) for label, pts, aliases in opts),
            Choice("Not testable (NT)", _NT, ("not testable", "NT", "untestable")))


GCS_EYE = Input("eye", "Best eye response", type="choice", aliases=("Best eye response", "Eye opening", "E"),
                choices=_gcs_choices(
                    ("Spontaneous", 4, ("eyes open spontaneously", "eye opening spontaneously", "spontaneously")),
                    ("To sound", 3, ("eye opening to verbal command", "to verbal command", "to speech", "to voice")),
                    ("To pressure", 2, ("eye opening to pain", "to pain")),
                    ("None", 1, ("no eye opening", "no eye response")),
                ))
GCS_VERBAL = Input("verbal", "Best verbal response", type="choice",
                   aliases=("Best verbal response", "Verbal response", "V"),
                   choices=_gcs_choices(
                       ("Oriented", 5, ("oriented",)),
                       ("Confused", 4, ("confused",)),
                       ("Words", 3, ("inappropriate words",)),
                       ("Sounds", 2, ("incomprehensible sounds", "incomprehensible speech")),
                       ("None", 1, ("no verbal response",)),
                   ))
GCS_MOTOR = Input("motor", "Best motor response", type="choice",
                  aliases=("Best motor response", "Motor response", "M"),
                  choices=_gcs_choices(
                      ("Obeys commands", 6, ("obeys commands",)),
                      ("Localising", 5, ("localizes pain", "localises pain", "localizing", "localizes")),
                      ("Normal flexion", 4, ("withdrawal from pain", "withdraws from pain", "withdrawal")),
                      ("Abnormal flexion", 3, ("flexion to pain", "abnormal flexion to pain", "decorticate",
                                                "decorticate posturing")),
                      ("Extension", 2, ("extension to pain", "decerebrate", "decerebrate posturing")),
                      ("None", 1, ("no motor response",)),
                  ))


def _gcs(v):
    for key in ("eye", "verbal", "motor"):
        if v[key] == _NT:
            raise CalculatorInputError(
                "gcs", key, "is not testable: the GCS total is not computed; report the testable components "
                "with 'NT' (Teasdale 2014)")
    return v["eye"] + v["verbal"] + v["motor"], {"eye": v["eye"], "verbal": v["verbal"], "motor": v["motor"]}


GCS = Calculator(
    id="gcs",
    name="Glasgow Coma Scale (GCS)",
    aliases=("Glasgow Coma Score (GCS)", "Glasgow Coma Scale", "Glasgow Coma Score", "GCS"),
    domain=Domain.NEUROLOGY,
    medcalc_bench_id=21,
    tags=("neurology", "trauma", "critical care", "consciousness"),
    produces=("gcs",),
    inputs=(GCS_EYE, GCS_VERBAL, GCS_MOTOR),
    compute=_gcs,
    output=Output("integer", "points", label="GCS"),
    bands=(
        Band("Severe brain injury (3–8)", None, 9),
        Band("Moderate brain injury (9–12)", 9, 13),
        Band("Mild brain injury (13–15)", 13, None),
    ),
    reference=Reference(
        purpose="Grades the level of consciousness from eye, verbal and motor responses.",
        when_to_use="Any patient with altered consciousness, especially after head injury; trend over time.",
        formula="| Eye | Verbal | Motor |\n|---|---|---|\n| 4 spontaneous | 5 oriented | 6 obeys commands |\n"
        "| 3 to sound | 4 confused | 5 localising |\n| 2 to pressure | 3 words | 4 normal flexion (withdrawal) |\n"
        "| 1 none | 2 sounds | 3 abnormal flexion |\n| | 1 none | 2 extension |\n| | | 1 none |\n\n"
        "GCS = E + V + M (3–15). A component that cannot be tested is recorded 'NT' and no total is given.",
        citation="Teasdale G, Jennett B. Assessment of coma and impaired consciousness. A practical scale. Lancet. "
        "1974;2(7872):81-84; Teasdale G, Maas A, Lecky F, et al. The Glasgow Coma Scale at 40 years: standing the "
        "test of time. Lancet Neurol. 2014;13(8):844-854.",
        notes="Each response is counted once. MedCalc-Bench v1.0 labels count the verbal response twice; the "
        "maintained labels are corrected. A 'not testable' component raises an error naming it rather than being "
        "assumed normal (the maintained MedCalc-Bench code assumes 4 for an untestable eye response).",
    ),
    examples=(
        Example({"eye": "To sound", "verbal": "Confused", "motor": "Localising"}, 12,
                "Teasdale 2014 scale: E3 V4 M5 = 12"),
        Example({"eye": "eye opening to pain", "verbal": "no verbal response", "motor": "obeys commands"}, 9,
                "Teasdale 2014 scale: E2 V1 M6 = 9"),
    ),
)


# -- Child-Pugh ------------------------------------------------------------------------------------
def _child_pugh(v):
    b, alb, inr = v["bilirubin"], v["albumin"], v["inr"]
    pts = {
        "bilirubin": 1 if b < 2 else 2 if b <= 3 else 3,
        "albumin": 1 if alb > 3.5 else 2 if alb >= 2.8 else 3,
        "inr": 1 if inr < 1.7 else 2 if inr <= 2.3 else 3,
        "ascites": v["ascites"],
        "encephalopathy": v["encephalopathy"],
    }
    total = sum(pts.values())
    return total, {**pts, "class": "A" if total <= 6 else "B" if total <= 9 else "C"}


CHILD_PUGH = Calculator(
    id="child_pugh",
    name="Child-Pugh Score for Cirrhosis Mortality",
    aliases=("Child-Pugh Score", "Child-Pugh Score for Cirrhosis", "Child-Turcotte-Pugh Score", "Child-Pugh"),
    domain=Domain.MEDICINE,
    medcalc_bench_id=15,
    tags=("hepatology", "cirrhosis", "liver"),
    inputs=(
        Input("bilirubin", "Total bilirubin", unit="mg/dL", analyte="bilirubin", min=0.05, max=80,
              aliases=("Bilirubin", "Total bilirubin")),
        ALBUMIN,
        Input("inr", "INR", min=0.5, max=20, aliases=("international normalized ratio", "INR")),
        Input("ascites", "Ascites", type="choice", optional=True, default=1, aliases=("Ascites",),
              choices=(Choice("Absent", 1, ("absent", "none", "no ascites")),
                       Choice("Slight", 2, ("slight", "mild")),
                       Choice("Moderate", 3, ("moderate", "severe", "moderate to severe", "tense"))),
              help="Not documented → absent (1 point)."),
        Input("encephalopathy", "Hepatic encephalopathy", type="choice", optional=True, default=1,
              aliases=("Encephalopathy", "Hepatic encephalopathy"),
              choices=(Choice("None", 1, ("no encephalopathy", "none", "absent", "grade 0", "west haven grade 0")),
                       Choice("Grade 1–2", 2, ("grade 1-2", "grade 1 2", "mild", "controlled with medication")),
                       Choice("Grade 3–4", 3, ("grade 3-4", "grade 3 4", "severe", "refractory"))),
              help="Not documented → none (1 point)."),
    ),
    compute=_child_pugh,
    output=Output("integer", "points", label="Child-Pugh score"),
    bands=(
        Band("Class A (5–6): 1-year survival ~100%, 2-year ~85%", None, 7),
        Band("Class B (7–9): 1-year survival ~80%, 2-year ~60%", 7, 10),
        Band("Class C (10–15): 1-year survival ~45%, 2-year ~35%", 10, None),
    ),
    reference=Reference(
        purpose="Grades the severity of chronic liver disease (cirrhosis) and prognosis.",
        when_to_use="Patients with cirrhosis, e.g. to assess operative risk or transplant need.",
        formula="| Measure | 1 | 2 | 3 |\n|---|---|---|---|\n| Bilirubin (mg/dL) | < 2 | 2–3 | > 3 |\n"
        "| Albumin (g/dL) | > 3.5 | 2.8–3.5 | < 2.8 |\n| INR | < 1.7 | 1.7–2.3 | > 2.3 |\n"
        "| Ascites | absent | slight | moderate |\n| Encephalopathy | none | grade 1–2 | grade 3–4 |\n\n"
        "Class A 5–6, B 7–9, C 10–15.",
        citation="Pugh RN, Murray-Lyon IM, Dawson JL, Pietroni MC, Williams R. Transection of the oesophagus for "
        "bleeding oesophageal varices. Br J Surg. 1973;60(8):646-649.",
        notes="Ascites and encephalopathy not documented are taken as absent/none (1 point each), as MedCalc-Bench's "
        "maintained labels do; bilirubin, albumin and INR are required. Bilirubin in µmol/L is converted with "
        "M = 584.66 g/mol (÷ 17.1). Result is the point total; the class is in details.",
    ),
    examples=(
        Example({"bilirubin": 2.4, "albumin": 3.8, "inr": 1.9, "ascites": "slight", "encephalopathy": "none"}, 8,
                "Hand-computed from Pugh 1973's table: bilirubin 2 + albumin 1 + INR 2 + ascites 2 + encephalopathy 1"),
        Example({"bilirubin": [58, "µmol/L"], "albumin": 2.6, "inr": 1.4, "encephalopathy": "Grade 1-2"}, 10,
                "Hand-computed from Pugh 1973's table: bilirubin 3.39 mg/dL 3 + albumin 3 + INR 1 + ascites absent 1 "
                "+ encephalopathy 2"),
    ),
)


# -- Charlson ----------------------------------------------------------------------------------------
def _charlson(v):
    a = v["age"]
    pts = {
        "age": 0 if a < 50 else 1 if a < 60 else 2 if a < 70 else 3 if a < 80 else 4,
        "mi": int(v["mi"]), "chf": int(v["chf"]), "pvd": int(v["pvd"]),
        "cva_or_tia": int(bool(v["cva"] or v["tia"])),
        "dementia": int(v["dementia"]), "copd": int(v["copd"]), "connective_tissue": int(v["connective_tissue"]),
        "peptic_ulcer": int(v["peptic_ulcer"]), "liver": v["liver"], "diabetes": v["diabetes"],
        "hemiplegia": 2 * int(v["hemiplegia"]), "ckd": 2 * int(v["ckd"]), "solid_tumor": v["solid_tumor"],
        "leukemia": 2 * int(v["leukemia"]), "lymphoma": 2 * int(v["lymphoma"]), "aids": 6 * int(v["aids"]),
    }
    return sum(pts.values()), pts


CHARLSON = Calculator(
    id="charlson",
    name="Charlson Comorbidity Index (CCI)",
    aliases=("Charlson Comorbidity Index", "CCI", "Charlson Score"),
    domain=Domain.SPECIAL_POPULATIONS,
    medcalc_bench_id=32,
    tags=("comorbidity", "prognosis", "geriatrics"),
    inputs=(
        AGE,
        crit("mi", "Myocardial infarction history", "Myocardial infarction"),
        crit("chf", "Congestive heart failure", "Congestive Heart Faliure", "Congestive heart failure"),
        crit("pvd", "Peripheral vascular disease", "Peripheral vascular disease"),
        crit("cva", "Cerebrovascular accident", "Cerebrovascular Accident", help="CVA or TIA score 1 once."),
        crit("tia", "Transient ischemic attack", "Transient Ischemic Attacks History"),
        crit("dementia", "Dementia", "Dementia"),
        crit("copd", "Chronic pulmonary disease", "Chronic Obstructive Pulmonary Disease", "COPD"),
        crit("connective_tissue", "Connective tissue disease", "Connective tissue disease"),
        crit("peptic_ulcer", "Peptic ulcer disease", "Peptic ulcer disease"),
        Input("liver", "Liver disease", type="choice", optional=True, default=0, aliases=("Liver disease severity",),
              choices=(Choice("None", 0, ("no", "absent", "false")),
                       Choice("Mild", 1, ("mild", "chronic hepatitis or cirrhosis without portal hypertension")),
                       Choice("Moderate to severe", 3, ("moderate to severe", "moderate", "severe",
                                                        "cirrhosis with portal hypertension"))),
              help="Not documented → none (0 points)."),
        Input("diabetes", "Diabetes mellitus", type="choice", optional=True, default=0,
              aliases=("Diabetes mellitus criteria for CCI rule", "Diabetes mellitus"),
              choices=(Choice("None or diet-controlled", 0, ("none", "diet-controlled", "no")),
                       Choice("Uncomplicated", 1, ("uncomplicated",)),
                       Choice("End-organ damage", 2, ("end-organ damage", "end organ damage", "complicated"))),
              help="Not documented → none (0 points)."),
        crit("hemiplegia", "Hemiplegia", "Hemiplegia"),
        replace(crit("ckd", "Moderate to severe chronic kidney disease", "Moderate to severe Chronic Kidney Disease",
                     help="Charlson: creatinine > 3 mg/dL, dialysis, transplantation or uremia; mild CKD scores 0."),
                choices=(Choice("Moderate to severe", True, ("moderate", "severe", "moderate to severe")),
                         Choice("None or mild", False, ("mild", "none")))),
        Input("solid_tumor", "Solid tumor", type="choice", optional=True, default=0, aliases=("Solid tumor",),
              choices=(Choice("None", 0, ("no", "absent", "false")),
                       Choice("Localized", 2, ("localized", "yes", "present", "true")),
                       Choice("Metastatic", 6, ("metastatic",))),
              help="Not documented → none. A plain yes is read as localized (2); metastatic scores 6."),
        crit("leukemia", "Leukemia", "Leukemia"),
        crit("lymphoma", "Lymphoma", "Lymphoma"),
        crit("aids", "AIDS", "AIDS", help="AIDS (not just HIV positive)."),
    ),
    compute=_charlson,
    output=Output("integer", "points", label="Charlson Comorbidity Index"),
    bands=(
        Band("0: estimated 10-year survival 98%", None, 1),
        Band("1–2: 10-year survival 96–90%", 1, 3),
        Band("3–4: 10-year survival 77–53%", 3, 5),
        Band("≥ 5: 10-year survival ≤ 21%", 5, None),
    ),
    reference=Reference(
        purpose="Predicts 10-year mortality from age and comorbid conditions.",
        when_to_use="Adults, to quantify comorbidity burden for prognosis or risk adjustment.",
        formula="Age < 50 0, 50–59 1, 60–69 2, 70–79 3, ≥ 80 4. 1 each: MI, CHF, peripheral vascular disease, CVA "
        "or TIA, dementia, chronic pulmonary disease, connective tissue disease, peptic ulcer disease, mild liver "
        "disease, uncomplicated diabetes. 2 each: hemiplegia, moderate-severe CKD, diabetes with end-organ damage, "
        "localized solid tumor, leukemia, lymphoma. 3: moderate-severe liver disease. 6: metastatic solid tumor, "
        "AIDS. 10-year survival = 0.983^(e^(0.9·CCI)).",
        citation="Charlson ME, Pompei P, Ales KL, MacKenzie CR. A new method of classifying prognostic comorbidity in "
        "longitudinal studies: development and validation. J Chronic Dis. 1987;40(5):373-383; age weighting: "
        "Charlson M, Szatrowski TP, Peterson J, Gold J. Validation of a combined comorbidity index. J Clin "
        "Epidemiol. 1994;47(11):1245-1251.",
        notes=MISSING_AS_ABSENT + " Liver disease, diabetes and solid tumor are graded choices (MDCalc form). "
        "MedCalc-Bench gives 'Solid tumor' as yes/no; yes is read as localized.",
    ),
    examples=(
        Example({"age": 72, "mi": True, "diabetes": "End-organ damage", "ckd": True}, 8,
                "Hand-computed from Charlson 1987/1994: age 70–79 3 + MI 1 + DM end-organ 2 + CKD 2"),
        Example({"age": 45, "solid_tumor": "Metastatic", "liver": "Mild"}, 7,
                "Hand-computed from Charlson 1987: metastatic tumor 6 + mild liver disease 1"),
    ),
)


# -- Glasgow-Blatchford -------------------------------------------------------------------------------
def _gbs(v):
    urea = v["bun"] * UREA_MMOL_PER_BUN_MGDL
    hb, male = v["hemoglobin"], v["sex"] == "male"
    if male:
        hb_pts = 0 if hb >= 13 else 1 if hb >= 12 else 3 if hb >= 10 else 6
    else:
        hb_pts = 0 if hb >= 12 else 1 if hb >= 10 else 6
    sbp = v["sbp"]
    pts = {
        "urea": 0 if urea < 6.5 else 2 if urea < 8 else 3 if urea < 10 else 4 if urea < 25 else 6,
        "hemoglobin": hb_pts,
        "sbp": 0 if sbp >= 110 else 1 if sbp >= 100 else 2 if sbp >= 90 else 3,
        "pulse_ge_100": int(v["heart_rate"] >= 100),
        "melena": int(v["melena"]),
        "syncope": 2 * int(v["syncope"]),
        "hepatic_disease": 2 * int(v["hepatic_disease"]),
        "cardiac_failure": 2 * int(v["cardiac_failure"]),
    }
    return sum(pts.values()), {**pts, "urea_mmol_l": round(urea, 2)}


GLASGOW_BLATCHFORD = Calculator(
    id="glasgow_blatchford",
    name="Glasgow-Blatchford Bleeding Score (GBS)",
    aliases=("Glasgow-Blatchford Score", "Blatchford Score", "GBS"),
    domain=Domain.CRITICAL_CARE,
    medcalc_bench_id=27,
    tags=("gastroenterology", "GI bleeding", "emergency"),
    inputs=(
        BUN,
        Input("hemoglobin", "Hemoglobin", unit="g/dL", analyte="hemoglobin", min=1, max=25, aliases=("Hemoglobin", "Hb")),
        SEX,
        SBP,
        HEART_RATE,
        crit("melena", "Melena present", "Melena present", "Melena"),
        crit("syncope", "Presented with syncope", "Recent syncope", "Syncope"),
        crit("hepatic_disease", "Hepatic disease history", "Hepatic disease history",
             help="Known history, or clinical/laboratory evidence, of chronic or acute liver disease."),
        crit("cardiac_failure", "Cardiac failure present", "Cardiac failure present",
             help="Known history, or clinical/echocardiographic evidence, of cardiac failure."),
    ),
    compute=_gbs,
    output=Output("integer", "points", label="Glasgow-Blatchford score"),
    bands=(
        Band("0: very low risk, consider outpatient management", None, 1),
        Band("≥ 1: not low risk; higher scores predict need for intervention", 1, None),
    ),
    reference=Reference(
        purpose="Predicts need for intervention (transfusion, endoscopic therapy, surgery) in upper GI bleeding.",
        when_to_use="Adults presenting with upper gastrointestinal bleeding, before endoscopy.",
        formula="Blood urea (mmol/L): 6.5–< 8 2; 8–< 10 3; 10–< 25 4; ≥ 25 6. Hemoglobin (g/dL) men: 12–< 13 1, "
        "10–< 12 3, < 10 6; women: 10–< 12 1, < 10 6. SBP (mmHg): 100–109 1; 90–99 2; < 90 3. Pulse ≥ 100 1; "
        "melena 1; syncope 2; hepatic disease 2; cardiac failure 2. Range 0–23.",
        citation="Blatchford O, Murray WR, Blatchford M. A risk score to predict need for treatment for "
        "upper-gastrointestinal haemorrhage. Lancet. 2000;356(9238):1318-1321.",
        notes=MISSING_AS_ABSENT + " BUN (mg/dL) is converted to blood urea as BUN × 10 / 28.02 mmol/L (urea 6.5 "
        "mmol/L ≈ BUN 18.2 mg/dL); a value given in mmol/L is urea. A hemoglobin of exactly 13 g/dL in a man scores 0 "
        "(the v1.0 label scored 1).",
    ),
    examples=(
        Example({"bun": 35, "hemoglobin": 11, "sex": "female", "sbp": 95, "heart_rate": 112, "syncope": True},
                10, "Hand-computed from Blatchford 2000's table: urea 12.5 mmol/L 4 + Hb (woman 10–12) 1 + SBP 90–99 2 "
                "+ pulse ≥ 100 1 + syncope 2"),
        Example({"bun": 20, "hemoglobin": 12.5, "sex": "male", "sbp": 112, "heart_rate": 84, "melena": True}, 4,
                "Hand-computed from Blatchford 2000's table: urea 7.1 mmol/L 2 + Hb (man 12–12.9) 1 + melena 1"),
    ),
)

CALCULATORS = [GCS, CHILD_PUGH, CHARLSON, GLASGOW_BLATCHFORD]
