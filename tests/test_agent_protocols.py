"""Protocol parsing, the final-answer block, and the episode loop's handling of bad output."""

from __future__ import annotations

import asyncio

import pytest

from calcmate.agent.episode import EpisodeConfig, run_episode, task_question
from calcmate.agent.final_answer import FinalAnswerError, parse_final_answer, write_final_answer
from calcmate.agent.policy import Policy, Turn
from calcmate.agent.protocols import NativeProtocol, ReactJsonProtocol, get_protocol
from calcmate.agent.tools import FunctionTools
from calcmate.tasks import Task

SQL_SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
PY_SCHEMA = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}


def tools() -> FunctionTools:
    def run_sql(query: str) -> str:
        if "boom" in query:
            raise RuntimeError("relation boom does not exist")
        return "value\n42"

    return FunctionTools({
        ("postgres", "run_sql"): (run_sql, SQL_SCHEMA, "read-only SQL"),
        ("python", "run_python"): (lambda code: str(eval(code)), PY_SCHEMA, "python"),
    })


class Replay(Policy):
    """Replays fixed model outputs (what a backend would return)."""

    name = "replay"

    def __init__(self, replies: list[str]):
        self.replies = list(replies)

    async def act(self, state) -> Turn:
        if not self.replies:
            raise RuntimeError("backend went away")
        return Turn(text=self.replies.pop(0), prompt_tokens=10, completion_tokens=3)


TASK = Task(task_id="t", patient_id="P1", fuzzy_question="How are the kidneys?")
ANSWER = write_final_answer([{"calculator": "Anion Gap", "value": 12, "unit": "mEq/L"}])


def run(replies, protocol="native", **cfg):
    return asyncio.run(run_episode(TASK, Replay(replies), tools(), get_protocol(protocol), EpisodeConfig(**cfg)))


# -- final answer block ------------------------------------------------------------------------
def test_final_answer_round_trip_and_errors():
    text = write_final_answer([{"calculator": "HAS-BLED", "value": 3, "interpretation": "high"},
                               {"calculator": "GA", "value": "31 weeks 1 day"}], "Done.")
    items = parse_final_answer(text)
    assert [(i.calculator, i.value) for i in items] == [("HAS-BLED", 3), ("GA", "31 weeks 1 day")]
    assert items[0].interpretation == "high"
    fenced = '```final_answer\n{"calculators": [{"name": "MELD", "result": 21}]}\n```'
    assert parse_final_answer(fenced)[0].value == 21
    assert parse_final_answer("no block here") is None
    for bad, msg in (("<final_answer>[{]</final_answer>", "not valid JSON"), ("<final_answer>[]</final_answer>", "non-empty"),
                     ('<final_answer>[{"value": 1}]</final_answer>', "no 'calculator'"),
                     ('<final_answer>[{"calculator": "x"}]</final_answer>', "no 'value'"),
                     ('<final_answer>[{"calculator": "x", "value": 1}]', "never closed")):
        with pytest.raises(FinalAnswerError, match=msg):
            parse_final_answer(bad)


# -- native ------------------------------------------------------------------------------------
def test_native_parses_hermes_calls_and_strips_think():
    p = NativeProtocol()
    a = p.parse('<think>need sql</think>Let me look.\n<tool_call>\n{"name": "run_sql", "arguments": {"query": "select 1"}}\n'
                '</tool_call>\n<tool_call>{"name": "run_python", "arguments": "{\\"code\\": \\"1+1\\"}"}</tool_call>')
    assert a.error is None and [c.name for c in a.tool_calls] == ["run_sql", "run_python"]
    assert a.tool_calls[1].arguments == {"code": "1+1"} and a.thought == "Let me look."
    msg = p.assistant_message(a)
    assert msg["tool_calls"][0]["function"]["arguments"] == '{"query": "select 1"}'
    assert p.parse("<tool_call>{oops}</tool_call>").error.startswith("tool call 1 is not valid JSON")
    assert "not closed" in p.parse('<tool_call>{"name": "run_sql", "arguments": {}}').error
    assert "empty reply" in p.parse("<think>only thinking</think>").error
    assert p.parse(ANSWER).answer == ANSWER
    assert "not valid JSON" in p.parse("<final_answer>[{]</final_answer>").error


def test_react_json_parses_paper_format():
    p = ReactJsonProtocol()
    a = p.parse('<think>x</think>```json\n{"thought": "t", "action": {"reason": "r", "server": "postgres", '
                '"tool": "run_read_only_sql", "arguments": {"query": "select 1"}}}\n```')
    assert a.error is None and a.tool_calls[0].name == "run_read_only_sql" and a.tool_calls[0].server == "postgres"
    assert p.parse('{"thought": "done", "answer": {"MELD": 21}}').answer == '{"MELD": 21}'
    assert "invalid JSON" in p.parse("I think the answer is 4").error
    assert "either 'action'" in p.parse('{"thought": "hmm"}').error


def test_react_json_render_is_one_prompt_with_history():
    tr = run(['{"thought": "look", "action": {"reason": "r", "server": "postgres", "tool": "run_sql", "arguments": {"query": "q"}}}',
              "not json", '{"thought": "done", "answer": "12"}'], protocol="react_json")
    assert tr.finished and tr.format_errors == 1 and tr.final_answer_text == "12"
    specs = asyncio.run(tools().list_tools())
    msgs, tools_param = ReactJsonProtocol().render(tr.messages[:-1], specs, 80)
    assert tools_param is None and len(msgs) == 1 and msgs[0]["role"] == "user"
    prompt = msgs[0]["content"]
    assert task_question(TASK) in prompt and "patient_id 'P1'" in prompt
    assert "Step: 1" in prompt and "Result: value\n42" in prompt and "Error: Parsing error" in prompt
    assert '"server_name": "postgres"' in prompt and "within 80 steps" in prompt


# -- the episode loop --------------------------------------------------------------------------
def test_native_episode_records_calls_errors_and_answer():
    tr = run(['<tool_call>{"name": "run_sql", "arguments": {"query": "select 42"}}</tool_call>',
              '<tool_call>{"name": "drop_db", "arguments": {}}</tool_call>',
              '<tool_call>{"name": "run_sql", "arguments": {"sql": "x"}}</tool_call>',
              '<tool_call>{"name": "run_sql", "arguments": {"query": "boom"}}</tool_call>',
              "<tool_call>{bad</tool_call>", ANSWER])
    assert tr.finished and tr.stop_reason == "answer" and tr.rounds == 6
    assert [(c.tool, c.is_error) for c in tr.tool_calls] == [
        ("run_sql", False), ("drop_db", True), ("run_sql", True), ("run_sql", True)]
    assert "unknown tool 'drop_db'" in tr.tool_calls[1].result
    assert "missing required argument 'query'" in tr.tool_calls[2].result
    assert "relation boom" in tr.tool_calls[3].result and tr.tool_calls[0].server == "postgres"
    assert tr.format_errors == 3  # unknown tool, bad arguments, bad JSON
    assert tr.final_answer[0].calculator == "Anion Gap" and tr.final_answer[0].value == 12
    assert tr.prompt_tokens == 60 and tr.completion_tokens == 18
    roles = [m["role"] for m in tr.messages]
    assert roles[:4] == ["system", "user", "assistant", "tool"] and roles[-1] == "assistant"
    # every assistant tool call is answered by a tool message with its id
    ids = [c["id"] for m in tr.messages for c in m.get("tool_calls", [])]
    assert ids == [m["tool_call_id"] for m in tr.messages if m["role"] == "tool"]


def test_malformed_output_is_retried_a_bounded_number_of_times():
    tr = run(["garbage <tool_call>"] * 10 + [ANSWER], max_format_retries=3)
    assert not tr.finished and tr.format_errors == 4 and tr.stop_reason.startswith("error: 4 malformed")
    # a good reply resets the streak
    tr = run(["<tool_call>x</tool_call>"] * 3 + ['<tool_call>{"name": "run_python", "arguments": {"code": "1"}}</tool_call>']
             + ["<tool_call>x</tool_call>"] * 3 + [ANSWER], max_format_retries=3)
    assert tr.finished and tr.format_errors == 6


def test_round_limit_and_backend_failure_end_the_episode_without_raising():
    call = '<tool_call>{"name": "run_python", "arguments": {"code": "2"}}</tool_call>'
    tr = run([call] * 5, max_rounds=3)
    assert not tr.finished and tr.stop_reason == "max_rounds" and tr.rounds == 3 and len(tr.tool_calls) == 3
    tr = run([call])  # the replay runs dry: the backend raises
    assert not tr.finished and "backend went away" in tr.stop_reason and len(tr.tool_calls) == 1
