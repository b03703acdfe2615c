"""The scripted teacher: the evaluator's oracle policy, speaking as a clinician-engineer would.

The tool calls, the SQL, the values read from the results and the programs are the oracle's
(``calcmate.agent.oracle``): every value comes from a tool result, every number from a program
generated from the registry's source. The teacher changes only the language and adds what a careful
agent does:

* the global plan (goals, inputs by concept, dependencies, branch rules) opens the first tool-calling
  turn, beside the first calls, which go out in parallel where the protocol allows;
* thoughts composed from the grammar (``calcmate.synth.grammar``): why this tool, which row is used and
  by which rule, what the reference needs, what each result means and which branch it triggers;
* searches phrased as a clinician would type them (an alias or what the score estimates, not the
  registry's canonical name), reading the hit list and searching again when the reference is not in it;
* in a share of trajectories (``recovery_rate``), a realistic mistake and its repair through the real
  tools: a guessed column (error -> describe_tables -> corrected query) or an exact-match filter
  (empty -> broadened);
* a closing answer that gives each value with its unit and meaning and answers the clinical ask.
"""

from __future__ import annotations

import random
import re
from typing import Any

from calcmate.agent.episode import EpisodeState
from calcmate.agent.oracle import CalcWork, OraclePolicy, Reading, SqlStep
from calcmate.calculators.registry import registry
from calcmate.synth import grammar as gr
from calcmate.synth.composer import branch_from_dict

RULES = {"most_recent": "most_recent", "earliest": "admission", "only": "single"}
_GENERIC = {"stage", "score", "points", "grade", "category", "class", "risk", "result", "calculated result",
            "risk score", "total score", "risk category", "percentile"}


class ScriptedTeacher(OraclePolicy):
    name = "teacher:scripted"

    def __init__(self, recovery_rate: float = 0.15, seed: int = 0):
        super().__init__()
        self.recovery_rate, self.seed = recovery_rate, seed

    async def start(self, state: EpisodeState) -> None:
        await super().start(state)
        self.rng = random.Random(f"{self.seed}:{state.task.task_id}")
        self.task = state.task
        # at most one staged mistake per trajectory, on one query, with probability recovery_rate
        self._recover_sql = None
        if self.steps and self.rng.random() < self.recovery_rate:
            st = self.rng.choice(self.steps)
            if "test_result" not in st.sql:
                self.rng.random()  # kept: the draw sequence (and so every synthesized set) stays as it was
            # a guessed column where there is a lab column to misname or no pattern to narrow, else a too-exact filter
            kind = "empty" if "test_result" not in st.sql and "ILIKE" in st.sql else "column"
            self._recover_sql = (st.sql, kind)

    # -- language -----------------------------------------------------------------------------------------
    def plan_text(self, state: EpisodeState) -> str:
        return gr.plan_text(state.task, self.rng)

    def search_query(self, work: CalcWork) -> str:
        """What a clinician would type: mostly what the score does or estimates, sometimes a short
        alias or abbreviation, rarely the full name."""
        calc = work.calc
        if calc is None:
            return work.answer.name
        what = gr.output_phrase(calc)
        if what and (len(what.split()) < 2 or what.lower() in _GENERIC):  # "stage", "score": nothing to search by
            what = None
        tags = gr.specific_tags(calc)
        short = [a for a in calc.aliases if len(a) <= 24 and not re.search(r"\(\d{4}\)", a)
                 and a.lower() != calc.name.lower()]
        pools = []
        if what:
            pools.append((0.55, [what, f"{what} calculator", f"{what} score formula", f"how to calculate {what}"]))
        if tags:
            pools.append((0.2, [" ".join(tags[:3]), " ".join(tags[:2]) + " score", " ".join(tags[:3]) + " criteria"]))
        if short:
            pools.append((0.2, short))
        pools.append((0.05, [calc.name]))
        r, acc = self.rng.random() * sum(w for w, _ in pools), 0.0
        for w, options in pools:
            acc += w
            if r <= acc:
                return self.rng.choice(options)
        return calc.name

    def say(self, kind: str, **s: Any) -> str:
        w: CalcWork | None = s.get("work")
        calc = w.calc if w is not None else None
        try:
            if kind == "explore_schema":
                return gr.thought("explore_schema", {"goal": _goal(self.task), "n_tables": s.get("n_tables")}, self.rng)
            if kind == "describe_tables":
                return gr.thought("describe_tables", {"tables": s["tables"]}, self.rng)
            if kind == "search":
                return gr.thought("search", {"concept": s["name"]}, self.rng)
            if kind == "search_again":
                return gr.thought("search", {"concept": s["name"], "prev": "the last search"}, self.rng)
            if kind == "pick_hit" and s.get("n_hits") == 1:
                title = calc.name if calc else s["name"]
                return self.rng.choice([
                    f"The search returned a single hit, {title}, and its snippet fits what I need; opening it.",
                    f"Only one result came back: {title}. It is the reference I want, so I'll read it.",
                    f"One hit, {title}; the snippet matches this step, so I fetch it."])
            if kind == "pick_hit":
                slots = {"title": calc.name if calc else s["name"], "position": s.get("position") or 1}
                if (s.get("position") or 1) > 1 and s.get("top_title"):
                    slots["top_title"] = s["top_title"]
                return gr.thought("pick_hit", slots, self.rng)
            if kind in ("retrieve", "retrieve_guess", "retrieve_narrow", "retrieve_corrected"):
                return gr.thought("retrieve", {"concepts": s.get("fields") or "the inputs", "table": s.get("tables") or "the EHR",
                                               "calc": s.get("name")}, self.rng)
            if kind == "retrieve_parallel":
                return gr.thought("parallel", {"calls": f"{s['n']} queries on {s['tables']}", "n": s["n"]}, self.rng) + " " + \
                    gr.thought("retrieve", {"concepts": s.get("fields") or "the inputs", "table": s.get("tables") or "the EHR",
                                            "calc": s.get("name")}, self.rng)
            if kind == "recover_error":
                return gr.thought("recover_error", {"table": s["tables"], "error": s.get("error")}, self.rng)
            if kind == "recover_empty":
                return gr.thought("recover_empty", {"concept": s.get("fields") or "the inputs", "table": s.get("tables")}, self.rng)
            if kind == "compute":
                return self._compute_thought(s["work"])
        except (KeyError, ValueError):
            pass
        return super().say(kind, **s)

    def _compute_thought(self, w: CalcWork) -> str:
        parts = []
        for r in w.readings:
            t = self._reading_thought(r, w)
            if t:
                parts.append(t)
        conv = _conversions(w)
        slots = {"calc": w.calc.name, "inputs": ", ".join(r.field for r in w.readings[:6])}
        if conv:
            slots["conversion"] = conv
        parts.append(gr.thought("compute", slots, self.rng))
        return " ".join(parts)

    def _reading_thought(self, r: Reading, w: CalcWork) -> str:
        if r.how == "default":
            return gr.thought("missing_default", {"concept": r.field, "default": str(r.value), "calc": w.calc.name}, self.rng)
        if r.how == "fed":
            return f"{r.field} is the {r.source} result computed above: {r.value}."
        if r.how != "row" or r.n_rows <= 1:
            return ""
        rule = RULES.get(r.rule)
        value = r.value
        if rule is None:  # a value measured at a stated time, neither the newest nor the first
            return self.rng.choice([
                f"{r.n_rows} {r.field} results are on file. This input asks for an earlier time point than the "
                f"latest, so I use the measurement of {r.time}: {value}{' ' + r.unit if r.unit else ''}.",
                f"For {r.field} the input refers to an earlier measurement, not the newest of the {r.n_rows} rows: "
                f"{value}{' ' + r.unit if r.unit else ''} at {r.time}."])
        return gr.thought("select_value", {"rule": rule, "concept": r.field, "value": value, "unit": r.unit or None,
                                           "time": r.time or None, "n_rows": r.n_rows}, self.rng)

    def after_fetch(self, state: EpisodeState, work: CalcWork) -> None:
        if work.calc is None:
            return
        try:
            inputs = ", ".join(gr.input_concepts(work.calc, limit=5, rng=self.rng))
            self.note = gr.thought("fetch_read", {"calc": work.calc.name, "inputs": inputs or None}, self.rng)
        except (KeyError, ValueError):
            self.note = ""

    def after_result(self, state: EpisodeState, work: CalcWork, index: int) -> None:
        calc, value = work.calc, work.value
        interp = None
        try:
            interp = calc.interpret(value)
        except Exception:  # noqa: BLE001 - a value the bands do not cover
            pass
        nxt = next((x.calc.name for x in self.works[index + 1:] if x.calc is not None), None)
        slots = {"calc": calc.name, "value": value, "unit": calc.output.unit or None, "interpretation": interp, "next": nxt}
        text = gr.thought("result", slots, self.rng)
        for b in self._branches(calc.id):
            text += " " + b
        self.note = text

    def _branches(self, cid: str) -> list[str]:
        out = []
        reg = registry()
        for bd in (self.task.plan or {}).get("branches", []):
            if bd.get("decider") != cid:
                continue
            b = branch_from_dict(bd)
            w = next(x for x in self.works if x.calc is not None and x.calc.id == cid)
            arm = b.arm(w.value)
            chosen = b.then if arm == "then" else b.else_
            other = b.else_ if arm == "then" else b.then
            names = lambda ids: " and ".join(reg.get(i).name for i in ids)  # noqa: E731
            slots = {"calc": w.calc.name, "value": w.value, "threshold": f"{b.op} {b.threshold}" if b.op != ">=" else b.threshold,
                     "arm": arm, "chosen": names(chosen) if chosen else "none", "unit": w.calc.output.unit or None}
            if other:
                slots["other"] = names(other)
            src = bd.get("source") or bd.get("citation")
            if src:
                slots["source"] = src
            out.append(gr.thought("branch", slots, self.rng))
        return out

    def sql_text(self, step: SqlStep) -> str:
        return vary_sql(step.sql, self.rng)

    def recovery_planned(self, step: SqlStep) -> bool:
        return bool(self._recover_sql and self._recover_sql[0] == step.sql)

    def recovery(self, state: EpisodeState, step: SqlStep) -> str | None:
        if not self.recovery_planned(step):
            return None
        kind, self._recover_sql = self._recover_sql[1], None
        return kind

    def final_text(self, state: EpisodeState, works: list[CalcWork]) -> str:
        done = [{"name": w.calc.name, "value": w.value, "unit": w.calc.output.unit, "calculator_id": w.calc.id}
                for w in works if w.computed]
        text = gr.final_prose(state.task, done, self.rng) if done else ""
        missing = [w for w in works if not w.computed]
        if missing:
            text += "\n\n" + " ".join(f"{w.answer.name} could not be computed: {w.reason}." for w in missing)
        return text.strip()


_ILIKE_OR = re.compile(r"\(\s*(\w+(?:\.\w+)?) ILIKE ('[^']*')((?:\s+OR\s+\1 ILIKE '[^']*')+)\s*\)", re.I)


def vary_sql(sql: str, rng: random.Random) -> str:
    """The same query in another idiomatic PostgreSQL wording: the rows and columns it returns are
    unchanged (the teacher reads values by column and by time, not by row order), only the way a
    person might write it differs (a table alias, ``ANY(ARRAY[...])`` for an OR of patterns,
    ``LOWER(x) LIKE``, ``IN (...)`` for the patient, ``NULLS LAST``, a generous ``LIMIT``)."""
    out = sql
    if rng.random() < 0.4:
        m = _ILIKE_OR.search(out)
        if m:
            pats = [m.group(2)] + re.findall(r"ILIKE ('[^']*')", m.group(3))
            out = out[:m.start()] + f"{m.group(1)} ILIKE ANY (ARRAY[{', '.join(pats)}])" + out[m.end():]
    if rng.random() < 0.3:
        out = re.sub(r"\b(\w+) ILIKE '([^'A-Z]*)'", lambda m: f"LOWER({m.group(1)}) LIKE '{m.group(2)}'", out, count=1)
    if rng.random() < 0.35:
        out = re.sub(r"\bpatient_id = ('[^']+')", r"patient_id IN (\1)", out, count=1)
    if rng.random() < 0.35:
        m = re.search(r"\bFROM (\w+)(\s+WHERE\b)", out)
        if m and " JOIN " not in out.upper():
            alias = "".join(w[0] for w in m.group(1).split("_"))
            out = out[:m.start()] + f"FROM {m.group(1)} AS {alias}" + m.group(2) + out[m.end():]
    if rng.random() < 0.3 and re.search(r"\bDESC\b(?!\s+NULLS)", out):
        out = re.sub(r"\bDESC\b(?!\s+NULLS)", "DESC NULLS LAST", out)
    if rng.random() < 0.3 and not re.search(r"\bLIMIT\b", out, re.I):
        out = out.rstrip().rstrip(";") + f" LIMIT {rng.choice((50, 100, 200))}"
    return out


def _goal(task: Any) -> str:
    cat = (task.plan or {}).get("category") or "this patient's assessment"
    return f"the {cat.lower()} work-up"


def _conversions(w: CalcWork) -> str:
    """Inputs whose unit the program converts, said as such ("creatinine from µmol/L")."""
    out = []
    for r in w.readings:
        if r.how == "row" and r.unit:
            spec = next((i for i in w.calc.inputs if r.field.lower() in [n.lower() for n in i.names()]), None)
            unit = getattr(spec, "unit", None) if spec is not None else None
            if unit and unit.replace(" ", "") != r.unit.replace(" ", ""):
                out.append(f"{r.field} from {r.unit} to {unit}")
    return "; ".join(out)
