"""Bedside critical-care scores: shock index, cerebral perfusion pressure, CPOT pain score, NEWS2,
RASS sedation scale and the GCS-Pupils score."""

from __future__ import annotations

from dataclasses import replace

from calcmate.calculators._common import HEART_RATE, RESP_RATE, SBP, TEMPERATURE, flag
from calcmate.calculators.respiratory import SPO2
from calcmate.calculators.spec import Band, Calculator, CalculatorInputError, Choice, Example, Input, Output, Reference
from calcmate.domains import Domain

# -- Shock index -----------------------------------------------------------------------------------
SHOCK_INDEX = Calculator(
    id="shock_index",
    name="Shock Index",
    aliases=("Shock Index", "SI", "Allgöwer shock index"),
    domain=Domain.CRITICAL_CARE,
    tags=("hemodynamics", "shock", "trauma", "emergency", "hemorrhage"),
    produces=("shock_index",),
    inputs=(HEART_RATE, SBP),
    compute=lambda v: v["heart_rate"] / v["sbp"],
    output=Output("decimal", None, 2, "Shock index"),
    bands=(
        Band("Normal (0.5-0.7)", None, 0.7),
        Band("Elevated (0.7-0.99): possible occult shock", 0.7, 1.0),
        Band("Abnormal (≥1.0): associated with shock, transfusion need and higher mortality", 1.0, None),
    ),
    reference=Reference(
        purpose="Simple bedside marker of haemodynamic instability and occult shock.",
        when_to_use="Trauma, haemorrhage, sepsis or any undifferentiated patient with possible shock.",
        formula="Shock index = heart rate (beats/min) / systolic blood pressure (mmHg).",
        interpretation="Normal 0.5-0.7; ≥ 1.0 is associated with higher transfusion requirements and mortality.",
        citation="Allgöwer M, Burri C. \"Schockindex\". Dtsch Med Wochenschr. 1967;92(43):1947-1950.",
        notes="Beta-blockade, pacing and pregnancy change the heart-rate response; children need age-adjusted "
        "cut-offs (SIPA), which are a different calculator.",
    ),
    examples=(
        Example({"heart_rate": 120, "sbp": 100}, 1.2, "Hand-computed from Allgöwer 1967: 120/100", 0.005),
        Example({"heart_rate": 70, "sbp": 120}, 0.58, "Hand-computed from Allgöwer 1967: 70/120", 0.005),
    ),
)

# -- Cerebral perfusion pressure -------------------------------------------------------------------
MAP_INPUT = Input("map", "Mean arterial pressure", unit="mmHg", min=10, max=250,
                  aliases=("MAP", "Mean Arterial Pressure", "mean arterial pressure"))

CPP = Calculator(
    id="cerebral_perfusion_pressure",
    name="Cerebral Perfusion Pressure",
    aliases=("Cerebral Perfusion Pressure", "CPP"),
    domain=Domain.NEUROLOGY,
    tags=("neurocritical care", "traumatic brain injury", "intracranial pressure", "ICU"),
    produces=("cpp",),
    inputs=(MAP_INPUT, Input("icp", "Intracranial pressure", unit="mmHg", min=-10, max=150,
                             aliases=("ICP", "intracranial pressure"))),
    compute=lambda v: v["map"] - v["icp"],
    output=Output("decimal", "mmHg", 0, "Cerebral perfusion pressure"),
    bands=(
        Band("Low CPP (< 60 mmHg): consider raising MAP or lowering ICP", None, 60),
        Band("Target range (60-70 mmHg, Brain Trauma Foundation)", 60, 70.5),
        Band("Above target (> 70 mmHg): avoid aggressive elevation (ARDS risk)", 70.5, None),
    ),
    reference=Reference(
        purpose="Pressure gradient driving cerebral blood flow.",
        when_to_use="Patients with ICP monitoring, mostly severe traumatic brain injury.",
        formula="CPP = MAP − ICP (mmHg).",
        interpretation="Brain Trauma Foundation (4th ed.) recommends a CPP target of 60-70 mmHg; < 60 is associated with "
        "ischaemia, while > 70 with fluids/pressors increases ARDS risk.",
        citation="Carney N, Totten AM, O'Reilly C, et al. Guidelines for the Management of Severe Traumatic Brain Injury, "
        "Fourth Edition. Neurosurgery. 2017;80(1):6-15.",
        notes="Zero the arterial transducer at the tragus (foramen of Monro) when computing CPP.",
    ),
    examples=(
        Example({"map": 62, "icp": 28}, 34.0,
                "Hand-computed per CPP = MAP − ICP (Brain Trauma Foundation 2017): 62 − 28 = 34, below the 60 target",
                0.5),
        Example({"map": 85, "icp": 15}, 70.0, "Hand-computed: 85 − 15", 0.5),
    ),
)

# -- CPOT ------------------------------------------------------------------------------------------
def _item(key: str, label: str, options: tuple[str, str, str], *aliases: str, optional: bool = False, help: str = "") -> Input:
    return Input(key, label, type="choice", optional=optional, help=help, aliases=(label, *aliases),
                 choices=tuple(Choice(o, i, (f"{o} ({i})", f"{o} (+{i})", f"{o} {i}")) for i, o in enumerate(options)))


def _cpot(v):
    if (v["ventilator"] is None) == (v["vocalization"] is None):
        raise CalculatorInputError("cpot", "ventilator",
                                   "give exactly one of ventilator (intubated) or vocalization (extubated)")
    items = {k: v[k] for k in ("facial_expression", "body_movements", "muscle_tension")}
    last = "ventilator" if v["ventilator"] is not None else "vocalization"
    items[last] = v[last]
    return sum(items.values()), items


CPOT = Calculator(
    id="cpot",
    name="Critical Care Pain Observation Tool (CPOT)",
    aliases=("Critical Care Pain Observation Tool (CPOT)", "CPOT"),
    domain=Domain.CRITICAL_CARE,
    tags=("pain", "sedation", "ICU", "nursing", "delirium"),
    inputs=(
        _item("facial_expression", "Facial expression", ("Relaxed, neutral", "Tense", "Grimacing")),
        _item("body_movements", "Body movements",
              ("Absence of movements or normal position", "Protection", "Restlessness/agitation")),
        _item("muscle_tension", "Muscle tension", ("Relaxed", "Tense, rigid", "Very tense or rigid"),
              "Muscle tension (evaluation by passive flexion and extension of upper extremities)"),
        _item("ventilator", "Compliance with the ventilator (intubated patients)",
              ("Tolerating ventilator or movement", "Coughing but tolerating", "Fighting ventilator"),
              "Compliance with the ventilator", "Compliance with ventilator", optional=True,
              help="Intubated patients; give this or vocalization."),
        _item("vocalization", "Vocalization (extubated patients)",
              ("Talking in normal tone or no sound", "Sighing, moaning", "Crying out, sobbing"), "Vocalization",
              optional=True, help="Extubated patients; give this or ventilator."),
    ),
    compute=_cpot,
    output=Output("integer", "points", None, "CPOT"),
    bands=(
        Band("Pain unlikely or controlled (0-2)", 0, 3),
        Band("Pain likely: unacceptable pain (> 2)", 3, None),
    ),
    reference=Reference(
        purpose="Behavioural pain assessment in critically ill adults who cannot self-report.",
        when_to_use="Intubated or non-communicative ICU adults, at rest and during care procedures.",
        formula="Four items scored 0-2: facial expression (relaxed 0, tense 1, grimacing 2); body movements (absent 0, "
        "protection 1, restlessness 2); muscle tension (relaxed 0, tense/rigid 1, very tense/rigid 2); ventilator "
        "compliance for intubated patients (tolerating 0, coughing but tolerating 1, fighting 2) OR vocalisation for "
        "extubated patients (normal tone/no sound 0, sighing/moaning 1, crying out/sobbing 2). Total 0-8.",
        interpretation="Score > 2 indicates pain (sensitivity 86%, specificity 78% during procedures).",
        citation="Gélinas C, Fillion L, Puntillo KA, Viens C, Fortier M. Validation of the critical-care pain observation "
        "tool in adult patients. Am J Crit Care. 2006;15(4):420-427; Gélinas C, Harel F, Fillion L, Puntillo KA, "
        "Johnston CC. Sensitivity and specificity of the critical-care pain observation tool for the detection of pain "
        "in intubated adults after cardiac surgery. J Pain Symptom Manage. 2009;37(1):58-67.",
        notes="Exactly one of the ventilator and vocalisation items is scored.",
    ),
    examples=(
        Example({"facial_expression": "Grimacing", "body_movements": "Protection", "muscle_tension": "Tense, rigid",
                 "ventilator": "Coughing but tolerating"}, 5, "Gélinas 2006 item table: 2+1+1+1"),
        Example({"facial_expression": 0, "body_movements": 0, "muscle_tension": 1, "vocalization": "Sighing, moaning"}, 2,
                "Gélinas 2006 item table: 0+0+1+1"),
    ),
)

# -- NEWS2 -----------------------------------------------------------------------------------------
def _news2_spo2(spo2: float, scale2: bool, oxygen: bool) -> int:
    if not scale2:
        return 3 if spo2 <= 91 else 2 if spo2 <= 93 else 1 if spo2 <= 95 else 0
    if spo2 <= 83:
        return 3
    if spo2 <= 85:
        return 2
    if spo2 <= 87:
        return 1
    if spo2 <= 92 or not oxygen:
        return 0
    return 1 if spo2 <= 94 else 2 if spo2 <= 96 else 3


def _news2(v):
    rr, hr, sbp, t = v["resp_rate"], v["heart_rate"], v["sbp"], v["temperature"]
    spo2 = v["spo2"] * (100 if v["spo2"] <= 1 else 1)
    pts = {
        "resp_rate": 3 if rr <= 8 else 1 if rr <= 11 else 0 if rr <= 20 else 2 if rr <= 24 else 3,
        "spo2": _news2_spo2(spo2, v["hypercapnic_scale"], v["oxygen"]),
        "oxygen": 2 if v["oxygen"] else 0,
        "sbp": 3 if sbp <= 90 else 2 if sbp <= 100 else 1 if sbp <= 110 else 0 if sbp <= 219 else 3,
        "heart_rate": 3 if hr <= 40 else 1 if hr <= 50 else 0 if hr <= 90 else 1 if hr <= 110 else 2 if hr <= 130 else 3,
        "consciousness": v["consciousness"],
        "temperature": 3 if t <= 35.0 else 1 if t <= 36.0 else 0 if t <= 38.0 else 1 if t <= 39.0 else 2,
    }
    total = sum(pts.values())
    risk = "High" if total >= 7 else "Medium" if total >= 5 else "Low-medium" if 3 in pts.values() else "Low"
    return total, {"points": pts, "clinical_risk": risk}


NEWS2 = Calculator(
    id="news2",
    name="National Early Warning Score (NEWS) 2",
    aliases=("National Early Warning Score (NEWS) 2", "NEWS2", "NEWS 2"),
    domain=Domain.CRITICAL_CARE,
    tags=("deterioration", "early warning", "sepsis", "ward", "triage"),
    inputs=(
        replace(RESP_RATE, aliases=(*RESP_RATE.aliases, "Respiratory rate, breaths per min")),
        replace(SPO2, aliases=(*SPO2.aliases, "SpO₂, %")),
        flag("hypercapnic_scale", "Hypercapnic respiratory failure (use SpO₂ scale 2, target 88-92%)",
             "Hypercapnic respiratory failure", "SpO₂ scale 2", optional=True,
             help="Default no (scale 1); only for prescribed target 88-92%."),
        Input("oxygen", "Air or oxygen?", type="choice",
              choices=(Choice("Air", False, ("room air", "no", "no supplemental oxygen")),
                       Choice("Oxygen", True, ("supplemental oxygen", "yes", "on oxygen"))),
              aliases=("Air or oxygen?", "Air or oxygen", "Supplemental oxygen")),
        replace(SBP, aliases=(*SBP.aliases, "Systolic BP, mmHg")),
        replace(HEART_RATE, aliases=(*HEART_RATE.aliases, "Pulse, beats per min")),
        Input("consciousness", "Consciousness", type="choice",
              choices=(Choice("Alert", 0, ("A",)),
                       Choice("New confusion, or responds to voice, pain, or unresponsive (CVPU)", 3,
                              ("CVPU", "new confusion", "confused", "voice", "pain", "unresponsive", "V", "P", "U"))),
              aliases=("Consciousness", "ACVPU", "level of consciousness")),
        replace(TEMPERATURE, aliases=(*TEMPERATURE.aliases, "Temperature, °C")),
    ),
    compute=_news2,
    output=Output("integer", "points", None, "NEWS2"),
    bands=(
        Band("Low clinical risk (0-4): ward-based response; a single parameter scoring 3 needs urgent ward review", 0, 5),
        Band("Medium clinical risk (5-6): urgent response", 5, 7),
        Band("High clinical risk (≥7): emergency response", 7, None),
    ),
    reference=Reference(
        purpose="Detects clinical deterioration in adults and sets the urgency of response.",
        when_to_use="Adults (≥ 16, not pregnant) in hospital or prehospital care at every observation set.",
        formula=(
            "| Parameter | 3 | 2 | 1 | 0 | 1 | 2 | 3 |\n|---|---|---|---|---|---|---|---|\n"
            "| Resp rate | ≤8 | | 9-11 | 12-20 | | 21-24 | ≥25 |\n"
            "| SpO₂ scale 1 | ≤91 | 92-93 | 94-95 | ≥96 | | | |\n"
            "| SpO₂ scale 2 | ≤83 | 84-85 | 86-87 | 88-92, ≥93 on air | 93-94 on O₂ | 95-96 on O₂ | ≥97 on O₂ |\n"
            "| Air or oxygen | | Oxygen | | Air | | | |\n"
            "| Systolic BP | ≤90 | 91-100 | 101-110 | 111-219 | | | ≥220 |\n"
            "| Pulse | ≤40 | | 41-50 | 51-90 | 91-110 | 111-130 | ≥131 |\n"
            "| Consciousness | | | | Alert | | | CVPU |\n"
            "| Temperature °C | ≤35.0 | | 35.1-36.0 | 36.1-38.0 | 38.1-39.0 | ≥39.1 | |"
        ),
        interpretation="Clinical risk: low 0-4, low-medium when any single parameter scores 3, medium 5-6, high ≥ 7 "
        "(in details as clinical_risk).",
        citation="Royal College of Physicians. National Early Warning Score (NEWS) 2: Standardising the assessment of "
        "acute-illness severity in the NHS. Updated report of a working party. London: RCP; 2017.",
        notes="Scale 2 is only for patients with a prescribed SpO₂ target of 88-92% (hypercapnic respiratory failure); "
        "it defaults to scale 1. Non-integer values fall to the band whose upper limit they do not exceed.",
    ),
    examples=(
        Example({"resp_rate": 24, "spo2": 93, "oxygen": "Oxygen", "sbp": 105, "heart_rate": 115,
                 "consciousness": "Alert", "temperature": 38.5}, 10,
                "RCP 2017 NEWS2 chart: RR 2 + SpO₂ 2 + O₂ 2 + SBP 1 + HR 2 + A 0 + T 1"),
        Example({"resp_rate": 16, "spo2": 97, "oxygen": "Air", "sbp": 125, "heart_rate": 72,
                 "consciousness": "Alert", "temperature": 36.8}, 0, "RCP 2017 NEWS2 chart: all parameters normal"),
        Example({"resp_rate": 18, "spo2": 90, "hypercapnic_scale": True, "oxygen": "Oxygen", "sbp": 130,
                 "heart_rate": 80, "consciousness": "Alert", "temperature": 37.0}, 2,
                "RCP 2017 NEWS2 chart, scale 2: SpO₂ 90 on O₂ scores 0, oxygen 2"),
    ),
)

# -- RASS ------------------------------------------------------------------------------------------
_RASS = (
    (4, "Combative", "Overtly combative, violent, immediate danger to staff"),
    (3, "Very agitated", "Pulls or removes tube(s) or catheter(s); aggressive"),
    (2, "Agitated", "Frequent non-purposeful movement, fights ventilator"),
    (1, "Restless", "Anxious but movements not aggressive or vigorous"),
    (0, "Alert and calm", ""),
    (-1, "Drowsy", "Not fully alert, but has sustained awakening (eye-opening/eye contact) to voice (≥10 seconds)"),
    (-2, "Light sedation", "Briefly awakens with eye contact to voice (<10 seconds)"),
    (-3, "Moderate sedation", "Movement or eye opening to voice (but no eye contact)"),
    (-4, "Deep sedation", "No response to voice, but movement or eye opening to physical stimulation"),
    (-5, "Unarousable", "No response to voice or physical stimulation"),
)

RASS = Calculator(
    id="rass",
    name="Richmond Agitation-Sedation Scale (RASS)",
    aliases=("Richmond Agitation-Sedation Scale (RASS)", "RASS"),
    domain=Domain.CRITICAL_CARE,
    tags=("sedation", "agitation", "delirium", "ICU", "nursing"),
    inputs=(Input("rass_level", "Observed level", type="choice", aliases=("RASS", "Patient behaviour", "level"),
                  choices=tuple(Choice(f"{name}: {desc}" if desc else name, val,
                                       (name, f"{name} ({val:+d})" if val else f"{name} (0)", f"{val:+d} {name}"))
                                for val, name, desc in _RASS)),),
    compute=lambda v: v["rass_level"],
    output=Output("integer", None, None, "RASS"),
    bands=(
        Band("Deep sedation / unarousable (-4 to -5)", None, -3.5),
        Band("Light to moderate sedation (-1 to -3)", -3.5, -0.5),
        Band("Alert and calm (0)", -0.5, 0.5),
        Band("Agitation (+1 to +4)", 0.5, None),
    ),
    reference=Reference(
        purpose="Standardised description of agitation and sedation depth.",
        when_to_use="ICU patients, particularly on sedation or mechanical ventilation; the first step of CAM-ICU.",
        formula="\n".join(f"- {val:+d} {name}" + (f": {desc}" if desc else "") for val, name, desc in _RASS),
        interpretation="Typical light-sedation target is 0 to -2 (PADIS 2018). CAM-ICU requires RASS ≥ -3.",
        citation="Sessler CN, Gosnell MS, Grap MJ, et al. The Richmond Agitation-Sedation Scale: validity and "
        "reliability in adult intensive care unit patients. Am J Respir Crit Care Med. 2002;166(10):1338-1344.",
        notes="Observe 30 s; if not alert, speak the patient's name; if no response, stimulate physically.",
    ),
    examples=(
        Example({"rass_level": "Drowsy"}, -1, "Sessler 2002 scale: drowsy is -1"),
        Example({"rass_level": "Very agitated"}, 3, "Sessler 2002 scale: very agitated is +3"),
    ),
)

# -- GCS-Pupils ------------------------------------------------------------------------------------
def _scored(key: str, label: str, options: dict[int, str], *aliases: str) -> Input:
    return Input(key, label, type="choice", optional=True, aliases=(label, *aliases),
                 choices=tuple(Choice(t, s, (f"{t} (+{s})", f"{t} ({s})")) for s, t in options.items()),
                 help="Optional when the total GCS is given.")


_EYE = {4: "Eyes open spontaneously", 3: "Eye opening to verbal command", 2: "Eye opening to pain", 1: "No eye opening"}
_VERBAL = {5: "Oriented", 4: "Confused", 3: "Inappropriate words", 2: "Incomprehensible sounds", 1: "No verbal response"}
_MOTOR = {6: "Obeys commands", 5: "Localizes pain", 4: "Withdrawal from pain", 3: "Flexion to pain",
          2: "Extension to pain", 1: "No motor response"}


def _gcs_p(v):
    parts = [v["eye"], v["verbal"], v["motor"]]
    if all(p is not None for p in parts):
        total = sum(parts)
        if v["gcs"] is not None and v["gcs"] != total:
            raise CalculatorInputError("gcs_pupils", "gcs", f"total GCS {v['gcs']} disagrees with E+V+M = {total}")
    elif v["gcs"] is not None:
        total = v["gcs"]
    else:
        missing = next(k for k, p in zip(("eye", "verbal", "motor"), parts) if p is None)
        raise CalculatorInputError("gcs_pupils", missing, "give the total GCS or all three GCS components")
    return total - v["pupils"], {"gcs": total, "pupil_reactivity_score": v["pupils"]}


GCS_P = Calculator(
    id="gcs_pupils",
    name="GCS-Pupils Score",
    aliases=("GCS-Pupils Score", "GCS-P", "Glasgow Coma Scale-Pupils"),
    domain=Domain.NEUROLOGY,
    tags=("neurology", "traumatic brain injury", "prognosis", "neurosurgery"),
    inputs=(
        Input("gcs", "Glasgow Coma Scale total", type="integer", min=3, max=15, optional=True,
              aliases=("GCS", "Glasgow Coma Score", "Glasgow Coma Scale"), help="Give this or the three components."),
        _scored("eye", "Eye response", _EYE, "Best eye response"),
        _scored("verbal", "Verbal response", _VERBAL, "Best verbal response"),
        _scored("motor", "Motor response", _MOTOR, "Best motor response"),
        Input("pupils", "Pupil response", type="choice", aliases=("Pupil response", "Pupil reactivity score", "PRS"),
              choices=(
                  Choice("Both pupils reactive to light", 0, ("Both pupils reactive to light (0)", "none unreactive")),
                  Choice("One pupil unreactive to light", 1, ("One pupil unreactive to light (-1)", "-1")),
                  Choice("Both pupils unreactive to light", 2, ("Both pupils unreactive to light (-2)", "-2")),
              ),
              help="Pupil reactivity score: number of pupils unreactive to light (0-2)."),
    ),
    compute=_gcs_p,
    output=Output("integer", "points", None, "GCS-P"),
    bands=(
        Band("Very severe (GCS-P 1-3)", None, 3.5),
        Band("Severe (GCS-P 4-8)", 3.5, 8.5),
        Band("Moderate (GCS-P 9-12)", 8.5, 12.5),
        Band("Mild (GCS-P 13-15)", 12.5, None),
    ),
    reference=Reference(
        purpose="Combines the Glasgow Coma Scale with pupil reactivity into one prognostic index after head injury.",
        when_to_use="Adults with traumatic brain injury, for prognosis of 6-month mortality and unfavourable outcome.",
        formula="GCS-P = GCS (3-15) − pupil reactivity score (0 both reactive, 1 one unreactive, 2 both unreactive). "
        "Range 1-15.",
        interpretation="Each point lower is associated with higher 6-month mortality and unfavourable outcome; the extension "
        "to 1-2 separates the worst prognoses (CRASH and IMPACT data).",
        citation="Brennan PM, Murray GD, Teasdale GM. Simplifying the use of prognostic information in traumatic brain "
        "injury. Part 1: The GCS-Pupils score: an extended index of clinical severity. J Neurosurg. 2018;128(6):1612-1620.",
        notes="Severity bands mirror the conventional GCS bands and are for orientation only; Brennan et al. report "
        "outcome per GCS-P point. The total GCS is another calculator; here it is an input (or its components).",
    ),
    examples=(
        Example({"gcs": 3, "pupils": "Both pupils unreactive to light"}, 1, "Brennan 2018: GCS 3 with both pupils "
                "unreactive gives the minimum GCS-P of 1"),
        Example({"eye": "Eye opening to verbal command", "verbal": "Inappropriate words",
                 "motor": "Localizes pain", "pupils": "One pupil unreactive to light"}, 10,
                "Hand-computed per Brennan 2018 (GCS-P = GCS − pupil reactivity score): E3 V3 M5 = 11, one "
                "unreactive pupil scores 1, 11 − 1 = 10"),
    ),
)

CALCULATORS = [SHOCK_INDEX, CPP, CPOT, NEWS2, RASS, GCS_P]
