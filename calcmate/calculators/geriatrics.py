"""Geriatrics: frailty, screening for geriatric assessment, balance, malnutrition and daily-living function."""

from __future__ import annotations

from calcmate.calculators._scales import graded
from calcmate.calculators.spec import Band, Calculator, Example, Input, Output, Reference
from calcmate.domains import Domain

# -- G8 ---------------------------------------------------------------------------------------------

_G8_ITEMS = (
    graded("food_intake", "Food intake declined over the past 3 months", [
        ("Severe decrease in food intake", 0, ("Severe decrease", "Severe reduction")),
        ("Moderate decrease in food intake", 1, ("Moderate decrease", "Moderate reduction")),
        ("No decrease in food intake", 2, ("No decrease", "Normal")),
    ], "Food intake", "Has food intake declined over the past 3 months due to loss of appetite, digestive problems, chewing or swallowing difficulties?"),
    graded("weight_loss", "Weight loss during the last 3 months", [
        ("Weight loss >3 kg", 0, (">3 kg",)),
        ("Does not know", 1, ("Unknown", "Don't know")),
        ("Weight loss between 1 and 3 kg", 2, ("1-3 kg", "Between 1 and 3 kg")),
        ("No weight loss", 3, ("None",)),
    ], "Weight loss", "Weight loss during the last 3 months"),
    graded("mobility", "Mobility", [
        ("Bed or chair bound", 0, ("Bed or chair bound",)),
        ("Able to get out of bed/chair but does not go out", 1, ("Able to get out of bed/chair but does not go out",)),
        ("Goes out", 2, ()),
    ], "Mobility"),
    graded("neuropsych", "Neuropsychological problems", [
        ("Severe dementia or depression", 0, ("Severe",)),
        ("Mild dementia or depression", 1, ("Mild",)),
        ("No psychological problems", 2, ("None", "No")),
    ], "Neuropsychological problems"),
    graded("bmi_category", "Body mass index (kg/m²)", [
        ("BMI <19", 0, ("<19",)),
        ("BMI 19 to <21", 1, ("19 to <21", "19-21", "19 ≤ BMI < 21")),
        ("BMI 21 to <23", 2, ("21 to <23", "21-23", "21 ≤ BMI < 23")),
        ("BMI ≥23", 3, ("≥23", ">=23", "BMI 23 or greater")),
    ], "BMI", "Body mass index", "BMI (weight in kg / height in m²)"),
    graded("polypharmacy", "Takes more than 3 prescription drugs per day", [
        ("Yes", 0, ()), ("No", 1, ()),
    ], "Takes more than 3 prescription drugs per day", "More than 3 medications", "Polypharmacy"),
    graded("self_rated_health", "Self-rated health compared with peers", [
        ("Not as good", 0, ()), ("Does not know", 0.5, ("Unknown", "Don't know")),
        ("As good", 1, ()), ("Better", 2, ()),
    ], "Self-perceived health", "In comparison with other people of the same age, how does the patient consider his/her health status?"),
    graded("age_group", "Age", [
        (">85 years", 0, (">85",)), ("80-85 years", 1, ("80-85",)), ("<80 years", 2, ("<80",)),
    ], "Age", "Age group"),
)


def _g8(v):
    pts = {i.key: v[i.key] for i in _G8_ITEMS}
    return sum(pts.values()), pts


G8 = Calculator(
    id="g8_geriatric_screening",
    name="G8 Geriatric Screening Tool",
    aliases=("G8", "G8 screening tool", "G8 Geriatric Screening"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=_G8_ITEMS,
    compute=_g8,
    output=Output("decimal", "points", 1, "G8 score"),
    bands=(
        Band("Abnormal (≤14): full geriatric assessment recommended", None, 14.5),
        Band("Normal (>14)", 14.5, None),
    ),
    tags=("geriatrics", "oncology", "screening"),
    reference=Reference(
        purpose="Screens older patients with cancer for those who would benefit from a comprehensive geriatric assessment.",
        when_to_use="Patients ≥70 years with cancer, before treatment decisions.",
        formula="Eight items (Mini Nutritional Assessment items plus age): food intake 0-2; weight loss 0-3 "
        "(>3 kg 0, unknown 1, 1-3 kg 2, none 3); mobility 0-2; neuropsychological problems 0-2; BMI 0-3 "
        "(<19, 19-<21, 21-<23, ≥23); >3 drugs/day yes 0 / no 1; self-rated health 0/0.5/1/2; "
        "age >85 0, 80-85 1, <80 2. Total 0-17.",
        citation="Bellera CA, Rainfray M, Mathoulin-Pélissier S, et al. Screening older cancer patients: first "
        "evaluation of the G-8 geriatric screening tool. Ann Oncol. 2012;23(8):2166-2172.",
    ),
    examples=(
        Example({"food_intake": 2, "weight_loss": 3, "mobility": 2, "neuropsych": 2, "bmi_category": 3,
                 "polypharmacy": 1, "self_rated_health": 2, "age_group": 2}, 17.0,
                "Bellera 2012 item table: all best answers = 17 (hand-computed)", 0.01),
        Example({"food_intake": "Moderate decrease", "weight_loss": "Does not know", "mobility": "Goes out",
                 "neuropsych": "No psychological problems", "bmi_category": "BMI 21 to <23", "polypharmacy": "Yes",
                 "self_rated_health": "Does not know", "age_group": "80-85 years"}, 9.5,
                "Bellera 2012 item table: 1 + 1 + 2 + 2 + 2 + 0 + 0.5 + 1 = 9.5 (hand-computed)", 0.01),
    ),
)

# -- Clinical Frailty Scale -------------------------------------------------------------------------

CFS = Calculator(
    id="clinical_frailty_scale",
    name="CSHA Clinical Frailty Scale (CFS)",
    aliases=("Clinical Frailty Scale", "CFS", "Rockwood Clinical Frailty Scale", "CSHA Clinical Frailty Scale"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(
        graded("level", "Descriptor", [
            ("Very fit: robust, active, energetic, motivated; exercises regularly", 1, ("Very fit",)),
            ("Well: no active disease symptoms but less fit than category 1", 2, ("Well",)),
            ("Managing well: medical problems well controlled, not regularly active beyond routine walking", 3, ("Managing well",)),
            ("Vulnerable: not dependent on others for daily help, but symptoms limit activities", 4,
             ("Vulnerable", "Living with very mild frailty", "Very mild frailty")),
            ("Mildly frail: limited dependence on others for instrumental activities of daily living", 5,
             ("Mildly frail", "Living with mild frailty",
              "With limited dependence on others for instrumental activities of daily living")),
            ("Moderately frail: help needed with all outside activities and with keeping house", 6,
             ("Moderately frail", "Living with moderate frailty",
              "Help is needed with both instrumental and non-instrumental activities of daily living")),
            ("Severely frail: completely dependent for personal care, but stable", 7,
             ("Severely frail", "Living with severe frailty", "Completely dependent on others for the activities of daily living")),
            ("Very severely frail: completely dependent, approaching end of life", 8,
             ("Very severely frail", "Living with very severe frailty")),
            ("Terminally ill: life expectancy <6 months, not otherwise evidently frail", 9, ("Terminally ill",)),
        ], "Descriptor", "Clinical Frailty Scale level", "CFS score"),
    ),
    compute=lambda v: v["level"],
    output=Output("integer", "points", None, "Clinical Frailty Scale"),
    bands=(
        Band("Not frail (1-3)", None, 4), Band("Vulnerable / very mild frailty (4)", 4, 5),
        Band("Mildly frail (5)", 5, 6), Band("Moderately frail (6)", 6, 7),
        Band("Severely frail (7)", 7, 8), Band("Very severely frail (8)", 8, 9), Band("Terminally ill (9)", 9, None),
    ),
    tags=("geriatrics", "frailty"),
    produces=("cfs",),
    reference=Reference(
        purpose="Global clinical judgement of frailty in older adults on a 1 (very fit) to 9 (terminally ill) scale.",
        when_to_use="Adults ≥65 years; score the patient's baseline state about 2 weeks before an acute illness.",
        formula="| Level | Descriptor |\n|---|---|\n| 1 | Very fit |\n| 2 | Well |\n| 3 | Managing well |\n| 4 | Vulnerable (very mild frailty) |\n"
        "| 5 | Mildly frail: limited dependence for IADLs |\n| 6 | Moderately frail: help with outside activities and housekeeping |\n"
        "| 7 | Severely frail: dependent for personal care |\n| 8 | Very severely frail |\n| 9 | Terminally ill |",
        citation="Rockwood K, Song X, MacKnight C, et al. A global clinical measure of fitness and frailty in elderly "
        "people. CMAJ. 2005;173(5):489-495.",
        notes="The 2005 paper defined 7 levels; levels 8 and 9 come from the 2007 9-point revision (and the 2020 "
        "CFS v2.0 wording), which is the version in clinical use.",
    ),
    examples=(
        Example({"level": "With limited dependence on others for instrumental activities of daily living"}, 5,
                "Rockwood 2005 scale: limited dependence for IADLs = mildly frail, level 5"),
        Example({"level": "Severely frail"}, 7, "Rockwood 2005 scale: level 7"),
    ),
)

# -- Berg Balance Scale ------------------------------------------------------------------------------

_BERG = [
    ("sit_to_stand", "Sitting to standing"), ("standing_unsupported", "Standing unsupported"),
    ("sitting_unsupported", "Sitting with back unsupported, feet supported"), ("stand_to_sit", "Standing to sitting"),
    ("transfers", "Transfers"), ("eyes_closed", "Standing unsupported with eyes closed"),
    ("feet_together", "Standing unsupported with feet together"), ("reach_forward", "Reaching forward with outstretched arm while standing"),
    ("pick_up_object", "Pick up object from the floor from a standing position"),
    ("look_behind", "Turning to look behind over left and right shoulders while standing"),
    ("turn_360", "Turn 360 degrees"), ("alternate_foot_on_stool", "Placing alternate foot on stool while standing unsupported"),
    ("tandem_stance", "Standing unsupported one foot in front"), ("one_leg_stance", "Standing on one leg"),
]

BERG = Calculator(
    id="berg_balance_scale",
    name="Berg Balance Scale (BBS)",
    aliases=("Berg Balance Scale", "BBS", "Berg Balance Test"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=tuple(Input(k, lbl, type="integer", min=0, max=4, aliases=(lbl,), help="0 (unable) to 4 (independent, safe).")
                 for k, lbl in _BERG),
    compute=lambda v: (sum(v[k] for k, _ in _BERG), {k: v[k] for k, _ in _BERG}),
    output=Output("integer", "points", None, "Berg Balance Scale"),
    bands=(
        Band("High fall risk (0-20): wheelchair bound", None, 21),
        Band("Medium fall risk (21-40): walking with assistance", 21, 41),
        Band("Low fall risk (41-56): independent", 41, None),
    ),
    tags=("geriatrics", "falls", "rehabilitation", "neurology"),
    reference=Reference(
        purpose="Measures static and dynamic balance to estimate fall risk.",
        when_to_use="Older adults and patients with neurological conditions (e.g. stroke) at risk of falls.",
        formula="14 tasks, each scored 0-4; total 0-56.",
        citation="Berg KO, Wood-Dauphinee SL, Williams JI, Maki B. Measuring balance in the elderly: validation of an "
        "instrument. Can J Public Health. 1992;83 Suppl 2:S7-S11.",
        notes="Risk bands 0-20 / 21-40 / 41-56 are those in common clinical use; a cut-off of 45 is also used to "
        "predict falls.",
    ),
    examples=(
        Example({k: 4 for k, _ in _BERG}, 56, "Berg 1992: maximum 14 × 4 = 56"),
        Example({k: (3 if i < 10 else 1) for i, (k, _) in enumerate(_BERG)}, 34, "Berg 1992: 10 × 3 + 4 × 1 = 34 (hand-computed)"),
    ),
)

# -- MUST ---------------------------------------------------------------------------------------------

def _must(v):
    bmi, loss = v["bmi"], v["weight_loss_pct"]
    pts = {
        "bmi": 0 if bmi > 20 else 1 if bmi >= 18.5 else 2,
        "weight_loss": 0 if loss < 5 else 1 if loss <= 10 else 2,
        "acute_disease": 2 if v["acute_disease"] else 0,
    }
    return sum(pts.values()), pts


MUST = Calculator(
    id="must_malnutrition",
    name="Malnutrition Universal Screening Tool (MUST)",
    aliases=("MUST", "Malnutrition Universal Screening Tool", "MUST score"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(
        Input("bmi", "Body mass index", unit="kg/m**2", min=5, max=100, aliases=("BMI", "BMI, kg/m²", "Body mass index")),
        Input("weight_loss_pct", "Unplanned weight loss in past 3-6 months", unit="percent", min=0, max=80,
              aliases=("Unplanned weight loss in past 3-6 months", "Weight loss", "Unplanned weight loss (%)")),
        Input("acute_disease", "Acutely ill with no nutritional intake for >5 days", type="bool",
              aliases=("Acute disease effect", "Patient is acutely ill and there has been or is likely to be no nutritional intake for >5 days")),
    ),
    compute=_must,
    output=Output("integer", "points", None, "MUST score"),
    bands=(
        Band("Low risk (0): routine clinical care", None, 1),
        Band("Medium risk (1): observe", 1, 2),
        Band("High risk (≥2): treat (refer to dietitian, nutritional support)", 2, None),
    ),
    tags=("geriatrics", "nutrition", "screening"),
    reference=Reference(
        purpose="Identifies adults who are malnourished or at risk of malnutrition.",
        when_to_use="Adults in hospital, community or care homes.",
        formula="BMI >20: 0; 18.5-20: 1; <18.5: 2. Unplanned weight loss in 3-6 months <5%: 0; 5-10%: 1; >10%: 2. "
        "Acute disease with no nutritional intake for >5 days: 2. Total 0-6.",
        citation="Elia M. Screening for malnutrition: a multidisciplinary responsibility. Development and use of the "
        "Malnutrition Universal Screening Tool ('MUST') for adults. Redditch: BAPEN; 2003.",
        notes="BMI exactly 20 and exactly 18.5 score 1; weight loss exactly 5% and exactly 10% score 1 (BAPEN bands).",
    ),
    examples=(
        Example({"bmi": 22, "weight_loss_pct": 2, "acute_disease": False}, 0, "BAPEN MUST bands: 0 + 0 + 0 = 0"),
        Example({"bmi": 18, "weight_loss_pct": 7, "acute_disease": True}, 5, "BAPEN MUST bands: 2 + 1 + 2 = 5 (hand-computed)"),
    ),
)

# -- Barthel Index ------------------------------------------------------------------------------------

_BARTHEL_ITEMS = (
    graded("feeding", "Feeding", [("Unable", 0, ()), ("Needs help cutting, spreading butter, etc., or requires modified diet", 5, ("Needs help",)),
                                  ("Independent", 10, ())], "Feeding"),
    graded("bathing", "Bathing", [("Dependent", 0, ("Unable",)), ("Independent (or in shower)", 5, ("Independent",))], "Bathing"),
    graded("grooming", "Grooming", [("Needs help with personal care", 0, ("Unable", "Needs help")),
                                    ("Independent face/hair/teeth/shaving (implements provided)", 5, ("Independent",))], "Grooming"),
    graded("dressing", "Dressing", [("Dependent", 0, ("Unable",)), ("Needs help but can do about half unaided", 5, ("Needs help",)),
                                    ("Independent (including buttons, zips, laces, etc.)", 10, ("Independent",))], "Dressing"),
    graded("bowels", "Bowels", [("Incontinent (or needs to be given enemas)", 0, ("Incontinent",)),
                                ("Occasional accident", 5, ()), ("Continent", 10, ())], "Bowel control", "Bowels"),
    graded("bladder", "Bladder", [("Incontinent, or catheterized and unable to manage alone", 0, ("Incontinent",)),
                                  ("Occasional accident", 5, ()), ("Continent", 10, ())], "Bladder control", "Bladder"),
    graded("toilet_use", "Toilet use", [("Dependent", 0, ("Unable",)), ("Needs some help, but can do something alone", 5, ("Needs help",)),
                                        ("Independent (on and off, dressing, wiping)", 10, ("Independent",))], "Toilet use"),
    graded("transfers", "Transfers (bed to chair and back)", [
        ("Unable, no sitting balance", 0, ("Unable",)),
        ("Major help (one or two people, physical), can sit", 5, ("Needs major help (1-2 people), can sit", "Major help")),
        ("Minor help (verbal or physical)", 10, ("Needs minor help (verbal or physical)", "Minor help")),
        ("Independent", 15, ())], "Transfers (bed to chair and back)", "Transfers"),
    graded("mobility", "Mobility on level surfaces", [
        ("Immobile or <50 yards", 0, ("Immobile",)),
        ("Wheelchair independent, including corners, >50 yards", 5, ("Wheelchair independent",)),
        ("Walks with help of one person (verbal or physical) >50 yards", 10, ("Walks with help of one person >50 yards",)),
        ("Independent (but may use any aid, e.g. stick) >50 yards", 15, ("Independent",))], "Mobility on level surfaces", "Mobility"),
    graded("stairs", "Stairs", [("Unable", 0, ()), ("Needs help (verbal, physical, carrying aid)", 5, ("Needs help",)),
                                ("Independent", 10, ())], "Stairs"),
)

BARTHEL = Calculator(
    id="barthel_index",
    name="Barthel Index for Activities of Daily Living (ADL)",
    aliases=("Barthel Index", "Barthel ADL Index", "Barthel Index for ADL"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=_BARTHEL_ITEMS,
    compute=lambda v: (sum(v[i.key] for i in _BARTHEL_ITEMS), {i.key: v[i.key] for i in _BARTHEL_ITEMS}),
    output=Output("integer", "points", None, "Barthel Index"),
    bands=(
        Band("Total dependency (0-20)", None, 21), Band("Severe dependency (21-60)", 21, 61),
        Band("Moderate dependency (61-90)", 61, 91), Band("Slight dependency (91-99)", 91, 100),
        Band("Independent (100)", 100, None),
    ),
    tags=("geriatrics", "functional status", "rehabilitation", "stroke"),
    reference=Reference(
        purpose="Measures independence in 10 basic activities of daily living (0-100).",
        when_to_use="Older adults, stroke and rehabilitation patients, to track functional status.",
        formula="Feeding 0/5/10; bathing 0/5; grooming 0/5; dressing 0/5/10; bowels 0/5/10; bladder 0/5/10; "
        "toilet use 0/5/10; transfers 0/5/10/15; mobility 0/5/10/15; stairs 0/5/10. Total 0-100.",
        citation="Mahoney FI, Barthel DW. Functional evaluation: the Barthel Index. Md State Med J. 1965;14:61-65.",
        notes="Dependency bands from Shah S, Vanclay F, Cooper B. Improving the sensitivity of the Barthel Index for "
        "stroke rehabilitation. J Clin Epidemiol. 1989;42(8):703-709. MDCalc words the middle range "
        "'partially dependent'.",
    ),
    examples=(
        Example({"feeding": 10, "bathing": 5, "grooming": 5, "dressing": 10, "bowels": 10, "bladder": 10,
                 "toilet_use": 10, "transfers": 15, "mobility": 15, "stairs": 10}, 100, "Mahoney 1965: all independent = 100"),
        Example({"feeding": "Independent", "bathing": "Dependent", "grooming": "Independent face/hair/teeth/shaving (implements provided)",
                 "dressing": "Needs help but can do about half unaided", "bowels": "Continent", "bladder": "Occasional accident",
                 "toilet_use": "Needs some help, but can do something alone", "transfers": "Minor help (verbal or physical)",
                 "mobility": "Wheelchair independent, including corners, >50 yards", "stairs": "Unable"}, 55,
                "Mahoney 1965 item table: 10+0+5+5+10+5+5+10+5+0 = 55 (hand-computed)"),
    ),
)

# -- Nutritional Risk Index ---------------------------------------------------------------------------

def _nri(v):
    ratio = v["current_weight"] / v["usual_weight"]
    return 1.519 * v["albumin"] + 41.7 * ratio, {"weight_ratio": round(ratio, 3)}


NRI = Calculator(
    id="nutritional_risk_index",
    name="Nutritional Risk Index (NRI)",
    aliases=("Nutritional Risk Index", "NRI", "Buzby Nutritional Risk Index"),
    domain=Domain.SPECIAL_POPULATIONS,
    inputs=(
        Input("albumin", "Serum albumin", unit="g/L", min=5, max=70, aliases=("Albumin", "Serum albumin")),
        Input("current_weight", "Current weight", unit="kg", min=1, max=500, aliases=("Current weight", "Weight")),
        Input("usual_weight", "Usual weight", unit="kg", min=1, max=500,
              aliases=("Usual weight", "Usual body weight", "Usual weight (stable weight 6 months before illness)")),
    ),
    compute=_nri,
    output=Output("decimal", None, 1, "NRI"),
    bands=(
        Band("Severe malnutrition risk (<83.5)", None, 83.5), Band("Moderate malnutrition risk (83.5-<97.5)", 83.5, 97.5),
        Band("Mild malnutrition risk (97.5-100)", 97.5, 100.0000001), Band("No malnutrition risk (>100)", 100.0000001, None),
    ),
    tags=("nutrition", "surgery", "geriatrics"),
    reference=Reference(
        purpose="Classifies malnutrition risk from serum albumin and weight loss, originally before major surgery.",
        when_to_use="Adults before major surgery or in hospital, screening for malnutrition-related complications.",
        formula="NRI = 1.519 × serum albumin (g/L) + 41.7 × (current weight / usual weight).",
        citation="Veterans Affairs Total Parenteral Nutrition Cooperative Study Group. Perioperative total parenteral "
        "nutrition in surgical patients. N Engl J Med. 1991;325(8):525-532. (Buzby GP, et al. Am J Clin Nutr. 1988;47:366-381.)",
        notes="Albumin is in g/L (g/dL × 10); usual weight is the stable weight before illness. If current weight "
        "exceeds usual weight, a ratio of 1 is often used in practice; this calculator uses the ratio as given.",
    ),
    examples=(
        Example({"albumin": 35, "current_weight": 60, "usual_weight": 70}, 88.9,
                "VA TPN study formula: 1.519×35 + 41.7×60/70 = 53.165 + 35.743 = 88.9 (hand-computed)", 0.05),
        Example({"albumin": "4.0 g/dL", "current_weight": 70, "usual_weight": 70}, 102.5,
                "VA TPN study formula: 1.519×40 + 41.7×1 = 102.46 (hand-computed)", 0.05),
    ),
)

CALCULATORS = [G8, CFS, BERG, MUST, BARTHEL, NRI]
