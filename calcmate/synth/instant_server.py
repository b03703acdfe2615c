"""A local OpenAI-compatible chat server that answers instantly, for pipeline tests and benchmarks.

It plays the planner: a question prompt gets a fixed value-free clinician question; a header prompt
gets back the verified workflow lines quoted in the prompt. So only the pipeline (HTTP client,
concurrency, retries, checks) is measured, never a model. Real HTTP over a real socket.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

QUESTION = ("I'm looking after a patient and want to work through the assessment step by step, using only what "
            "is documented in the record. Each result should inform the next, and one of them decides which "
            "direction we take afterwards. Please give me each result with its interpretation.")


def _reply(prompt: str) -> str:
    if "planning header" in prompt and "verified workflow" in prompt:
        body = prompt.split("branch conditions):", 1)[-1].split("\n\nWrite the planning header", 1)[0]
        return "Plan:\n" + body.strip()
    return QUESTION


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):  # quiet
        pass

    def do_POST(self):  # noqa: N802 - http.server API
        n = int(self.headers.get("Content-Length") or 0)
        req = json.loads(self.rfile.read(n) or b"{}")
        self.server.requests += 1  # type: ignore[attr-defined]
        prompt = "\n".join(m.get("content", "") for m in req.get("messages", []) if m.get("role") == "user")
        if self.server.fail_first and self.server.requests == 1:  # type: ignore[attr-defined]
            self.send_response(503)
            self.end_headers()
            return
        text = _reply(prompt)
        body = json.dumps({"id": "x", "object": "chat.completion", "created": int(time.time()), "model": req.get("model", "instant"),
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                           "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4,
                                     "total_tokens": (len(prompt) + len(text)) // 4}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class InstantServer:
    """``with InstantServer() as s: s.base_url`` -> http://127.0.0.1:<port>/v1"""

    def __init__(self, fail_first: bool = False):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.requests = 0  # type: ignore[attr-defined]
        self.httpd.fail_first = fail_first  # type: ignore[attr-defined]
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def requests(self) -> int:
        return self.httpd.requests  # type: ignore[attr-defined]

    def __enter__(self) -> "InstantServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
