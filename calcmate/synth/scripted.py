"""The scripted teacher: the evaluator's oracle policy, plus a thought on each result.

It is the same code as ``calcmate.agent.oracle.OraclePolicy`` (same tool calls, same SQL, same
final answer); the only addition is the ReAct thought after each ``run_python`` result: the value,
its interpretation, and for a branch decider which arm the value triggers, so the trained model
learns to say why the next step follows. When the calculator just computed is the last one (a
decider whose arm is empty, say), the thought opens the final answer's prose instead: a final turn
has no tool call to carry it, and the branch sentence must not be lost.
"""

from __future__ import annotations

from typing import Any

from calcmate.agent.episode import EpisodeState
from calcmate.agent.oracle import OraclePolicy
from calcmate.agent.policy import Turn
from calcmate.calculators.registry import registry
from calcmate.synth.composer import branch_from_dict
from calcmate.synth.fuzzy import clean_label


class ScriptedTeacher(OraclePolicy):
    name = "teacher:scripted"

    async def act(self, state: EpisodeState) -> Turn:
        pending = self._pending
        turn = await super().act(state)
        if pending is None or turn.action is None:
            return turn
        value = self._values.get(pending.order, pending.final_answer)
        note = result_thought(state.task.plan or {}, pending, value)
        turn.action.thought = f"{note} {turn.action.thought}".strip()
        for c in turn.action.tool_calls:
            c.reason = turn.action.thought
        if turn.action.answer is not None and not turn.action.tool_calls:
            turn.action.answer = f"{note}\n\n{turn.action.answer}"
        return turn


def result_thought(plan: dict[str, Any], answer: Any, value: Any) -> str:
    """"<name> = <value> (<interpretation>). [Branch sentence.]" for the calculator just computed."""
    reg = registry()
    calc = reg.find(answer.name)
    unit = f" {calc.output.unit}" if calc is not None and calc.output.unit else ""
    interp = None
    if calc is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        interp = calc.interpret(value)
    elif calc is not None:
        interp = calc.interpret(value)
    text = f"{answer.name} = {value}{unit}" + (f" ({interp})." if interp else ".")
    cid = getattr(answer, "calculator_id", None) or (calc.id if calc else None)
    for bd in plan.get("branches", []):
        if bd.get("decider") != cid:
            continue
        b = branch_from_dict(bd)
        arm = b.arm(value)
        chosen = b.then if arm == "then" else b.else_
        other = b.else_ if arm == "then" else b.then
        names = lambda ids: " and ".join(reg.get(i).name for i in ids)  # noqa: E731
        if b.op == ">=":
            cond = (f"{value} is at or above the {b.threshold:g}{unit} cut-off ({clean_label(b.then_label)})" if arm == "then"
                    else f"{value} is below the {b.threshold:g}{unit} cut-off ({clean_label(b.else_label)})")
        else:
            cond = f"the result {'is' if arm == 'then' else 'is not'} \"{b.threshold}\""
        text += f" Since {cond}, the plan's branch goes to " + (names(chosen) if chosen else "no further calculator on this arm")
        text += f", not {names(other)}." if other else "."
    return text
