"""The one episode loop: a policy acts, tools run, observations go back, until a final answer.

Used by the evaluator (model or oracle policy) and by the synthesizer (scripted teacher = the
oracle policy, or an LLM teacher). Nothing a policy or a tool does can crash an episode: bad
output becomes an error observation (bounded by ``max_format_retries`` in a row), a tool
failure becomes an error result, a backend failure ends the episode with ``stop_reason``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from calcmate.agent.final_answer import FinalAnswerError, parse_final_answer
from calcmate.agent.policy import Policy
from calcmate.agent.protocols import Action, NativeProtocol, ReactJsonProtocol, ToolCall
from calcmate.agent.tools import ToolCatalog, ToolSet, ToolSpec
from calcmate.agent.trajectory import ToolCallRecord, Trajectory
from calcmate.tasks import Task


def task_question(task: Task) -> str:
    """What the agent is asked: the official harness's patient-id preamble + the fuzzy question
    (never the task_description, which is the plan)."""
    pid = f"with patient_id '{task.patient_id}'" if task.patient_id else ""
    return (f"I am assessing the patient {pid}. Please explicitly identify and use applicable medical calculators "
            f"to quantify the assessment. Show the calculated results.\n\n{task.fuzzy_question}").replace("patient .", "patient.")


@dataclass
class EpisodeState:
    """What a policy may look at: the task's question (and, for scripted policies, ``context``),
    the trajectory so far, the tools."""

    task: Task
    trajectory: Trajectory
    protocol: NativeProtocol | ReactJsonProtocol
    tools: list[ToolSpec]
    max_rounds: int
    round: int = 0
    context: dict[str, Any] = field(default_factory=dict)  # e.g. {"materialized": report}


@dataclass
class EpisodeConfig:
    max_rounds: int = 80
    max_format_retries: int = 5  # consecutive malformed replies tolerated before giving up
    tool_timeout_s: float = 120.0


async def run_episode(
    task: Task,
    policy: Policy,
    tools: ToolSet,
    protocol: NativeProtocol | ReactJsonProtocol,
    config: EpisodeConfig | None = None,
    *,
    specs: list[ToolSpec] | None = None,
    context: dict[str, Any] | None = None,
) -> Trajectory:
    cfg = config or EpisodeConfig()
    t0 = time.perf_counter()
    specs = specs if specs is not None else await tools.list_tools()
    catalog = ToolCatalog(specs)
    traj = Trajectory(task_id=task.task_id, policy=policy.name, protocol=protocol.name,
                      messages=protocol.initial_messages(task_question(task)))
    state = EpisodeState(task, traj, protocol, specs, cfg.max_rounds, context=dict(context or {}))
    streak = 0
    try:
        await policy.start(state)
        while state.round < cfg.max_rounds:
            state.round += 1
            traj.rounds = state.round
            turn = await policy.act(state)
            traj.prompt_tokens += turn.prompt_tokens
            traj.completion_tokens += turn.completion_tokens
            action = turn.action if turn.action is not None else protocol.parse(turn.text or "")
            if action.error is None and action.answer is not None and not action.tool_calls:
                try:
                    items = parse_final_answer(action.answer)
                except FinalAnswerError as e:
                    action = Action(thought=action.thought, raw=action.raw or action.answer, error=str(e))
                else:
                    traj.messages.append(protocol.assistant_message(action))
                    traj.final_answer_text, traj.final_answer = action.answer, items
                    traj.finished, traj.stop_reason = True, "answer"
                    break
            if action.error is not None:
                traj.format_errors += 1
                streak += 1
                traj.messages.append(protocol.assistant_message(action))
                traj.messages.append(protocol.error_message(action.error))
                if streak > cfg.max_format_retries:
                    traj.stop_reason = f"error: {streak} malformed replies in a row"
                    break
                continue
            streak = 0
            if not action.tool_calls:  # a scripted policy with nothing to do
                traj.stop_reason = "error: policy returned neither tool calls nor an answer"
                break
            for c in action.tool_calls:  # resolve servers first so the record names them
                try:
                    c.server = catalog.resolve(c.name, c.server).server
                except ValueError:
                    pass
            traj.messages.append(protocol.assistant_message(action))
            for call in action.tool_calls:
                await _execute(call, catalog, tools, protocol, traj, state.round, cfg)
        else:
            traj.stop_reason = "max_rounds"
    except asyncio.CancelledError:
        raise
    except Exception as e:  # backend or policy failure: end this episode, keep the record
        traj.stop_reason = f"error: {type(e).__name__}: {e}"[:500]
    traj.wall_s = time.perf_counter() - t0
    return traj


async def _execute(call: ToolCall, catalog: ToolCatalog, tools: ToolSet, protocol: Any, traj: Trajectory,
                   round_: int, cfg: EpisodeConfig) -> None:
    t = time.perf_counter()
    try:
        spec = catalog.resolve(call.name, call.server)
        args = catalog.check_arguments(spec, call.arguments)
    except ValueError as e:  # unknown tool, bad arguments: the model reads why
        traj.format_errors += 1
        text, is_error, server, args = f"Error: {e}", True, call.server or "", call.arguments
    else:
        server = spec.server
        try:
            text, is_error = await asyncio.wait_for(tools.call(spec.server, spec.name, args), cfg.tool_timeout_s)
        except asyncio.TimeoutError:
            text, is_error = f"Error: tool {spec.name} timed out after {cfg.tool_timeout_s:g} s", True
        except Exception as e:
            text, is_error = f"Error: tool {spec.name} failed: {type(e).__name__}: {e}", True
    traj.tool_calls.append(ToolCallRecord(
        id=call.id, server=server, tool=call.name, arguments=args if isinstance(args, dict) else {"_raw": args},
        result=text, is_error=is_error, latency_s=time.perf_counter() - t, round=round_))
    traj.messages.append(protocol.tool_message(call, text, is_error))
