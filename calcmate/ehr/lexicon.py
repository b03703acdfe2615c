"""Rule tables for the materializer: which free-text input field is which lab, vital or section.

Patterns run on ``normalize_name(field)`` (lower-case ASCII words: "PₐCO₂" -> "paco2",
"HCO₃-" -> "hco3"). Order matters: the first matching entry wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class LabItem:
    key: str
    name: str  # test_item_name as the EHR spells it
    pattern: str
    unit: str  # the unit used when the input gives none
    low: float | None
    high: float | None
    panel: str
    decimals: int = 0


LABS: tuple[LabItem, ...] = (
    LabItem("nlr", "Neutrophil/lymphocyte ratio", r"neutrophil (to )?lymphocyte|\bnlr\b", "", 1.0, 3.0, "Complete blood count", 1),
    LabItem("sodium", "Sodium", r"\b(sodium|na)\b", "mmol/L", 135, 145, "Basic metabolic panel"),
    LabItem("potassium", "Potassium", r"\b(potassium|k)\b", "mmol/L", 3.5, 5.1, "Basic metabolic panel", 1),
    LabItem("chloride", "Chloride", r"\b(chloride|cl)\b", "mmol/L", 98, 107, "Basic metabolic panel"),
    LabItem("bicarbonate", "Bicarbonate (HCO3-)", r"\b(bicarbonate|hco3|total carbon dioxide|total co2|tco2)\b", "mmol/L", 22, 29, "Basic metabolic panel"),
    LabItem("bun", "Urea nitrogen (BUN)", r"\b(bun|blood urea nitrogen|urea nitrogen)\b", "mg/dL", 7, 20, "Basic metabolic panel"),
    LabItem("creatinine", "Creatinine", r"\b(creatinine|cr)\b", "mg/dL", 0.6, 1.2, "Basic metabolic panel", 2),
    LabItem("glucose", "Glucose", r"\b(glucose|blood sugar)\b", "mg/dL", 70, 99, "Basic metabolic panel"),
    LabItem("calcium", "Calcium", r"\bcalcium\b", "mg/dL", 8.6, 10.2, "Basic metabolic panel", 1),
    LabItem("magnesium", "Magnesium", r"\bmagnesium\b", "mg/dL", 1.7, 2.2, "Basic metabolic panel", 1),
    LabItem("phosphate", "Phosphate", r"\bphosph(ate|orus)\b", "mg/dL", 2.5, 4.5, "Basic metabolic panel", 1),
    LabItem("osmolality", "Osmolality", r"\bosm(olality|olarity)?\b", "mOsm/kg", 275, 295, "Chemistry"),
    LabItem("ethanol", "Ethanol", r"\b(alcohol|ethanol)\b.*\b(level|concentration)\b|\bserum (alcohol|ethanol)\b", "mg/dL", 0, 10, "Toxicology"),
    LabItem("albumin", "Albumin", r"\balbumin\b", "g/dL", 3.5, 5.0, "Liver function", 1),
    LabItem("protein", "Total protein", r"(?<!reactive )\bprotein\b", "g/dL", 6.0, 8.3, "Liver function", 1),
    LabItem("bilirubin", "Total bilirubin", r"\bbilirubin\b", "mg/dL", 0.1, 1.2, "Liver function", 1),
    LabItem("ast", "AST", r"\b(ast|aspartate aminotransferase)\b", "U/L", 10, 40, "Liver function"),
    LabItem("alt", "ALT", r"\b(alt|alanine aminotransferase)\b", "U/L", 7, 56, "Liver function"),
    LabItem("alp", "Alkaline phosphatase", r"\b(alp|alkaline phosphatase)\b", "U/L", 44, 147, "Liver function"),
    LabItem("ldh", "LDH", r"\b(ldh|lactate dehydrogenase)\b", "U/L", 140, 280, "Chemistry"),
    LabItem("lactate", "Lactate", r"\blactate\b|\blactic acid\b", "mmol/L", 0.5, 2.2, "Blood gas", 1),
    LabItem("ph", "pH", r"^(arterial )?ph\b|\bph$", "", 7.35, 7.45, "Blood gas", 2),
    LabItem("paco2", "PaCO2", r"\b(paco2|pco2)\b", "mmHg", 35, 45, "Blood gas"),
    LabItem("pao2", "PaO2", r"\b(pao2|po2)\b", "mmHg", 80, 100, "Blood gas"),
    LabItem("hemoglobin", "Hemoglobin", r"\b(hemoglobin|haemoglobin|hgb|hb)\b", "g/dL", 12.0, 17.5, "Complete blood count", 1),
    LabItem("hematocrit", "Hematocrit", r"\b(hematocrit|hct)\b", "%", 36, 50, "Complete blood count"),
    LabItem("wbc", "White blood cell count", r"\b(wbc|white blood cell|white cell|leukocyte)\b", "x10^9/L", 4.0, 11.0, "Complete blood count", 1),
    LabItem("platelets", "Platelet count", r"\b(platelet|plt)", "x10^9/L", 150, 400, "Complete blood count"),
    LabItem("anc", "Absolute neutrophil count", r"\babsolute neutrophil|\banc\b", "x10^9/L", 1.5, 8.0, "Complete blood count", 2),
    LabItem("alc", "Absolute lymphocyte count", r"\babsolute lymphocyte|\balc\b", "x10^9/L", 1.0, 4.8, "Complete blood count", 2),
    LabItem("lymphocytes", "Lymphocytes", r"\blymphocyte", "%", 20, 40, "Complete blood count"),
    LabItem("neutrophils", "Neutrophils", r"\bneutrophil", "%", 40, 70, "Complete blood count"),
    LabItem("eosinophils", "Eosinophils", r"\beosinophil", "%", 1, 4, "Complete blood count"),
    LabItem("inr", "INR", r"\binr\b", "", 0.8, 1.2, "Coagulation", 1),
    LabItem("ptt", "APTT", r"\b(aptt|ptt)\b", "s", 25, 35, "Coagulation"),
    LabItem("fibrinogen", "Fibrinogen", r"\bfibrinogen\b", "mg/dL", 200, 400, "Coagulation"),
    LabItem("ddimer", "D-dimer", r"\bd dimer\b", "ng/mL", 0, 500, "Coagulation"),
    LabItem("troponin", "Troponin I", r"\btroponin\b", "ng/L", 0, 34, "Cardiac markers"),
    LabItem("ntprobnp", "NT-proBNP", r"\bnt ?pro ?bnp\b", "pg/mL", 0, 125, "Cardiac markers"),
    LabItem("bnp", "BNP", r"\bbnp\b", "pg/mL", 0, 100, "Cardiac markers"),
    LabItem("crp", "C-reactive protein", r"\b(crp|c reactive protein)\b", "mg/L", 0, 5, "Inflammation"),
    LabItem("procalcitonin", "Procalcitonin", r"\bprocalcitonin\b", "ng/mL", 0, 0.1, "Inflammation", 2),
    LabItem("uric_acid", "Uric acid", r"\buric acid\b", "mg/dL", 3.5, 7.2, "Chemistry", 1),
    LabItem("hdl", "HDL cholesterol", r"\bhdl\b", "mg/dL", 40, 100, "Lipid panel"),
    LabItem("ldl", "LDL cholesterol", r"\bldl\b", "mg/dL", 0, 100, "Lipid panel"),
    LabItem("cholesterol", "Total cholesterol", r"^(?!.*\b(hdl|ldl|vldl)\b).*\b(total )?cholesterol\b", "mg/dL", 0, 200, "Lipid panel"),
    LabItem("triglycerides", "Triglycerides", r"\btriglyceride", "mg/dL", 0, 150, "Lipid panel"),
    LabItem("hba1c", "Hemoglobin A1c", r"\b(hba1c|a1c)\b", "%", 4.0, 5.6, "Chemistry", 1),
    LabItem("tsh", "TSH", r"\btsh\b", "mIU/L", 0.4, 4.0, "Endocrine", 2),
    LabItem("ammonia", "Ammonia", r"\bammonia\b", "umol/L", 11, 51, "Chemistry"),
    LabItem("lipase", "Lipase", r"\blipase\b", "U/L", 13, 60, "Chemistry"),
    LabItem("ferritin", "Ferritin", r"\bferritin\b", "ng/mL", 20, 250, "Chemistry"),
    LabItem("egfr", "eGFR", r"\b(egfr|gfr)\b", "mL/min/1.73m2", 90, None, "Basic metabolic panel"),
)

SAMPLES = (("urine", "Urine", r"\burine\b"), ("pleural", "Pleural fluid", r"\bpleural( fluid)?\b"),
           ("csf", "CSF", r"\b(csf|cerebrospinal)\b"), ("ascites", "Ascitic fluid", r"\b(ascitic|peritoneal fluid)\b"),
           ("drain", "Drain fluid", r"\b(drain|drainage)( fluid)?\b"))
# A lab of a non-blood specimen named by an intake/output word ("urine sodium", "drain fluid potassium"):
# a labelled specimen measurement, not a volume.
SPECIMEN_LAB = re.compile(r"\b(urine|drain|drainage|pleural|ascitic|peritoneal|csf)\b.*\b(sodium|potassium|chloride|osm\w*|"
                          r"creatinine|urea|protein|glucose|ldh|albumin|amylase|lipase|bilirubin|ph)\b")

# Words that make a lab-looking field a parameter or a criterion, not a measurement.
NOT_A_MEASUREMENT = re.compile(
    r"\b(desired|target|goal|rate of|correction|fluid type|concentrate|phosphates|nahco3|normal|"
    r"category|clearance|deficit|replacement|infusion|infusate|dialysate|ultrafiltrate|effluent)\b"
)
UPPER_LIMIT = re.compile(r"\b(upper limit of normal|uln)\b")


@dataclass(frozen=True)
class VitalItem:
    column: str
    pattern: str
    unit: str
    low: float
    high: float
    decimals: int = 0


_NOT_SYSTEMIC = r"^(?!.*\b(pulmonary|pa|rv|lv|ventricular|dimension|diameter|volume|end|murmur|function)\b).*"

VITALS: tuple[VitalItem, ...] = (
    VitalItem("heart_rate", r"\bheart rate\b|^hr\b", "/min", 60, 100),
    VitalItem("pulse", r"\bpulse\b(?! ?ox)", "/min", 60, 100),
    VitalItem("breathe", r"\brespiratory rate\b|^rr\b|\bbreathing rate\b", "/min", 12, 20),
    VitalItem("temperature", r"\btemperature\b|^temp\b", "degC", 36.3, 37.3, 1),
    # not a cardiac dimension or a pulmonary pressure ("LV end systolic dimension", "PA systolic pressure")
    VitalItem("systolic_pressure", _NOT_SYSTEMIC + r"(\bsystolic\b|\bsbp\b)", "mmHg", 105, 135),
    VitalItem("diastolic_pressure", _NOT_SYSTEMIC + r"(\bdiastolic\b|\bdbp\b)", "mmHg", 60, 85),
    VitalItem("height", r"^height\b|\bheight$|\bbody height\b", "cm", 155, 185),
    VitalItem("weight", r"^weight\b|\bbody weight\b|\bweight$|\bweight kg\b|\bweight lb", "kg", 55, 95, 1),
    VitalItem("urine_volume", r"\b(total )?urine output\b|^urine$|^urine volume\b", "mL", 800, 2000),
    VitalItem("income_volume", r"\bfluid intake\b|\bintake\b", "mL", 1000, 2500),
)

DEMO_AGE = re.compile(r"\bage\b|\byears old\b")
DEMO_SEX = re.compile(r"^(sex|gender)\b|\bsex$|\bgender$|^(female|male)$|^(is )?(female|male)$")
DEMO_ETHNICITY = re.compile(r"\b(ethnicity|race)\b")
DEMO_DOB = re.compile(r"\b(date of birth|dob|birth date|birthdate)\b")

ANESTHESIA = (
    ("asa_class_code", re.compile(r"^asa\b|\basa (class|physical status)\b")),
    ("propose_surgery_name", re.compile(r"\b(type of (procedure|surgery)|surgery type|procedure type|surgical procedure|planned surgery)\b")),
    ("anesthesia_type", re.compile(r"\b(type of anesthesia|anesthesia type|anaesthesia type)\b")),
)

MEDICATION = re.compile(
    r"\b(daily dose|dose|medication|furosemide|torsemide|bumetanide|metolazone|hydrochlorothiazide|insulin|"
    r"warfarin|heparin|aspirin|clopidogrel|statin|statins|beta blocker|beta blockers|ace inhibitor|acei|arb|"
    r"angiotensin|allopurinol|metformin|diuretic|diuretics|anticoagula\w*|antiplatelet|oac|noac|doac|"
    r"steroid|corticosteroid|nsaid|opioid|chemotherapy|using)\b"
)
ORDER_PARAM = re.compile(
    r"\b(rate|infusion|infusate|dialysate|drip|drop factor|volume to be given|fluid type|desired|target|goal|dextrose|"
    r"concentration|time|hours|duration|d5w|saline|lactate d|ringer|plasma lyte|tpn|enteral|albumin 5|"
    r"packed rbcs|nahco3|feeding|nutren|jevity|ensure|osmolite|osmolyte|replete|peptamen|suplena|vivonex|"
    r"twocal|beneprotein|renalcal|nepro|isosource|diabetisource|novasource|pulmocare|fibersource|impact)\b"
)
INTAKE_OUTPUT = re.compile(
    r"\b(gastric|biliary|pancreatic|small bowel|diarrhea|drainage|dialysis|ultrafiltrate|insensible|"
    r"other body fluid|pleural or peritoneal fluid|wound|emesis|stool|urine)\b"
)
HISTORY = re.compile(
    r"\b(history|prior|previous|previously|known|hx|chronic|diabetes|diabetic|hypertension|heart failure|chf|"
    r"stroke|tia|cancer|malignan\w*|tumou?r|metasta\w*|copd|smok\w*|smoker|alcohol|drinks?|dementia|ckd|"
    r"renal disease|kidney disease|liver disease|cirrhosis|bleed\w*|hemorrhage|myocardial infarction|"
    r"ischemic heart|coronary|vascular disease|atrial fibrillation|arrhythmia|transplant|hiv|pregnan\w*|"
    r"asthma|parent|family|cardiomyopathy|etiology|chemotherapy|radiotherapy|dermatitis|allergy|atopic|"
    r"carotid|thromboembolism|peripheral artery|education|ethnic)\b"
)
FAMILY = re.compile(r"\b(family|parent|mother|father|sibling)\b")
PERSONAL = re.compile(r"\b(smok\w*|smoker|alcohol|drinks?|education|occupation|tobacco)\b")
IMAGING = re.compile(
    r"\b(ct|cxr|x ray|chest radiograph|echo\w*|ejection fraction|lvef|ef|lv|nodule\w*|effusion|ultrasound|"
    r"mri|ecg|ekg|fev1|spirometry|pfo|shunt|mitral|e e|pulmonary artery systolic|ventricular|stenosis|"
    r"doppler|cardiomegaly|septal|aneurysm|pet|spiculation|lobe|dimension|apical)\b"
)
MONITORING = re.compile(
    r"\b(tidal volume|peep|plateau|fio2|spo2|oxygen saturation|compliance|pulmonary artery pressure|wedge|"
    r"cardiac output|pulmonary flow|icp|intracranial|map|mean arterial|airway|vt|minute ventilation|"
    r"atmospheric pressure|oxygen requirement|bmi|body mass index)\b"
)
