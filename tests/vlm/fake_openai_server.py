"""A misbehaving OpenAI-compatible server for fault tests: `python fake_openai_server.py PORT MODE`.

Modes: garbage (chat answers 200 with a non-JSON body), nologprobs (a valid completion without
logprobs), noyesno (logprobs whose alternatives are neither yes nor no).
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, MODE = int(sys.argv[1]), sys.argv[2]


class Handler(BaseHTTPRequestHandler):
    def _send(self, status, body, content_type="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self._send(200, "{}")
        else:
            self._send(200, json.dumps({"object": "list", "data": [{"id": "fake-vlm", "object": "model"}]}))

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        message = {"role": "assistant", "content": "yes"}
        if MODE == "garbage":
            self._send(200, "<html>Bad Gateway</html>{", "text/html")
            return
        logprobs = None
        if MODE == "noyesno":
            alternatives = [{"token": "maybe", "logprob": -0.1}, {"token": "perhaps", "logprob": -2.0}]
            logprobs = {"content": [{"token": "maybe", "logprob": -0.1, "top_logprobs": alternatives}]}
            message["content"] = "maybe"
        choice = {"index": 0, "message": message, "finish_reason": "stop", "logprobs": logprobs}
        self._send(
            200,
            json.dumps({"id": "x", "object": "chat.completion", "model": "fake-vlm", "choices": [choice]}),
        )

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
