"""The offline language grammar of the scripted teacher: questions, plans, thoughts, final prose.

All wording lives in ``grammar.yaml`` beside this file (validated here with pydantic); this module
only composes it. Every text is built from several independently drawn slots (clauses, connectives,
hedges, clinical phrases), so one grammar yields thousands of realisations per kind rather than a
handful of fixed sentences.

Public API (the teacher and the task builder call these):

* ``question(task, rng) -> str``: the clinician's request for a composed task. It describes the
  presentation (age in words, sex, setting, history, qualitative findings), the concern and the
  decisions needed, in clinical words: never a calculator name or alias of the registry, never a
  digit (the agent must find every value in the EHR), never reference text.
* ``plan_text(task, rng) -> str``: the global plan that opens the first tool-calling turn (goals,
  inputs by clinical concept and where they probably live, dependencies, branch logic), numbered.
* ``thought(kind, slots, rng) -> str``: one ReAct thought. Kinds and their slots (``*`` required)::

      explore_schema   goal*, n_tables, tables
      describe_tables  tables*, concept
      search           concept*, query, goal, prev
      pick_hit         title*, position, top_title (set it when the top hit is the wrong one)
      fetch_read       calc*, inputs, note
      retrieve         concepts*, table*, columns, calc
      select_value     rule* (most_recent | admission | worst_24h | single), concept*, value*, unit,
                       time, n_rows
      missing_default  concept*, default*, unit, calc
      recover_error    table*, error, column, corrected
      recover_empty    concept*, table*, filter, broadened
      compute          calc*, conversion, inputs
      result           calc*, value*, unit, interpretation, next, meaning
      branch           calc*, value*, threshold*, arm* (then | else), chosen*, other, source, label, unit
      parallel         calls*, n

  Unknown slots are ignored; a missing required slot is a ValueError naming it.
* ``final_prose(task, results, rng) -> str``: each value with unit and interpretation, then what
  the results mean together and how they change the plan.

``normalise_thought`` is the audit's normalisation (numbers, quoted strings, calculator names
masked), kept here so tests and the audit agree.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, field_validator, model_validator

from calcmate.calculators.spec import Calculator, normalize_name

DEFAULT_GRAMMAR = Path(__file__).with_name("grammar.yaml")

THOUGHT_KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # kind: (required slots, optional slots)
    "explore_schema": (("goal",), ("n_tables", "tables")),
    "describe_tables": (("tables",), ("concept",)),
    "search": (("concept",), ("query", "goal", "prev")),
    "pick_hit": (("title",), ("position", "top_title")),
    "fetch_read": (("calc",), ("inputs", "note")),
    "retrieve": (("concepts", "table"), ("columns", "calc")),
    "select_value": (("rule", "concept", "value"), ("unit", "time", "n_rows")),
    "missing_default": (("concept", "default"), ("unit", "calc")),
    "recover_error": (("table",), ("error", "column", "corrected")),
    "recover_empty": (("concept", "table"), ("filter", "broadened")),
    "compute": (("calc",), ("conversion", "inputs")),
    "result": (("calc", "value"), ("unit", "interpretation", "next", "meaning")),
    "branch": (("calc", "value", "threshold", "arm", "chosen"), ("other", "source", "label", "unit")),
    "parallel": (("calls",), ("n",)),
}
# a kind may route to a variant of its grammar entry by one slot's value
VARIANTS: dict[str, str] = {"select_value": "rule", "branch": "arm"}
SELECT_RULES = ("most_recent", "admission", "worst_24h", "single")

_POOL_REF = re.compile(r"\{@([a-z0-9_]+)\}")
_SLOT_REF = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


# -- the grammar file -------------------------------------------------------------------------------
class Part(BaseModel):
    """One clause position of a composed text: drawn with probability ``p`` from ``alts``."""

    p: float = Field(1.0, ge=0.0, le=1.0)
    alts: list[str] = Field(min_length=2)


class ThoughtSpec(BaseModel):
    parts: list[Part] = Field(min_length=2)


class FindingSpec(BaseModel):
    """Qualitative wording of a measured input (no numbers): low/high bounds in the input's canonical unit."""

    keys: list[str] = Field(min_length=1)  # registry input keys this applies to
    low: float | None = None
    high: float | None = None
    low_words: list[str] = Field(default_factory=list)
    high_words: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _words(self) -> "FindingSpec":
        if self.low is not None and not self.low_words:
            raise ValueError("a 'low' bound needs low_words")
        if self.high is not None and not self.high_words:
            raise ValueError("a 'high' bound needs high_words")
        return self


class Grammar(BaseModel):
    version: int
    pools: dict[str, list[str]]
    thoughts: dict[str, ThoughtSpec]
    decisions: dict[str, list[str]]  # tag keyword -> decision phrases
    settings: dict[str, list[str]]  # domain value (or "default") -> setting phrases
    findings: dict[str, FindingSpec]
    tables: dict[str, list[str]]  # EHR table -> keywords of the concepts it probably holds
    generic_tags: list[str]

    @field_validator("pools")
    @classmethod
    def _pools(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for name, alts in v.items():
            if len(alts) < 2:
                raise ValueError(f"pool {name!r} needs at least 2 realisations")
        return v

    @model_validator(mode="after")
    def _refs(self) -> "Grammar":
        texts: list[tuple[str, str]] = [(f"pools.{k}", a) for k, alts in self.pools.items() for a in alts]
        for kind, spec in self.thoughts.items():
            base = kind.split(".")[0]
            if base not in THOUGHT_KINDS:
                raise ValueError(f"thoughts.{kind}: unknown kind; known: {sorted(THOUGHT_KINDS)}")
            allowed = set(THOUGHT_KINDS[base][0] + THOUGHT_KINDS[base][1])
            for i, part in enumerate(spec.parts):
                for a in part.alts:
                    texts.append((f"thoughts.{kind}.parts[{i}]", a))
                    bad = set(_SLOT_REF.findall(a)) - allowed
                    if bad:
                        raise ValueError(f"thoughts.{kind}.parts[{i}]: unknown slots {sorted(bad)} in {a!r}")
        for kind in THOUGHT_KINDS:
            variants = [k for k in self.thoughts if k.split(".")[0] == kind]
            if not variants:
                raise ValueError(f"thoughts: kind {kind!r} has no entry")
        for r in SELECT_RULES:
            if f"select_value.{r}" not in self.thoughts:
                raise ValueError(f"thoughts: select_value.{r} is missing")
        for where, a in texts + [(f"decisions.{k}", a) for k, v in self.decisions.items() for a in v]:
            for ref in _POOL_REF.findall(a):
                if ref not in self.pools:
                    raise ValueError(f"{where}: unknown pool {{@{ref}}} in {a!r}")
        if "default" not in self.settings:
            raise ValueError("settings needs a 'default' entry")
        return self


@lru_cache(maxsize=4)
def load_grammar(path: str | None = None) -> Grammar:
    p = Path(path) if path else DEFAULT_GRAMMAR
    return Grammar.model_validate(yaml.safe_load(p.read_text(encoding="utf-8")))


# -- expansion --------------------------------------------------------------------------------------
def _needs(text: str) -> set[str]:
    return set(_SLOT_REF.findall(text))


def expand(text: str, slots: Mapping[str, Any], rng: random.Random, g: Grammar | None = None, depth: int = 0) -> str:
    """Fill ``{@pool}`` references (recursively, choosing among alternatives usable with ``slots``) and ``{slot}``s."""
    g = g or load_grammar()

    def pool(m: re.Match) -> str:
        alts = [a for a in g.pools[m.group(1)] if _needs(a) <= slots.keys()] or g.pools[m.group(1)]
        return expand(rng.choice(alts), slots, rng, g, depth + 1) if depth < 6 else rng.choice(alts)

    text = _POOL_REF.sub(pool, text)
    return _SLOT_REF.sub(lambda m: str(slots.get(m.group(1), m.group(0))), text)


def pick(name: str, rng: random.Random, slots: Mapping[str, Any] | None = None, g: Grammar | None = None,
         used: set[str] | None = None, all_slots: bool = False) -> str:
    """One expanded realisation of pool ``name``. ``used`` (a set the caller keeps) avoids repeating an
    alternative within one text while fresh ones remain; ``all_slots`` prefers alternatives that use
    every slot given."""
    g = g or load_grammar()
    slots = slots or {}
    alts = [a for a in g.pools[name] if _needs(a) <= slots.keys()] or g.pools[name]
    if all_slots:
        full = [a for a in alts if _needs(a) >= set(slots)]
        alts = full or alts
    if used is not None:
        fresh = [a for a in alts if a not in used]
        alts = fresh or alts
    a = rng.choice(alts)
    if used is not None:
        used.add(a)
    return expand(a, slots, rng, g)


def _cap(s: str) -> str:
    """Sentence case, leaving words whose case is meaning alone ("qSOFA", "eGFR", "pH", "iCa")."""
    s = s.strip()
    if not s or re.match(r"[a-z]+[A-Z]", s.split(" ", 1)[0]):
        return s
    return s[0].upper() + s[1:]


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,.;:?!])", r"\1", text)
    text = re.sub(r"([.?!])\1+", r"\1", text)
    text = re.sub(r",\s*,", ",", text)
    text = re.sub(r"\.\s*,", ".", text)
    # capitalise sentence starts
    return re.sub(r"(^|[.?!]\s+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)


def _join(items: Sequence[str], rng: random.Random | None = None, conj: str = "and") -> str:
    items = [i for i in items if i]
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + f" {conj} " + items[-1]


def compose_parts(parts: Sequence[Part], slots: Mapping[str, Any], rng: random.Random, g: Grammar) -> str:
    out: list[str] = []
    for part in parts:
        usable = [a for a in part.alts if _needs(a) <= slots.keys()]
        if not usable or (part.p < 1.0 and rng.random() >= part.p):
            continue
        out.append(_cap(expand(rng.choice(usable), slots, rng, g)))
    return _tidy(" ".join(out))


# -- thoughts ---------------------------------------------------------------------------------------
def _slot_text(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return _join([str(x) for x in v])
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def thought(kind: str, slots: Mapping[str, Any], rng: random.Random, grammar: Grammar | None = None) -> str:
    """One composed ReAct thought of ``kind`` (see the module docstring for kinds and slots)."""
    g = grammar or load_grammar()
    if kind not in THOUGHT_KINDS:
        raise ValueError(f"unknown thought kind {kind!r}; known: {sorted(THOUGHT_KINDS)}")
    required, optional = THOUGHT_KINDS[kind]
    missing = [s for s in required if slots.get(s) in (None, "", [])]
    if missing:
        raise ValueError(f"thought {kind!r} needs slots {missing}")
    s = {k: _slot_text(v) for k, v in slots.items() if k in required + optional and v not in (None, "", [])}
    key = kind
    if kind in VARIANTS:
        variant = normalize_name(s[VARIANTS[kind]]).replace(" ", "_")
        key = f"{kind}.{variant}" if f"{kind}.{variant}" in g.thoughts else kind
        if key == kind and kind not in g.thoughts:
            key = next(k for k in g.thoughts if k.startswith(kind + "."))
    if kind == "pick_hit" and "top_title" in s and "pick_hit.wrong_top" in g.thoughts:
        key = "pick_hit.wrong_top"
    elif kind == "pick_hit":
        key = "pick_hit"
    if kind == "branch" and s.get("chosen") and normalize_name(s["chosen"]) in {"none", "nothing", ""}:
        s.pop("chosen")
        s["chosen"] = "no further calculator on this arm"
    return compose_parts(g.thoughts[key].parts, s, rng, g)


_NUM = re.compile(r"[-+]?\d+(?:[.,]\d+)*")
_QUOTED = re.compile(r"\"[^\"]*\"|'[^'\s][^']*'|“[^”]*”|`[^`]*`")


@lru_cache(maxsize=1)
def _all_name_patterns() -> re.Pattern | None:
    from calcmate.calculators.registry import registry
    from calcmate.synth.fuzzy import names_of

    names = sorted({normalize_name(n) for c in registry() for n in names_of(c)}, key=len, reverse=True)
    if not names:
        return None
    return re.compile(r"(?<![0-9a-z])(?:" + "|".join(re.escape(n) for n in names) + r")(?![0-9a-z])")


@lru_cache(maxsize=64)
def _names_pattern(names: tuple[str, ...]) -> re.Pattern | None:
    ns = sorted({normalize_name(x) for x in names if normalize_name(x)}, key=len, reverse=True)
    if not ns:
        return None
    return re.compile(r"(?<![0-9a-z])(?:" + "|".join(re.escape(n) for n in ns) + r")(?![0-9a-z])")


def normalise_thought(text: str, names: Iterable[str] = ()) -> str:
    """The audit's normal form: quoted strings, calculator names (the registry's and ``names``) and
    numbers masked, case and punctuation folded."""
    t = _QUOTED.sub(" Q ", text)
    t = normalize_name(t)
    extra = _names_pattern(tuple(names))
    if extra is not None:
        t = extra.sub(" calc ", t)
    pat = _all_name_patterns()
    if pat is not None:
        t = pat.sub(" calc ", t)
    t = _NUM.sub("#", t)
    t = re.sub(r"#(?:\s+#)+", "#", t)  # "7.4" normalises to "7 4": one number
    return " ".join(t.split())


# -- what a task says about its patient and calculators ---------------------------------------------
@dataclass
class CalcView:
    calc: Calculator
    role: str = "pre"
    executed: bool = True
    value: Any = None
    interpretation: str | None = None


@dataclass
class TaskView:
    """What the writers use: the scenario, the ordered calculators, their links, the patient."""

    scenario: str
    context: str
    domain: str
    specialty: str
    calcs: list[CalcView]
    feeds: list[tuple[str, str, str | None]]  # (src id, dst id, quantity)
    shares: list[tuple[str, str, str | None]]
    branch: dict[str, Any] | None
    age_years: float | None = None
    sex: str | None = None  # "male" | "female"
    history: list[str] = None  # type: ignore[assignment]
    findings: list[str] = None  # type: ignore[assignment]

    def by_id(self, cid: str) -> CalcView | None:
        return next((c for c in self.calcs if c.calc.id == cid), None)


@lru_cache(maxsize=1)
def _taxonomy_contexts() -> dict[str, tuple[str, str | None]]:
    try:
        from calcmate.synth.taxonomy import load_taxonomy

        return {normalize_name(c.name): (c.context, c.population) for c in load_taxonomy().categories}
    except Exception:  # noqa: BLE001 - the grammar works without a taxonomy
        return {}


def _registry():
    from calcmate.calculators.registry import registry

    return registry()


def task_view(task: Any) -> TaskView:
    """Read a ``Task`` (synthesized: with ``plan`` metadata; or a benchmark task) into a TaskView."""
    reg = _registry()
    plan = task.plan or {}
    answers = {}
    for a in task.calculator_answers:
        cid = getattr(a, "calculator_id", None) or (plan and None)
        calc = (reg.find(cid) if cid else None) or reg.find(a.name)
        if calc is not None:
            answers[calc.id] = a
    steps = plan.get("steps") or [{"calc_id": cid, "role": "pre"} for cid in answers]
    executed = set(plan.get("executed") or answers)
    calcs: list[CalcView] = []
    for s in steps:
        calc = reg.find(s["calc_id"])
        if calc is None:
            continue
        a = answers.get(calc.id)
        calcs.append(CalcView(calc, s.get("role", "pre"), calc.id in executed,
                              a.final_answer if a is not None else None,
                              getattr(a, "interpretation", None) if a is not None else None))
    deps = plan.get("dependencies") or []
    feeds = [(d["src"], d["dst"], d.get("quantity")) for d in deps if d.get("kind") == "feeds"]
    shares = [(d["src"], d["dst"], d.get("quantity")) for d in deps if d.get("kind") == "shares"]
    branches = plan.get("branches") or []
    scenario = plan.get("category") or task.task_scenario or ""
    ctx, _pop = _taxonomy_contexts().get(normalize_name(scenario), ("", None))
    parts = [p.strip() for p in (task.task_category or "").split("/")]
    domain = plan.get("domain") or (parts[1] if len(parts) > 1 else "")
    specialty = parts[2] if len(parts) > 2 else ""
    view = TaskView(scenario, ctx, domain, specialty, calcs, feeds, shares, branches[0] if branches else None)
    _read_patient(view, task, answers)
    return view


_YES = {"yes", "true", "present", "positive", "y"}


def _read_patient(view: TaskView, task: Any, answers: dict[str, Any]) -> None:
    from calcmate.units import parse_quantity

    g = load_grammar()
    history: dict[str, str] = {}
    findings: dict[str, str] = {}
    by_key = {k: spec for spec in g.findings.values() for k in spec.keys}
    for cid, a in answers.items():
        calc = _registry().get(cid)
        labels = {normalize_name(i.label): i for i in calc.inputs}
        for gi in a.inputs:
            inp = labels.get(normalize_name(gi.field))
            if inp is None:
                continue
            val = gi.value
            if inp.key == "age" and view.age_years is None:
                try:
                    n, unit = parse_quantity(str(val))
                    u = (unit or inp.unit or "year").lower()
                    view.age_years = n / 12 if u.startswith("mo") else n / 365.25 if u.startswith("d") else (
                        n / 52.18 if u.startswith("w") else n)
                except Exception:  # noqa: BLE001
                    pass
            elif inp.key == "sex" and view.sex is None:
                v = normalize_name(val)
                view.sex = "male" if v in {"male", "m", "man"} else "female" if v in {"female", "f", "woman"} else None
            elif inp.type == "bool" and normalize_name(val) in _YES:
                phrase = history_phrase(inp.label)
                if phrase:
                    history.setdefault(normalize_name(phrase), phrase)
            elif inp.key in by_key and inp.type in ("number", "integer"):
                try:
                    canon = inp.coerce(cid, val)
                except Exception:  # noqa: BLE001
                    continue
                spec = by_key[inp.key]
                if spec.low is not None and canon < spec.low:
                    findings.setdefault(inp.key, "low")
                elif spec.high is not None and canon > spec.high:
                    findings.setdefault(inp.key, "high")
    view.history = list(history.values())
    view._finding_keys = findings  # type: ignore[attr-defined]
    view.findings = []


_HIST_DROP = re.compile(r"[0-9<>≥≤=%/#]|\b(?:points?|score|criteria|count|use)\b", re.I)
_HIST_TRAIL = re.compile(r"\s+(?:history|present|diagnosis)$", re.I)
_HIST_LEAD = re.compile(r"^(?:history of|known|documented|prior history of)\s+", re.I)


def history_phrase(label: str) -> str | None:
    """A yes/no input label as a history item ("Hypertension history" -> "hypertension"); None if it
    carries numbers, thresholds or a calculator name."""
    t = re.sub(r"\s*\([^)]*\)", "", label).strip()
    if not t or _HIST_DROP.search(t) or re.search(r"[?'\"‘’“”]", t) or len(normalize_name(t).split()) > 6:
        return None
    if _table_for(t) != "diagnostic_record":
        return None
    t = _HIST_TRAIL.sub("", _HIST_LEAD.sub("", t)).strip()
    if len(t) < 4 or has_calc_name(t):
        return None
    return lower_label(t)


def lower_label(t: str) -> str:
    """Lower-case a label's words except acronyms and chemical names ("PaO₂", "INR", "eGFR")."""
    out = []
    for w in t.split():
        core = re.sub(r"[^A-Za-z]", "", w)
        if len(core) >= 2 and (sum(ch.isupper() for ch in core) >= 2 or any(ch.isdigit() for ch in w) or
                               "₂" in w or "₃" in w):
            out.append(w)
        else:
            out.append(w.lower())
    return " ".join(out)


def has_calc_name(text: str) -> bool:
    pat = _all_name_patterns()
    return bool(pat and pat.search(normalize_name(text)))


# -- calculator descriptions in clinical words ------------------------------------------------------
_CONCEPT_DROP = re.compile(r"[0-9<>≥≤=%#]|\?|\b(?:units?|descriptor|observed level|correction factor|"
                           r"desired|target|goal|normal|per unit|content|drop factor|time|hours?|description|descriptor)\b|['\"‘’“”]", re.I)


def input_concepts(calc: Calculator, limit: int | None = None, rng: random.Random | None = None,
                   required_only: bool = False) -> list[str]:
    """The calculator's inputs as clinical concepts, clean of numbers and calculator names."""
    out = list(_concepts_cached(calc, required_only))
    if rng is not None and limit is not None and len(out) > limit:
        keep = sorted(rng.sample(range(len(out)), limit))
        out = [out[k] for k in keep]
    elif limit is not None:
        out = out[:limit]
    return out


_CONCEPT_CACHE: dict[tuple[str, bool], tuple[Any, tuple[str, ...]]] = {}


def _concepts_cached(calc: Calculator, required_only: bool) -> tuple[str, ...]:
    hit = _CONCEPT_CACHE.get((calc.id, required_only))
    if hit is not None and hit[0] is calc.inputs:
        return hit[1]
    seen: dict[str, str] = {}
    for i in calc.inputs:
        if required_only and i.optional:
            continue
        t = re.sub(r"\s*\([^)]*\)", "", i.label).strip()
        t = re.split(r"[,:;]", t)[0].strip()
        if not t or _CONCEPT_DROP.search(t) or has_calc_name(t) or len(normalize_name(t).split()) > 6:
            continue
        seen.setdefault(normalize_name(t), lower_label(t))
    res = tuple(seen.values())
    _CONCEPT_CACHE[(calc.id, required_only)] = (calc.inputs, res)
    return res


def specific_tags(calc: Calculator) -> list[str]:
    return list(_specific_tags(calc.id, calc.tags))


@lru_cache(maxsize=4096)
def _specific_tags(calc_id: str, tags_in: tuple[str, ...]) -> tuple[str, ...]:
    g = load_grammar()
    generic = {normalize_name(t) for t in g.generic_tags}
    tags = [t for t in tags_in if normalize_name(t) not in generic and not has_calc_name(t)]
    return tuple(lower_label(t) for t in tags)


def calc_kind(calc: Calculator) -> str:
    """score | risk | grade | screen | quantity | dose | category: how the clinician would ask for it."""
    text = " ".join([b.label for b in calc.bands] + [calc.output.label] + list(calc.tags)).lower()
    unit = (calc.output.unit or "").lower()
    if calc.output.type == "category":
        return "grade" if re.search(r"stage|grade|class|severity", text) else "category"
    if re.search(r"dos|infusion|rate|units", " ".join(calc.tags).lower() + " " + unit) and unit not in ("points",):
        return "dose"
    if unit in ("points", "criteria") or (calc.output.type == "integer" and not unit):
        if re.search(r"risk|mortality|survival|probability", text):
            return "risk"
        if re.search(r"delirium|screen|positive|present|likely|unlikely", text):
            return "screen"
        if re.search(r"sever|stage|grade|class|depend|impair", text):
            return "grade"
        return "score"
    if re.search(r"risk|probability|mortality", text) and unit in ("%", "percent"):
        return "risk"
    return "quantity"


def output_phrase(calc: Calculator) -> str | None:
    """The output's label in words, or None when it is (or contains) a calculator name."""
    lab = re.sub(r"\s*\([^)]*\)", "", calc.output.label).strip()
    if not lab or has_calc_name(lab) or re.search(r"[0-9]", lab) or normalize_name(lab) in {"result", "score", "points"}:
        return None
    return lower_label(lab)


@lru_cache(maxsize=4096)
def _decision_pool(calc_id: str, tags: tuple[str, ...]) -> tuple[str, ...]:
    g = load_grammar()
    keys = [normalize_name(t) for t in tags]
    out: list[str] = []
    for k, phrases in g.decisions.items():
        nk = normalize_name(k)
        if any(nk == t or nk in t.split() for t in keys):
            out += phrases
    return tuple(out)


def decisions_for(calc: Calculator, rng: random.Random) -> str:
    pool = _decision_pool(calc.id, tuple(calc.tags))
    if not pool:
        return pick("decision_generic", rng)
    return expand(rng.choice(pool), {}, rng)


def need_phrase(calc: Calculator, rng: random.Random, *, concepts: int = 4, used: set[str] | None = None) -> str:
    """What the clinician needs from ``calc`` without naming it: kind, topic, inputs in clinical words."""
    kind = calc_kind(calc)
    tags = specific_tags(calc)
    slots: dict[str, str] = {}
    if tags:
        slots["topic"] = rng.choice(tags[:3])
    cs = input_concepts(calc, concepts, rng)
    if cs:
        slots["concepts"] = _join(cs)
    out = output_phrase(calc)
    if out:
        slots["what"] = out
    pool = f"need_{kind}"
    text = pick(pool, rng, slots, used=used)
    if "{" in text or has_calc_name(text):
        text = pick("need_fallback", rng, {k: v for k, v in slots.items() if k == "topic"} or {"topic": "this problem"})
    return text


# -- question ---------------------------------------------------------------------------------------
def _age_words(view: TaskView, rng: random.Random) -> str:
    a, sex = view.age_years, view.sex
    noun = {"male": ["man", "gentleman"], "female": ["woman", "lady"]}.get(sex or "", ["patient", "patient"])
    pron = {"male": "his", "female": "her"}.get(sex or "", "their")
    if a is None:
        adj = rng.choice(["an adult", "a"] if sex else ["a"])
        return f"{adj} {rng.choice(noun)}".replace("an adult patient", "an adult patient")
    if a < 1 / 12:
        return rng.choice(["a newborn", "a neonate", "a baby in the first weeks of life"]) + (
            f" {'boy' if sex == 'male' else 'girl'}" if sex and rng.random() < 0.5 else "")
    if a < 1:
        return rng.choice(["an infant", "a baby", "a young infant"]) + (
            f" {'boy' if sex == 'male' else 'girl'}" if sex and rng.random() < 0.4 else "")
    if a < 3:
        return rng.choice(["a toddler", "a young child"])
    if a < 5:
        return f"a {'boy' if sex == 'male' else 'girl' if sex == 'female' else 'child'} of pre-school age"
    if a < 13:
        return f"a {'boy' if sex == 'male' else 'girl' if sex == 'female' else 'child'} of primary-school age"
    if a < 18:
        return rng.choice(["a teenager", "an adolescent"]) + (f" ({'boy' if sex == 'male' else 'girl'})" if sex and False else "")
    decades = {1: "late teens", 2: "twenties", 3: "thirties", 4: "forties", 5: "fifties", 6: "sixties", 7: "seventies",
               8: "eighties", 9: "nineties", 10: "hundreds", 11: "hundreds"}
    d = decades[min(int(a // 10), 11)]
    early = ["early ", "mid-", "late "][min(int(a % 10) // 4, 2)] if d not in ("late teens",) and rng.random() < 0.5 else ""
    n = rng.choice(noun)
    forms = [f"a {n} in {pron} {early}{d}", f"{'an' if early == '' and d[0] in 'aeiou' else 'a'} {early}{d}-something {n}"
             if not early else f"a {n} in {pron} {early}{d}"]
    if a >= 75:
        forms.append(f"an elderly {n}" if n != "patient" else "an elderly patient")
    if 18 <= a < 40:
        forms.append(f"a young {n}")
    return rng.choice(forms)


def _findings_words(view: TaskView, rng: random.Random) -> list[str]:
    g = load_grammar()
    out: list[str] = []
    keys = getattr(view, "_finding_keys", {})
    for spec in g.findings.values():
        hit = next((keys[k] for k in spec.keys if k in keys), None)
        if hit:
            out.append(rng.choice(spec.low_words if hit == "low" else spec.high_words))
    rng.shuffle(out)
    return out


def _setting(view: TaskView, rng: random.Random) -> str:
    g = load_grammar()
    if view.age_years is not None and view.age_years < 16 and "paediatric" in g.settings:
        return rng.choice(g.settings["paediatric"] + [x for x in g.settings.get(view.domain, []) if "neonatal" in x])
    opts = list(g.settings.get(view.domain) or g.settings["default"])
    if view.age_years is None or view.age_years >= 16:
        opts = [x for x in opts if not re.search(r"paediatric|neonatal|children", x)] or opts
    if view.sex == "male" or (view.age_years is not None and view.age_years < 16):
        opts = [x for x in opts if "antenatal" not in x] or opts
    return rng.choice(opts)


def _dedupe_sentences(text: str) -> str:
    """Drop a sentence already said earlier in the text (independently drawn clauses can repeat)."""
    seen: set[str] = set()
    paras = []
    for para in text.split("\n\n"):
        keep = []
        for sent in re.split(r"(?<=[.?!])\s+", para):
            key = normalize_name(sent)
            if key and key in seen:
                continue
            seen.add(key)
            keep.append(sent)
        if keep:
            paras.append(" ".join(keep))
    return "\n\n".join(paras)


def _context_phrase(view: TaskView) -> str:
    """The scenario's presentation without its leading noun: "with acute chest pain in the ED"."""
    ctx = view.context.strip()
    m = re.match(r"^(?:an?|the)\s+(?:[\w-]+\s+){0,3}?(?:patient|adult|child|infant|newborn|neonate|woman|man|"
                 r"outpatient|inpatient|person)s?\b\s*(.*)$", ctx, re.I)
    rest = m.group(1).strip() if m else ""
    if rest and not has_calc_name(rest) and not re.search(r"\d", rest):
        return rest
    return ""


def _concern_topic(view: TaskView) -> str:
    t = view.scenario.strip()
    if not t or has_calc_name(t) or re.search(r"\d", t):
        return lower_label(view.specialty) if view.specialty else "the overall picture"
    return lower_label(t)


def question(task: Any, rng: random.Random) -> str:
    """A clinician's request for ``task``: presentation, concern, decisions, in varied words."""
    return question_from_view(task_view(task), rng)


def question_from_view(view: TaskView, rng: random.Random) -> str:
    g = load_grammar()
    setting = _setting(view, rng)
    slots: dict[str, str] = {"who": _age_words(view, rng), "setting": setting, "setting_cap": _cap(setting),
                             "topic": _concern_topic(view)}
    ctx = _context_phrase(view)
    if ctx:
        slots["presentation"] = ctx
    if view.history:
        hist = list(view.history)
        rng.shuffle(hist)
        slots["history"] = _join(hist[: rng.randint(1, min(3, len(hist)))])
    fw = _findings_words(view, rng)
    if fw:
        slots["findings"] = _join(fw[: rng.randint(1, min(3, len(fw)))])
    paras: list[str] = []
    # 1. presentation
    intro = compose_parts(_q_parts(g, "q_intro"), slots, rng, g)
    paras.append(intro)
    # 2. the requests, in workflow order
    branch = view.branch
    arm_ids = set((branch or {}).get("then", []) + (branch or {}).get("else", [])) if branch else set()
    fed = {dst: src for src, dst, _ in view.feeds}
    sentences: list[str] = []
    used: set[str] = set()
    first = True
    order = [c for c in view.calcs if c.calc.id not in arm_ids]
    for cv in order:
        s = {"need": need_phrase(cv.calc, rng, used=used), "decision": decisions_for(cv.calc, rng)}
        if first:
            pool = "q_first"
        elif cv.calc.id in fed and view.by_id(fed[cv.calc.id]) is not None:
            pool = "q_feed"
            s["prev"] = rng.choice(["that result", "that number", "that figure", "the value from that step",
                                    "what comes out of it", "that output"])
        else:
            pool = "q_next"
        sent = pick(pool, rng, s, used=used)
        if rng.random() < 0.75:
            sent = sent.rstrip(".?") + ", " + pick("q_purpose", rng, s, used=used) + "."
        sentences.append(_cap(sent))
        first = False
        if branch and cv.calc.id == branch.get("decider"):
            sentences.append(_branch_sentence(view, branch, rng))
    # two request paragraphs
    cut = max(1, len(sentences) // 2 + rng.randint(-1, 1))
    paras.append(_tidy(" ".join(sentences[:cut])))
    if sentences[cut:]:
        paras.append(_tidy(" ".join(sentences[cut:])))
    # 3. the ask and the constraints
    close = compose_parts(_q_parts(g, "q_close"), slots, rng, g)
    # 4. length: the benchmark's requests run to a few hundred words; add context sentences up to a target
    target = rng.randint(310, 420)
    extras = list(g.pools["q_extra"])
    rng.shuffle(extras)
    words = sum(len(p.split()) for p in paras) + len(close.split())
    k = 0
    while words < target and k < len(extras) and k < 6:
        sent = extras[k]
        where = rng.choice([0, len(paras) - 1]) if len(paras) > 1 else 0
        paras[where] = paras[where] + " " + sent
        words += len(sent.split())
        k += 1
    paras.append(close)
    return _dedupe_sentences("\n\n".join(p for p in paras if p))


def _q_parts(g: Grammar, name: str) -> list[Part]:
    """Question sections are pools of pools: ``<name>_<k>`` for k = 1.. are its clause positions."""
    parts = []
    k = 1
    while f"{name}_{k}" in g.pools:
        alts = g.pools[f"{name}_{k}"]
        p = 1.0
        if alts and alts[0].startswith("p="):
            p = float(alts[0][2:])
            alts = alts[1:]
        parts.append(Part(p=p, alts=alts))
        k += 1
    return parts


def _branch_sentence(view: TaskView, branch: Mapping[str, Any], rng: random.Random) -> str:
    from calcmate.synth.fuzzy import clean_label

    then_ids, else_ids = list(branch.get("then", [])), list(branch.get("else", []))
    reg = _registry()
    then_need = _join([need_phrase(reg.get(i), rng, concepts=3) for i in then_ids])
    label = clean_label(str(branch.get("then_label") or ""))
    label = re.split(r"[:;(]", label)[0].strip()
    s: dict[str, str] = {"then_need": then_need}
    if label and not re.search(r"\d", label) and not has_calc_name(label) and label not in ("abnormal",):
        s["label"] = label
    if else_ids:
        s["else_need"] = _join([need_phrase(reg.get(i), rng, concepts=3) for i in else_ids])
        return _cap(pick("q_branch_both", rng, s))
    return _cap(pick("q_branch_skip", rng, s))


# -- plan -------------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _table_keywords() -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((t, tuple(f" {normalize_name(k)} " for k in kws)) for t, kws in load_grammar().tables.items())


@lru_cache(maxsize=8192)
def _table_for(concept: str) -> str:
    c = f" {normalize_name(concept)} "
    for table, kws in _table_keywords():
        if any(k in c for k in kws):
            return table
    return "admission_record"


def _group_inputs(calc: Calculator) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for c in input_concepts(calc, required_only=False):
        groups.setdefault(_table_for(c), []).append(c)
    return groups


def plan_text(task: Any, rng: random.Random) -> str:
    """The global plan: goal, steps with inputs by concept and table, dependencies, branch logic."""
    view = task_view(task)
    reg = _registry()
    g = load_grammar()
    branch = view.branch
    arm_ids = set((branch or {}).get("then", []) + (branch or {}).get("else", [])) if branch else set()
    lines: list[str] = []
    s0 = {"topic": _concern_topic(view), "n": str(len(task.calculator_answers) or len(view.calcs))}  # the ones executed
    lines.append(_cap(pick("plan_goal", rng, s0)))
    lines.append(_cap(pick("plan_approach", rng, s0)))
    lines.append("")
    lines.append(rng.choice(["Steps:", "Plan:", "Step-by-step plan:", "Order of work:", "Workflow:"]))
    step_no: dict[str, int] = {}
    n = 0
    retrieved: dict[str, str] = {}  # concept -> calc name that first needs it
    fed = {dst: (src, q) for src, dst, q in view.feeds}

    def step_text(cv: CalcView) -> str:
        calc = cv.calc
        parts = [f"**{calc.name}**: " + _cap(pick("plan_why", rng, {"decision": decisions_for(calc, rng)}))]
        groups = _group_inputs(calc)
        fresh_bits, reused = [], []
        for table, cs in groups.items():
            new = [c for c in cs if normalize_name(c) not in retrieved]
            old = [c for c in cs if normalize_name(c) in retrieved]
            if new:
                fresh_bits.append(f"{_join(new)} ({pick('plan_where', rng, {'table': table})})")
            reused += old
            for c in new:
                retrieved.setdefault(normalize_name(c), calc.name)
        if fresh_bits:
            parts.append(_cap(pick("plan_inputs", rng, {"inputs": "; ".join(fresh_bits)})))
        if reused:
            src = retrieved[normalize_name(reused[0])]
            parts.append(_cap(pick("plan_reuse", rng, {"inputs": _join(reused), "src": src})))
        if calc.id in fed:
            src, q = fed[calc.id]
            sc = reg.find(src)
            if sc is not None:
                qlab = lower_label(calc.input(q).label) if q else "input"
                parts.append(_cap(pick("plan_feed", rng, {"src": sc.name, "quantity": qlab,
                                                          "k": str(step_no.get(src, "an earlier step"))})))
        if not input_concepts(calc) and not fresh_bits:
            parts.append(_cap(pick("plan_no_inputs", rng)))
        measured = [c for t, cs in groups.items() if t in ("vital_signs", "laboratory_result") for c in cs]
        if measured:
            rule = _selection_rule(calc)
            parts.append(_cap(pick("plan_select", rng, {"concepts": _join(measured[:3]), "rule": pick(f"rule_{rule}", rng)})))
        out_slots = {"what": output_phrase(calc) or "calculated result", "unit": calc.output.unit or "no unit"}
        parts.append(_cap(pick("plan_output", rng, out_slots)))
        later = [d for s_, d, _ in view.feeds if s_ == calc.id] + (
            [b for b in [branch.get("decider")] if branch and b == calc.id] if branch else [])
        if later:
            parts.append(_cap(pick("plan_carry", rng)))
        if rng.random() < 0.5:
            parts.append(_cap(pick("plan_reference", rng)))
        return " ".join(parts)

    for cv in view.calcs:
        if cv.calc.id in arm_ids:
            continue
        n += 1
        step_no[cv.calc.id] = n
        lines.append(f"{n}. {step_text(cv)}")
        if branch and cv.calc.id == branch.get("decider"):
            n += 1
            lines.append(f"{n}. {_plan_branch(view, branch, rng, step_no)}")
            for i in list(branch.get("then", [])) + list(branch.get("else", [])):
                arm_cv = view.by_id(i)
                if arm_cv is not None:
                    tag = "if the branch goes this way" if i in branch.get("then", []) else "on the other arm"
                    lines.append(f"   - ({tag}) {step_text(arm_cv)}")
    lines.append("")
    lines.append(_cap(pick("plan_rules", rng)))
    lines.append(_cap(pick("plan_parallel", rng)))
    lines.append(_cap(pick("plan_finish", rng, s0)))
    return "\n".join(_tidy(l) if not l.startswith(("   -", "**")) and l else l for l in lines).strip()




def _selection_rule(calc: Calculator) -> str:
    """Which row of a repeated measurement the plan uses for this calculator: the most recent, which
    is what the teacher's execution reads (a plan must not promise a rule the execution does not follow;
    an input that names another time point says so where it is read)."""
    return "most_recent"


def _plan_branch(view: TaskView, branch: Mapping[str, Any], rng: random.Random, step_no: Mapping[str, int]) -> str:
    reg = _registry()
    d = reg.get(branch["decider"])
    then = _join([reg.get(i).name for i in branch.get("then", [])]) or "no further calculator"
    other = _join([reg.get(i).name for i in branch.get("else", [])])
    from calcmate.synth.fuzzy import clean_label

    if branch.get("op") == "==":
        cond = f"{d.name} comes out as \"{branch['threshold']}\""
    else:
        unit = f" {d.output.unit}" if d.output.unit else ""
        lab = clean_label(str(branch.get("then_label") or ""))
        cond = f"{d.output.label} is ≥ {float(branch['threshold']):g}{unit}" + (f" ({lab})" if lab and lab != "abnormal" else "")
    s = {"decider": d.name, "cond": cond, "then": then, "k": str(step_no.get(d.id, ""))}
    if other:
        s["other"] = other
    return "**Branch**: " + _cap(pick("plan_branch" if other else "plan_branch_skip", rng, s))


# -- final prose ------------------------------------------------------------------------------------
def _result_items(task: Any, results: Any) -> list[dict[str, Any]]:
    reg = _registry()
    items: list[dict[str, Any]] = []
    if results is None:
        results = task.calculator_answers
    if isinstance(results, Mapping):
        results = [{"name": k, "value": v} for k, v in results.items()]
    for r in results:
        if isinstance(r, Mapping):
            d = dict(r)
        else:
            d = {"name": getattr(r, "name", ""), "value": getattr(r, "final_answer", getattr(r, "value", None)),
                 "unit": getattr(r, "unit", None), "interpretation": getattr(r, "interpretation", None),
                 "calculator_id": getattr(r, "calculator_id", None)}
        if "value" not in d and "final_answer" in d:
            d["value"] = d["final_answer"]
        calc = (reg.find(d["calculator_id"]) if d.get("calculator_id") else None) or reg.find(str(d.get("name", "")))
        if calc is not None:
            d.setdefault("calculator_id", calc.id)
            if not d.get("unit"):
                d["unit"] = calc.output.unit
            if not d.get("interpretation"):
                try:
                    d["interpretation"] = calc.interpret(d["value"])
                except Exception:  # noqa: BLE001
                    d["interpretation"] = None
            d["calc"] = calc
        items.append(d)
    return items


def _fmt_value(v: Any, unit: str | None) -> str:
    if isinstance(v, float):
        v = f"{v:g}"
    elif isinstance(v, (list, tuple)):
        v = ", ".join(str(x) for x in v)
    u = (unit or "").strip()
    if not u or u.lower() in ("none",):
        return str(v)
    return f"{v} {u}"


_SEVERE = re.compile(r"\b(high|severe|very|critical|major|significant|poor|markedly|elevated|positive|stage 3|class c|"
                     r"dependen|likely|intermediate|moderate)", re.I)


def final_prose(task: Any, results: Any, rng: random.Random) -> str:
    """Closing prose: every value with unit and interpretation, then the synthesis and the plan."""
    items = _result_items(task, results)
    view = task_view(task)
    lines = [_cap(pick("final_intro", rng, {"topic": _concern_topic(view)}))]
    concerning: list[str] = []
    used: set[str] = set()
    for it in items:
        interp = it.get("interpretation")
        s = {"name": str(it.get("name")), "value": _fmt_value(it.get("value"), it.get("unit"))}
        if interp:
            s["interp"] = str(interp).rstrip(".")
            if _SEVERE.search(str(interp)):
                concerning.append(str(it.get("name")))
        calc = it.get("calc")
        if calc is not None:
            s["decision"] = decisions_for(calc, rng)
        lines.append("- " + _cap(pick("final_item" if interp else "final_item_plain", rng, s, used=used)))
    lines.append("")
    syn: list[str] = []
    branch = view.branch
    if branch:
        reg = _registry()
        taken = branch.get("taken")
        dname = reg.get(branch["decider"]).name
        arm = list(branch.get("then" if taken == "then" else "else", []))
        s = {"decider": dname, "arm": _join([reg.get(i).name for i in arm]) or "no additional calculator"}
        syn.append(pick("final_branch", rng, s))
    if concerning:
        syn.append(pick("final_concern", rng, {"names": _join(concerning[:4]), "topic": _concern_topic(view)}))
    else:
        syn.append(pick("final_reassure", rng, {"topic": _concern_topic(view)}))
    syn.append(pick("final_plan", rng, {"topic": _concern_topic(view)}))
    if rng.random() < 0.6:
        syn.append(pick("final_caveat", rng))
    lines.append(_tidy(" ".join(_cap(x) for x in syn)))
    return "\n".join(lines).strip()


def view_from_workflow(wf: Any, reg: Any = None, patient: Any = None) -> TaskView:
    """A TaskView for a composed ``Workflow`` (and its sampled ``Patient``, when known), for writers that
    run before the ``Task`` exists."""
    from calcmate.tasks import CalcAnswer, CalcInput, Task

    reg = reg or _registry()
    plan = wf.to_plan()
    answers: list[CalcAnswer] = []
    if patient is not None:
        from calcmate.synth.sampler import display_value

        plan["executed"] = list(patient.executed)
        for b in plan["branches"]:
            b["taken"] = patient.arms.get(b["decider"])
        for k, cid in enumerate(patient.executed, 1):
            calc = reg.get(cid)
            inputs = [CalcInput(field=calc.input(key).label, value=display_value(calc, key, raw))
                      for key, raw in patient.values.get(cid, {}).items()]
            res = patient.results.get(cid)
            answers.append(CalcAnswer(order=k, name=calc.name, inputs=inputs, calculator_id=cid,
                                      final_answer=getattr(res, "value", None)))
    task = Task(task_id="view", task_scenario=wf.category.name, task_category=wf.category.task_category,
                fuzzy_question="", calculator_answers=answers, plan=plan)
    view = task_view(task)
    if not view.context:
        view.context = wf.category.context
    return view
