"""The verifier can say no: a mutation suite over trajectories from real synthesis.

Clean trajectories come from the real thing: composed offline tasks, patients materialized into the
embedded PostgreSQL, the scripted teacher run through the real episode loop and MCP tools. Each
mutation then breaks one thing a trajectory must get right, the way a careless teacher would:

* ``print_answer``: one ``run_python`` program replaced by ``print(<answer>)`` (its observation is
  what that program prints); ``print_answer_all``: every program so;
* ``ignore_inputs``: a program keeps its input assignments but prints the answer as a constant;
* ``ungrounded_input``: a program's input changed to a number no tool result shows (re-run in the
  sandbox, so its observation is what the changed program prints);
* ``wrong_branch``: the execution follows the arm the rule did not select;
* ``skip_reference`` / ``skip_calculator``: the plan lists a step the execution skipped (one
  calculator's reference lookup; one calculator entirely, its final entry kept);
* ``missing_value`` / ``drop_entry``: the final answer omits a computed value.

Every mutation must be rejected (100%), for the reason that names it; every clean trajectory must
pass (100%); and the feedback a retried model would get never carries a name, value or result.
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from calcmate.agent.episode import run_episode
from calcmate.agent.final_answer import OPEN, write_final_answer
from calcmate.agent.protocols import NativeProtocol
from calcmate.agent.trajectory import Trajectory
from calcmate.calculators.registry import registry
from calcmate.synth.build import TaskCreationError, offline_task
from calcmate.synth.composer import branch_from_dict
from calcmate.synth.pipeline import strip_fed_inputs
from calcmate.synth.scripted import ScriptedTeacher
from calcmate.synth.taxonomy import load_taxonomy
from calcmate.synth.teacher import feedback_leaks
from calcmate.synth.verify import PROCESS_FEEDBACK, REASONS, data_literals, default_runner, python_stdout, verify

pytest.importorskip("calcmate.ehr.materialize", reason="the patient materializer has not landed")

N_TASKS = 10
SQL = ("run_sql", "run_read_only_sql")
NUM = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?")


@pytest.fixture(scope="module")
def clean(ehr_db, toolbox):
    """(task, trajectory) pairs: the scripted teacher on composed tasks, real tools and database."""
    from calcmate.ehr.materialize import materialize

    reg = registry()
    tax = load_taxonomy(reg=reg)
    tasks = []
    for i in range(60):
        try:
            tasks.append(offline_task(tax, reg, "mutations", i))
        except TaskCreationError:
            continue
        if len(tasks) == N_TASKS:
            break
    with ehr_db.connect() as conn:
        reports = {t.task_id: materialize(strip_fed_inputs(t), conn, seed=0) for t in tasks}

    async def run():
        async with toolbox.session() as tb:
            return [await run_episode(t, ScriptedTeacher(), tb, NativeProtocol(), context={"materialized": reports[t.task_id]})
                    for t in tasks]

    trajs = asyncio.run(run())
    return list(zip(tasks, trajs))


# -- editing a trajectory consistently (records, assistant turns, tool messages, final answer) -----
def _observation(original: str, stdout: str) -> str:
    """A program's output in the observation style of the trajectory (official "Output:" or raw)."""
    if original.lstrip().startswith("Output:"):
        return f"Output:\n{stdout.strip()}" if stdout.strip() else "Code executed successfully (no output)."
    return stdout.rstrip("\n")


def _set_call(traj: Trajectory, call_id: str, *, code: str | None = None, result: str | None = None) -> None:
    rec = next(c for c in traj.tool_calls if c.id == call_id)
    if code is not None:
        rec.arguments = {**rec.arguments, "code": code}
        for m in traj.messages:
            for c in m.get("tool_calls") or []:
                if c.get("id") == call_id:
                    args = c["function"].get("arguments")
                    new = {**(json.loads(args) if isinstance(args, str) else dict(args or {})), "code": code}
                    c["function"]["arguments"] = json.dumps(new, ensure_ascii=False) if isinstance(args, str) else new
    if result is not None:
        rec.result = result
        for m in traj.messages:
            if m.get("role") == "tool" and m.get("tool_call_id") == call_id:
                m["content"] = result


def _drop_calls(traj: Trajectory, ids: set[str]) -> None:
    traj.tool_calls = [c for c in traj.tool_calls if c.id not in ids]
    msgs = []
    for m in traj.messages:
        if m.get("role") == "tool" and m.get("tool_call_id") in ids:
            continue
        if m.get("tool_calls"):
            kept = [c for c in m["tool_calls"] if c.get("id") not in ids]
            if not kept:
                continue
            m = {**m, "tool_calls": kept}
        msgs.append(m)
    traj.messages = msgs


def _set_final(traj: Trajectory, items) -> None:
    prose = (traj.final_answer_text or "").partition(OPEN)[0]
    text = write_final_answer(items, prose)
    traj.final_answer, traj.final_answer_text = list(items), text
    last = next(m for m in reversed(traj.messages) if m.get("role") == "assistant")
    last["content"] = text


def _program_of(traj: Trajectory, name: str):
    """The run_python call whose (generated) program computes ``name``: its header names it."""
    return next((c for c in traj.tool_calls if c.tool == "run_python"
                 and c.arguments.get("code", "").lstrip("# ").startswith(name)), None)


def _calls_of(traj: Trajectory, calc) -> set[str]:
    """search, fetch and run_python call ids of one calculator (SQL can be shared: kept)."""
    ids = set()
    for c in traj.tool_calls:
        if c.tool == "search" and c.arguments.get("query") == calc.name:
            ids.add(c.id)
        elif c.tool == "fetch" and calc.id in str(c.arguments.get("url", "")):
            ids.add(c.id)
    prog = _program_of(traj, calc.name)
    if prog is not None:
        ids.add(prog.id)
    return ids


# -- the mutations: (task, clean trajectory) -> mutated trajectory, or None where it does not apply ---
def m_print_answer(task, traj, every=False):
    t = traj.model_copy(deep=True)
    done = 0
    for a in task.calculator_answers:
        prog = _program_of(t, a.name)
        if prog is None:
            continue
        printed = json.dumps(a.final_answer, ensure_ascii=False)
        _set_call(t, prog.id, code=f"print({printed})", result=_observation(prog.result, printed))
        done += 1
        if not every:
            break
    return t if done else None


def m_print_answer_all(task, traj):
    return m_print_answer(task, traj, every=True)


def m_ignore_inputs(task, traj):
    """The inputs are assigned as retrieved, then the answer is printed as a constant."""
    t = traj.model_copy(deep=True)
    for a in task.calculator_answers:
        prog = _program_of(t, a.name)
        if prog is None:
            continue
        code = prog.arguments["code"]
        m = re.search(r"^v = \{.*?^\}\n", code, re.S | re.M)
        if not m:
            continue
        printed = json.dumps(a.final_answer, ensure_ascii=False)
        new = f"import json\n{m.group(0)}\nvalue = {printed}\nprint(json.dumps(value, ensure_ascii=False))\n"
        _set_call(t, prog.id, code=new, result=_observation(prog.result, printed))
        return t
    return None


def _all_numbers(traj: Trajectory) -> list[float]:
    return [float(x) for c in traj.tool_calls for x in NUM.findall(c.result.replace(",", ""))]


def m_ungrounded_input(task, traj):
    """One numeric input of one program set to a number no tool result shows; the program is re-run."""
    t = traj.model_copy(deep=True)
    seen = _all_numbers(t)
    for a in task.calculator_answers:
        prog = _program_of(t, a.name)
        if prog is None:
            continue
        code = prog.arguments["code"]
        for lit in data_literals(code) or []:
            if not lit.checked or isinstance(lit.value, bool) or not isinstance(lit.value, (int, float)) or lit.value <= 0:
                continue
            new = next((x for x in (round(lit.value * k + 0.37, 2) for k in (1.37, 1.91, 2.63, 0.71))
                        if not any(abs(x - n) <= max(0.01 * abs(x), 0.01) for n in seen)), None)
            if new is None:
                continue
            raw = code.encode()
            mutated = (raw[:lit.start] + repr(new).encode() + raw[lit.end:]).decode()
            out = default_runner().run(mutated)
            if out is None:  # the changed input is out of the program's range: try another
                continue
            _set_call(t, prog.id, code=mutated, result=_observation(prog.result, out))
            return t
    return None


def m_wrong_branch(task, traj):
    """The execution follows the arm not taken: the taken arm's entries are reported as the other
    arm's calculators (or, with an empty taken arm, the other arm's are added)."""
    reg = registry()
    bd = (task.plan or {}).get("branches", [None])[0]
    if not bd:
        return None
    b = branch_from_dict(bd)
    taken, other = (b.then, b.else_) if bd["taken"] == "then" else (b.else_, b.then)
    if not other:
        return None
    t = traj.model_copy(deep=True)
    items = [i.model_copy() for i in t.final_answer]
    taken_names = {reg.get(c).name for c in taken}
    other_names = [reg.get(c).name for c in other]
    pos = [k for k, i in enumerate(items) if i.calculator in taken_names]
    for k, name in zip(pos, other_names):
        items[k].calculator = name
    if not pos:
        items.append(items[-1].model_copy(update={"calculator": other_names[0]}))
    _set_final(t, items)
    return t


def m_skip_reference(task, traj):
    """The plan says every reference is fetched; one calculator's search and fetch are skipped."""
    reg = registry()
    t = traj.model_copy(deep=True)
    calc = reg.get(task.calculator_answers[len(task.calculator_answers) // 2].calculator_id)
    ids = {c for c in _calls_of(t, calc) if next(x for x in t.tool_calls if x.id == c).tool in ("search", "fetch")}
    if not ids:
        return None
    _drop_calls(t, ids)
    return t


def m_skip_calculator(task, traj):
    """One listed calculator is never run (its final entry kept, as a model that guessed would)."""
    reg = registry()
    fed_by = {src for feeds in (task.plan.get("fed") or {}).values() for src in feeds.values()}
    for a in reversed(task.calculator_answers):
        if a.calculator_id in fed_by:
            continue
        t = traj.model_copy(deep=True)
        ids = _calls_of(t, reg.get(a.calculator_id))
        if ids:
            _drop_calls(t, ids)
            return t
    return None


def m_missing_value(task, traj):
    t = traj.model_copy(deep=True)
    items = [i.model_copy() for i in t.final_answer]
    items[len(items) // 2].value = None
    _set_final(t, items)
    return t


def m_drop_entry(task, traj):
    t = traj.model_copy(deep=True)
    items = [i.model_copy() for i in t.final_answer]
    del items[len(items) // 2]
    _set_final(t, items)
    return t


MUTATIONS = {  # name -> (mutation, the reason it must be rejected for)
    "print_answer": (m_print_answer, "not_computed"),
    "print_answer_all": (m_print_answer_all, "not_computed"),
    "ignore_inputs": (m_ignore_inputs, "not_computed"),
    "ungrounded_input": (m_ungrounded_input, "ungrounded_input"),
    "wrong_branch": (m_wrong_branch, "wrong_branch"),
    "skip_reference": (m_skip_reference, "plan_not_followed"),
    "skip_calculator": (m_skip_calculator, "plan_not_followed"),
    "missing_value": (m_missing_value, "answer_omits_value"),
    "drop_entry": (m_drop_entry, "incomplete"),
}


def test_clean_trajectories_pass(clean):
    assert len(clean) == N_TASKS
    for task, traj in clean:
        assert traj.calls(SQL) and traj.calls("run_python"), task.task_id
        v = verify(task, traj)
        assert v.ok, (task.task_id, v.details())


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_mutation_is_always_rejected(clean, name):
    mutate, reason = MUTATIONS[name]
    applied = rejected = for_reason = 0
    for task, traj in clean:
        bad = mutate(task, traj)
        if bad is None:
            continue
        applied += 1
        v = verify(task, bad)
        rejected += not v.ok
        for_reason += reason in v.reasons
        assert not v.ok, (name, task.task_id)
        assert reason in v.reasons, (name, task.task_id, v.details())
    print(f"\nmutation {name}: applied to {applied}/{len(clean)}, rejected {rejected}/{applied}, "
          f"with reason {reason!r} {for_reason}/{applied}")
    assert applied >= (3 if name == "wrong_branch" else len(clean) // 2), (name, applied)


def test_retry_feedback_describes_only_the_process(clean):
    """Whatever went wrong, the feedback names no calculator, no input value and no result."""
    reg = registry()
    seen: set[str] = set()
    for task, traj in clean:
        names = {n for a in task.calculator_answers for n in (a.name, *reg.get(a.calculator_id).aliases)}
        names |= {reg.get(c).name for bd in task.plan.get("branches", []) for c in bd["then"] + bd.get("else", [])}
        for name, (mutate, _) in MUTATIONS.items():
            bad = mutate(task, traj)
            if bad is None:
                continue
            v = verify(task, bad)
            fb = v.feedback()
            seen |= set(v.reasons)
            assert fb and not re.search(r"\d", fb), (name, fb)
            assert all(f"- {PROCESS_FEEDBACK[r]}" in fb for r in v.reasons)
            assert feedback_leaks(fb, task) == [], (name, fb)
            low = fb.lower()
            for n in names:
                assert not re.search(rf"\b{re.escape(n.lower())}\b", low), (name, n, fb)
            for a in task.calculator_answers:
                for inp in a.inputs:
                    assert str(inp.value).lower() not in low or len(str(inp.value)) < 4, (name, inp.value, fb)
    assert {"not_computed", "ungrounded_input", "wrong_branch", "plan_not_followed", "answer_omits_value"} <= seen
    assert seen <= set(REASONS)


def _pipe_to_json(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip() and not re.fullmatch(r"\(\d+ rows?\)", ln.strip())]
    cols = [x.strip() for x in lines[0].split(" | ")]
    rows = [dict(zip(cols, (x.strip() for x in ln.split(" | ")))) for ln in lines[1:]]
    return json.dumps([{"sql_id": 0, "result": rows or "Query executed successfully. No results returned."}],
                      ensure_ascii=False, default=str)


def _restyle(traj: Trajectory) -> Trajectory:
    """The trajectory in the other tool vocabulary: official (run_read_only_sql JSON rows,
    "Output:" text) <-> calcmate (run_sql pipe tables, raw output)."""
    from calcmate.synth.verify import sql_text

    t = traj.model_copy(deep=True)
    for c in t.tool_calls:
        if c.tool in SQL:
            official = c.result.lstrip().startswith("[")
            _set_call(t, c.id, result=sql_text(c.result) if official else _pipe_to_json(c.result))
            c.tool = "run_sql" if official else "run_read_only_sql"
        elif c.tool == "run_python":
            official = c.result.startswith(("Output:", "Code executed successfully"))
            _set_call(t, c.id, result=python_stdout(c.result) if official else _observation("Output:", c.result))
    return t


def test_both_tool_vocabularies_are_read(clean):
    """Each clean trajectory restyled into the other tool vocabulary (run_sql pipe tables and raw
    Python output, or the official run_read_only_sql JSON and "Output:" text) still passes, and its
    print-the-answer mutation still fails."""
    assert python_stdout("Output:\na\nb\n\nErrors/Warnings:\nx") == "a\nb"
    assert python_stdout("Code executed successfully (no output).") == ""
    for task, traj in clean[:4]:
        other = _restyle(traj)
        assert {c.tool for c in other.tool_calls} & set(SQL) != {c.tool for c in traj.tool_calls} & set(SQL)
        v = verify(task, other)
        assert v.ok, (task.task_id, v.details())
        assert "not_computed" in verify(task, m_print_answer(task, other)).reasons

