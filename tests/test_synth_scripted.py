"""The scripted teacher's branch thought survives wherever the decider falls in the task.

After each ``run_python`` result the teacher writes a ReAct thought naming the value and, for the
plan's branch decider, which arm it triggers. Usually that thought rides on the next tool-call turn;
when the decider is the task's last calculator there is no next tool call, so the thought must open
the final answer's prose instead (the native protocol renders a final turn as its answer text only).
Both cases run the real teacher through the real episode loop, tools and embedded PostgreSQL.
"""

from __future__ import annotations

import asyncio

import pytest

from calcmate.agent.episode import run_episode
from calcmate.agent.final_answer import CLOSE, OPEN, parse_final_answer
from calcmate.agent.protocols import NativeProtocol
from calcmate.calculators.registry import registry
from calcmate.synth.build import TaskCreationError, offline_task
from calcmate.synth.pipeline import strip_fed_inputs
from calcmate.synth.scripted import ScriptedTeacher
from calcmate.synth.taxonomy import load_taxonomy
from calcmate.synth.verify import verify
from calcmate.tasks import Task

pytest.importorskip("calcmate.ehr.materialize", reason="the patient materializer has not landed")

NO_ARM = "no further calculator on this arm"


def _says_value(text: str, name: str, value) -> bool:
    """The thought names the calculator and its value (grammar wording varies)."""
    return name in text and str(value) in text


def _empty_arm_task() -> Task:
    """A composed task whose branch took an empty arm and whose decider has calculators after it
    (the composer keeps one there on purpose, so a decider-last task has to be cut from it)."""
    reg = registry()
    tax = load_taxonomy(reg=reg)
    for i in range(100):
        try:
            t = offline_task(tax, reg, "scripted-test", i, min_calcs=4, max_calcs=6)
        except TaskCreationError:
            continue
        (b,) = t.plan["branches"]
        arm = b["then"] if b["taken"] == "then" else b["else"]
        other = b["else"] if b["taken"] == "then" else b["then"]
        ex = t.plan["executed"]
        if not arm and other and b["decider"] in ex and ex.index(b["decider"]) < len(ex) - 1:
            return t
    raise AssertionError("no composed task with an empty taken arm in 100 tries")


def _cut_after_decider(task: Task) -> Task:
    """The same task ending at its decider: later calculators (post fillers) dropped everywhere."""
    t = task.model_copy(deep=True)
    dec = t.plan["branches"][0]["decider"]
    ex = t.plan["executed"]
    keep, dropped = ex[: ex.index(dec) + 1], set(ex[ex.index(dec) + 1:])
    t.task_id, t.patient_id = t.task_id + "_last", (t.patient_id or "P") + "L"
    t.calculator_answers = [a for a in t.calculator_answers if a.calculator_id in keep]
    t.required_calculators = [a.name for a in t.calculator_answers]
    t.plan["executed"] = keep
    t.plan["steps"] = [s for s in t.plan["steps"] if s["calc_id"] not in dropped]
    t.plan["fed"] = {k: v for k, v in t.plan.get("fed", {}).items() if k not in dropped}
    assert t.calculator_answers[-1].calculator_id == dec and len(t.calculator_answers) >= 2
    return t


@pytest.fixture(scope="module")
def episodes(ehr_db, toolbox):
    """(task, trajectory) for the composed task (decider mid-task) and its decider-last cut."""
    from calcmate.ehr.materialize import materialize

    mid = _empty_arm_task()
    last = _cut_after_decider(mid)
    with ehr_db.connect() as conn:
        reports = {t.task_id: materialize(strip_fed_inputs(t), conn, seed=0) for t in (mid, last)}

    async def run():
        async with toolbox.session() as tb:
            return [await run_episode(t, ScriptedTeacher(), tb, NativeProtocol(),
                                      context={"materialized": reports[t.task_id]}) for t in (mid, last)]

    trajs = asyncio.run(run())
    return {"mid": (mid, trajs[0]), "last": (last, trajs[1])}


def _decider(task: Task):
    b = task.plan["branches"][0]
    dec = next(a for a in task.calculator_answers if a.calculator_id == b["decider"])
    other = b["else"] if b["taken"] == "then" else b["then"]
    return dec, [registry().get(i).name for i in other]


def _check_final(task: Task, traj) -> tuple[str, dict]:
    """The final answer is still the structured block: parsed, complete, verified. Returns the prose
    before the block and the parsed values by calculator name."""
    assert traj.finished and traj.stop_reason == "answer", traj.stop_reason
    final = traj.messages[-1]
    assert final["role"] == "assistant" and not final.get("tool_calls")
    assert final["content"] == traj.final_answer_text
    items = parse_final_answer(final["content"])
    assert [i.calculator for i in items] == [a.name for a in task.calculator_answers]
    verdict = verify(task, traj)
    assert verdict.ok, verdict.feedback()
    prose, _, rest = final["content"].partition(OPEN)
    assert rest.rstrip().endswith(CLOSE)
    return prose, {i.calculator: i.value for i in items}


def test_decider_last_opens_the_final_answer_with_its_branch_thought(episodes):
    task, traj = episodes["last"]
    prose, values = _check_final(task, traj)
    dec, other = _decider(task)
    # the decider's run_python result is the last tool call: no later turn could carry the thought
    assert traj.tool_calls[-1].tool == "run_python"
    first = prose.strip().split("\n\n")[0]
    assert _says_value(first, dec.name, values[dec.name]), first
    assert NO_ARM in first, first  # the arm taken (empty); naming the other arm is the grammar's choice
    # the thought precedes the block; the block's decider value is the same one
    assert prose.index(NO_ARM) < traj.final_answer_text.index(OPEN)


def test_decider_mid_task_puts_its_branch_thought_in_the_next_tool_call(episodes):
    task, traj = episodes["mid"]
    prose, values = _check_final(task, traj)
    dec, other = _decider(task)
    assistant = [m for m in traj.messages if m["role"] == "assistant"]
    i = next(k for k, m in enumerate(assistant) if any(
        c["function"]["name"] == "run_python" and dec.name in m["content"] for c in m.get("tool_calls") or []))
    nxt = assistant[i + 1]
    assert nxt.get("tool_calls"), "the turn after the decider's result is a tool call"
    head = nxt["content"].split("\n\n")[0]
    assert _says_value(head, dec.name, values[dec.name]), nxt["content"]
    assert NO_ARM in head, head
    # the final answer opens with the last calculator's thought, which names no branch
    last = task.calculator_answers[-1]
    assert last.calculator_id != dec.calculator_id
    assert _says_value(prose.split("\n\n")[0], last.name, values[last.name]), prose
    assert NO_ARM not in prose
    assert sum(NO_ARM in (m.get("content") or "") for m in assistant) == 1
