"""Train and evaluate on one format: every exported trajectory replays through the real episode loop.

A synthesized set is exported, the patients are materialized again (deterministic per seed), and a
policy that emits exactly the recorded assistant turns runs through ``run_episode`` with the real
tools, in both protocols. It must make the same tool calls, see the same observations and reach the
same final answer. A lone planning turn (an assistant turn without a tool call before the end) would
end such a replay early, which is what a faithful student trained on it would do.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "data_gen"))

import synthesize  # noqa: E402

from calcmate.agent.episode import EpisodeConfig, run_episode  # noqa: E402
from calcmate.agent.policy import Policy, Turn  # noqa: E402
from calcmate.agent.protocols import Action, ToolCall, get_protocol  # noqa: E402
from calcmate.tasks import Task  # noqa: E402

OFFICIAL = {"run_read_only_sql", "list_tables", "describe_tables", "search", "fetch", "run_python"}


# the stages' own server (calcmate.ehr.get_server) is this session's
pytestmark = pytest.mark.usefixtures("shared_server")


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay")
    assert synthesize.main(["--config", str(ROOT / "configs/synth/offline.yaml"), "--out", str(out), "--quiet",
                            "--set", "num_tasks=6", "concurrency=3"]) == 0
    return out


def _rows(d: Path) -> list[dict]:
    return [json.loads(x) for x in (d / "dataset" / "train.jsonl").read_text().splitlines()]


class Replay(Policy):
    """Emits the recorded assistant turns, in order, whatever the tools answer."""

    name = "replay"

    def __init__(self, turns: list[Action]):
        self.turns = list(turns)

    async def act(self, state) -> Turn:
        return Turn(action=self.turns.pop(0) if self.turns else Action(error="replay exhausted", raw=""))


def native_turns(messages: list[dict]) -> list[Action]:
    out = []
    for m in messages:
        if m["role"] != "assistant":
            continue
        if m.get("tool_calls"):
            out.append(Action(thought=m["content"], tool_calls=[
                ToolCall(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in m["tool_calls"]]))
        else:
            out.append(Action(answer=m["content"]))
    return out


def react_turns(messages: list[dict]) -> list[Action]:
    out = []
    for m in messages:
        if m["role"] != "assistant":
            continue
        obj = json.loads(m["content"])
        if "answer" in obj:
            out.append(Action(thought=obj["thought"], answer=obj["answer"]))
        else:
            a = obj["action"]
            out.append(Action(thought=obj["thought"], tool_calls=[ToolCall(a["tool"], a["arguments"], server=a["server"])]))
    return out


async def _replay(tasks: list[Task], turns: dict[str, list[Action]], protocol: str) -> dict:
    from calcmate.agent.runner import EvalConfig, open_environment
    from calcmate.synth.pipeline import strip_fed_inputs

    cfg = EvalConfig(ehr={"seed": 0})
    out = {}
    async with open_environment(cfg, [strip_fed_inputs(t) for t in tasks]) as (tools, _):
        for t in tasks:
            out[t.task_id] = await run_episode(t, Replay(turns[t.task_id]), tools, get_protocol(protocol),
                                               EpisodeConfig(max_rounds=400))
    return out


def test_no_lone_assistant_turn_and_only_official_tools(synth_dir):
    rows = _rows(synth_dir)
    assert rows
    for r in rows:
        assistant = [m for m in r["messages"] if m["role"] == "assistant"]
        assert all(m.get("tool_calls") for m in assistant[:-1]), r["id"]
        assert not assistant[-1].get("tool_calls") and "<final_answer>" in assistant[-1]["content"]
        assert assistant[0]["content"].strip(), "the plan opens the first tool-calling turn"
        names = {c["function"]["name"] for m in assistant for c in m.get("tool_calls", [])}
        assert names <= OFFICIAL, names - OFFICIAL
        assert {t["function"]["name"] for t in json.loads(r["tools"])} == OFFICIAL


@pytest.mark.parametrize("protocol", ["native", "react_json"])
def test_exported_trajectories_replay_to_the_same_answer(synth_dir, protocol):
    tasks = {t["task_id"]: Task.model_validate(t) for t in
             (json.loads(x) for x in (synth_dir / "tasks" / "tasks.jsonl").read_text().splitlines())}
    recs = {json.loads(x)["task_id"]: json.loads(x) for x in (synth_dir / "trajectories" / "trajectories.jsonl").read_text().splitlines()}
    rows = _rows(synth_dir)
    if protocol == "native":
        turns = {r["id"]: native_turns(r["messages"]) for r in rows}
    else:
        from calcmate.agent.trajectory import Trajectory
        from calcmate.synth.export import react_json_messages

        turns = {r["id"]: react_turns(react_json_messages(Trajectory.model_validate(recs[r["id"]]["trajectory"])))
                 for r in rows}
    replayed = asyncio.run(_replay([tasks[r["id"]] for r in rows], turns, protocol))
    for r in rows:
        want = recs[r["id"]]["trajectory"]
        got = replayed[r["id"]]
        assert got.finished and got.stop_reason == "answer", (r["id"], got.stop_reason)
        assert [(c.tool, c.arguments) for c in got.tool_calls] == [(c["tool"], c["arguments"]) for c in want["tool_calls"]]
        assert [c.result for c in got.tool_calls] == [c["result"] for c in want["tool_calls"]]
        assert [i.model_dump() for i in got.final_answer] == want["final_answer"]


def test_one_failing_task_is_its_own_outcome_never_the_runs_end(tmp_path, monkeypatch):
    """A crash inside one task's episode or verification is recorded for that task; the others finish."""
    import calcmate.synth.verify as verify_mod

    real = verify_mod.verify
    hit = []

    def flaky(task, traj, *a, **kw):
        if not hit:
            hit.append(task.task_id)
            raise SystemError("AST constructor recursion depth mismatch")  # what CPython 3.11 once threw
        return real(task, traj, *a, **kw)

    monkeypatch.setattr(verify_mod, "verify", flaky)
    out = tmp_path / "run"
    assert synthesize.main(["--config", str(ROOT / "configs/synth/offline.yaml"), "--out", str(out), "--quiet",
                            "--set", "num_tasks=3", "concurrency=3"]) == 0
    recs = {json.loads(x)["task_id"]: json.loads(x) for x in (out / "trajectories" / "trajectories.jsonl").read_text().splitlines()}
    assert hit and recs[hit[0]]["status"] == "rejected"
    assert recs[hit[0]]["rejections"][0]["reason"] == "error" and "SystemError" in recs[hit[0]]["rejections"][0]["detail"]
    assert sum(r["status"] == "kept" for r in recs.values()) >= 1
