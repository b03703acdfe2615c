"""The one trajectory record. Episodes (model or scripted policy) produce it; the verifier,
scorer and exporter consume it; SFT rows are an export of it.

Messages are OpenAI chat format: assistant turns may carry ``tool_calls`` (arguments as JSON
strings) and tool results are ``role: tool`` messages with ``tool_call_id``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class ToolCallRecord(BaseModel):
    """One executed tool call and its observation."""

    id: str
    server: str  # "postgres" | "reference" | "python"
    tool: str  # e.g. "run_sql", "search", "fetch", "describe_tables", "run_python"
    arguments: dict[str, Any]
    result: str  # the text observation the model saw
    is_error: bool = False
    latency_s: float = 0.0
    round: int = 0


class FinalAnswerItem(BaseModel):
    """One calculator in the structured final-answer block."""

    calculator: str
    value: Any
    unit: str | None = None
    interpretation: str | None = None


class Trajectory(BaseModel):
    task_id: str
    policy: str  # "oracle", "model:<name>", "teacher:<name>"
    protocol: Literal["native", "react_json"] = "native"
    messages: list[dict[str, Any]] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    final_answer_text: str | None = None
    final_answer: list[FinalAnswerItem] | None = None  # parsed structured block, if any
    rounds: int = 0
    finished: bool = False  # a final answer within the round limit
    stop_reason: str = ""  # "answer" | "max_rounds" | "error: ..." | "context_length"
    format_errors: int = 0  # malformed outputs turned into error observations
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    metadata: dict[str, Any] = Field(default_factory=dict)

    def calls(self, tool: str | tuple[str, ...]) -> list[ToolCallRecord]:
        names = (tool,) if isinstance(tool, str) else tool
        return [c for c in self.tool_calls if c.tool in names]
