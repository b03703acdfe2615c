"""The two ways a model talks to the tools: ``native`` (Qwen3 hermes tool calls in a growing
chat, what CalcMate trains on) and ``react_json`` (the MedMCP-Calc paper's protocol, for
comparability with published numbers).

A protocol turns the trajectory's messages into what the backend sees (``render``), a raw
reply into an ``Action`` (``parse``), and actions and observations back into messages. A reply
that cannot be read becomes ``Action(error=...)``; the episode turns it into an error
observation, never an exception.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from calcmate.agent.final_answer import FinalAnswerError, has_final_answer, parse_final_answer, write_final_answer
from calcmate.agent.tools import ToolSpec

_THINK = re.compile(r"<think>.*?</think>", re.S)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:12]


@dataclass
class ToolCall:
    name: str
    arguments: Any
    server: str | None = None
    id: str = field(default_factory=new_call_id)
    reason: str = ""


@dataclass
class Action:
    """One assistant turn, read: tool calls, a final answer, or an error to report back."""

    thought: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    answer: str | None = None
    raw: str = ""
    error: str | None = None


def strip_think(text: str) -> tuple[str, str]:
    """(text without <think> blocks, the thinking). A dangling ``</think>`` (the template opened
    the block in the prompt) cuts everything before it."""
    thinking = " ".join(m.strip() for m in re.findall(r"<think>(.*?)</think>", text, re.S))
    text = _THINK.sub("", text)
    if "</think>" in text:
        before, text = text.rsplit("</think>", 1)
        thinking = (thinking + " " + before.replace("<think>", "")).strip()
    return text.strip(), thinking


class NativeProtocol:
    """Chat messages + ``tools`` list; the model emits ``<tool_call>{"name", "arguments"}</tool_call>``.

    The message list only grows, so every turn's prompt extends the previous one and vLLM's
    prefix cache is reused. The episode ends on a reply without tool calls; its structured
    ``<final_answer>`` block (calcmate.agent.final_answer) is what the scorer reads.
    """

    name = "native"

    def __init__(self, system_prompt: str | None = None):
        self.system_prompt = system_prompt or NATIVE_SYSTEM_PROMPT

    def initial_messages(self, question: str) -> list[dict[str, Any]]:
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": question}]

    def render(self, messages: list[dict[str, Any]], tools: list[ToolSpec], max_rounds: int) -> tuple[list[dict], list[dict] | None]:
        return [_chat_fields(m) for m in messages], [t.openai_schema() for t in tools]

    def parse(self, text: str) -> Action:
        body, thinking = strip_think(text or "")
        calls: list[ToolCall] = []
        for n, raw in enumerate(_TOOL_CALL.findall(body), 1):
            try:
                obj = json.loads(raw.strip())
            except json.JSONDecodeError as e:
                return Action(thought=thinking, raw=text, error=f"tool call {n} is not valid JSON ({e.msg}); "
                              'write <tool_call>{"name": ..., "arguments": {...}}</tool_call>')
            if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
                return Action(thought=thinking, raw=text, error=f"tool call {n} needs a string 'name' and an 'arguments' object")
            args = obj.get("arguments", obj.get("parameters", {}))
            if isinstance(args, str):
                try:
                    args = json.loads(args) if args.strip() else {}
                except json.JSONDecodeError:
                    return Action(thought=thinking, raw=text, error=f"arguments of tool call {n} are not a JSON object")
            calls.append(ToolCall(obj["name"], args))
        if body.count("<tool_call>") != len(calls):
            return Action(thought=thinking, raw=text, error="a <tool_call> block is not closed with </tool_call>")
        content = _TOOL_CALL.sub("", body).strip()
        if calls:
            return Action(thought=content or thinking, tool_calls=calls, raw=text)
        if not content:
            return Action(thought=thinking, raw=text, error="empty reply; call a tool or give the final answer block")
        try:
            parse_final_answer(content)
        except FinalAnswerError as e:
            return Action(thought=thinking, raw=text, error=str(e))
        return Action(thought=thinking, answer=content, raw=text)

    def assistant_message(self, action: Action) -> dict[str, Any]:
        if action.error is not None:
            return {"role": "assistant", "content": action.raw}
        if action.answer is not None and not action.tool_calls:
            return {"role": "assistant", "content": action.answer}
        msg: dict[str, Any] = {"role": "assistant", "content": action.thought or ""}
        msg["tool_calls"] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
            for c in action.tool_calls
        ]
        return msg

    def tool_message(self, call: ToolCall, text: str, is_error: bool) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": text}

    def error_message(self, error: str) -> dict[str, Any]:
        return {"role": "user", "content": f"Error: {error}. Reply with one or more <tool_call> blocks, "
                "or finish with the <final_answer> block."}


NATIVE_SYSTEM_PROMPT = (
    "You are CalcMate, a clinical calculation assistant working at an EHR workstation. "
    "Answer the clinician's question about their patient by choosing the right medical calculators, "
    "looking up each calculator's reference (search, fetch), retrieving every input from the EHR "
    "database with SQL (list_tables, describe_tables, run_read_only_sql), and computing with run_python. Open your "
    "first reply with a global plan (the calculators, the inputs to find, which result feeds or decides which step) "
    "before its tool calls; independent calls may go out together. Use only values "
    "that the tools return. When every calculation is done, reply without tool calls and end with "
    "the final answer block, one entry per calculator:\n"
    + write_final_answer([{"calculator": "<calculator name>", "value": "<number or category>",
                           "unit": "<unit or null>", "interpretation": "<clinical meaning>"}])
)


def _chat_fields(m: dict[str, Any]) -> dict[str, Any]:
    keep = ("role", "content", "tool_calls", "tool_call_id", "name")
    return {k: m[k] for k in keep if k in m}


# -- react_json ------------------------------------------------------------------------------
# The prompt of MedMCP-Calc (SPIRAL-MED/MedMCP-Calc, MIT licence, Zhu et al.): codes/agent/react_prompt.j2,
# vendored verbatim as calcmate/agent/data/react_prompt.j2 and rendered with jinja2 exactly as the
# official ReAct agent (codes/agent/react.py) renders it: each round re-renders this one prompt as
# a single user message, with the history ("Step: n", "Thought: ...", "Action: ...", "Result: ...")
# inside it, so scores are comparable with the paper and a model trained on react_json rows sees
# what the official harness shows it.
REACT_PROMPT_PATH = Path(__file__).with_name("data") / "react_prompt.j2"


@lru_cache(maxsize=1)
def _react_template():
    import jinja2

    return jinja2.Template(REACT_PROMPT_PATH.read_text(encoding="utf-8"))


def render_react_prompt(question: str, tools_json: str, history: list[str], max_steps: int) -> str:
    return _react_template().render(TOOLS_PROMPT=tools_json, HISTORY="\n".join(history) if history else "EMPTY",
                                     QUESTION=question, MAX_STEPS=max_steps)


class ReactJsonProtocol:
    """One re-rendered user prompt per round; replies are ``{"thought", "action"|"answer"}`` JSON.

    The trajectory keeps the conversation as ordinary messages (assistant replies carry the
    parsed call as ``tool_calls``; results are ``tool`` messages); ``render`` folds them into the
    paper's "Previous steps and results" history.
    """

    name = "react_json"

    def initial_messages(self, question: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": question}]

    def render(self, messages: list[dict[str, Any]], tools: list[ToolSpec], max_rounds: int) -> tuple[list[dict], None]:
        question = next(m["content"] for m in messages if m["role"] == "user")
        # MCPManager.list_tools_str: every MCP tool object dumped, with its server's name injected
        tools_json = json.dumps([t.react_schema() for t in tools], ensure_ascii=False, indent=2)
        lines: list[str] = []
        step = 0
        for m in messages[1:]:
            if m["role"] == "assistant":
                step += 1
                lines += [f"Step: {step}", f"Thought: {m.get('thought', '')}"]
                for c in m.get("tool_calls", []):
                    f = c["function"]
                    try:  # the official history shows the arguments as a Python dict
                        args = repr(json.loads(f["arguments"]))
                    except (json.JSONDecodeError, TypeError):
                        args = str(f["arguments"])
                    lines.append(f"Action: Using tool `{f['name']}` in server `{c.get('server', '')}` with args {args}")
                if m.get("answer") is not None:
                    lines.append(f"Answer: {m['answer']}")
            elif m["role"] == "tool":
                lines.append(f"Result: {m['content']}")
            elif m["role"] == "user":
                lines.append(m["content"])
        prompt = render_react_prompt(question, tools_json, lines, max_rounds)
        return [{"role": "user", "content": prompt}], None

    def parse(self, text: str) -> Action:
        body, thinking = strip_think(text or "")
        cleaned = body.replace("```json", "").replace("```", "").strip()
        try:
            obj = json.loads(cleaned)
        except json.JSONDecodeError as e:
            start, end = cleaned.find("{"), cleaned.rfind("}")
            try:
                obj = json.loads(cleaned[start:end + 1]) if 0 <= start < end else None
            except json.JSONDecodeError:
                obj = None
            if obj is None:
                return Action(thought=thinking, raw=text, error=f"Parsing error: invalid JSON ({e.msg}). Please output valid JSON.")
        if not isinstance(obj, dict):
            return Action(thought=thinking, raw=text, error="Parsing error: the reply must be a JSON object. Please output valid JSON.")
        thought = str(obj.get("thought", ""))
        if "answer" in obj:
            ans = obj["answer"]
            return Action(thought=thought, answer=ans if isinstance(ans, str) else json.dumps(ans, ensure_ascii=False), raw=text)
        act = obj.get("action")
        if not isinstance(act, dict) or not isinstance(act.get("tool"), str):
            return Action(thought=thought, raw=text,
                          error="Parsing error: Response must contain either 'action' (with 'server', 'tool', 'arguments') or 'answer'. Please output valid JSON.")
        args = act.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                pass
        return Action(thought=thought, raw=text, tool_calls=[
            ToolCall(act["tool"], args, server=act.get("server"), reason=str(act.get("reason", "")))])

    def assistant_message(self, action: Action) -> dict[str, Any]:
        if action.error is not None:
            return {"role": "assistant", "content": action.raw, "thought": action.thought}
        if action.raw:
            content = action.raw
        elif action.answer is not None:
            content = json.dumps({"thought": action.thought, "answer": action.answer}, ensure_ascii=False)
        else:
            c = action.tool_calls[0]
            content = json.dumps({"thought": action.thought, "action": {
                "reason": c.reason, "server": c.server, "tool": c.name, "arguments": c.arguments}}, ensure_ascii=False)
        msg: dict[str, Any] = {"role": "assistant", "content": content, "thought": action.thought}
        if action.answer is not None and not action.tool_calls:
            msg["answer"] = action.answer
        else:
            msg["tool_calls"] = [{"id": c.id, "type": "function", "server": c.server,
                                  "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                                 for c in action.tool_calls]
        return msg

    def tool_message(self, call: ToolCall, text: str, is_error: bool) -> dict[str, Any]:
        # the official MCPClient prefixes a result flagged as an error
        return {"role": "tool", "tool_call_id": call.id, "name": call.name,
                "content": f"Tool Execution Error: {text}" if is_error else text}

    def error_message(self, error: str) -> dict[str, Any]:
        return {"role": "user", "content": f"Error: {error}"}


PROTOCOLS = {"native": NativeProtocol, "react_json": ReactJsonProtocol}


def get_protocol(name: str) -> NativeProtocol | ReactJsonProtocol:
    try:
        return PROTOCOLS[name]()
    except KeyError:
        raise ValueError(f"protocol: unknown {name!r}; choose one of {sorted(PROTOCOLS)}") from None


__all__ = ["Action", "ToolCall", "NativeProtocol", "ReactJsonProtocol", "get_protocol", "strip_think",
           "has_final_answer", "render_react_prompt"]
