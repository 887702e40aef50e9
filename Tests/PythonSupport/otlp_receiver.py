"""An OTLP/HTTP trace receiver on 127.0.0.1 for the tests: it decodes what it receives.

`python3 otlp_receiver.py` prints `listening PORT`, then takes `POST /v1/traces` in OTLP's JSON
encoding (application/json; the spans are kept, each with its resource's attributes) and answers
`GET /spans` with everything received so far. `--hang` accepts connections and never answers,
as a collector that is down behind a load balancer does.
"""
import json
import socket
import sys
import threading
import http.server

received = {"spans": [], "requests": 0, "contentTypes": [], "headers": []}
lock = threading.Lock()


def flatten(body):
    spans = []
    for resource_spans in body.get("resourceSpans", []):
        resource = {kv["key"]: kv["value"] for kv in resource_spans.get("resource", {}).get("attributes", [])}
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                span = dict(span)
                span["resource"] = resource
                span["scope"] = scope_spans.get("scope", {})
                spans.append(span)
    return spans


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002
        pass

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length", "0"))
        data = self.rfile.read(length)
        kind = self.headers.get("Content-Type", "")
        try:
            if self.path != "/v1/traces" or not kind.startswith("application/json"):
                raise ValueError(f"unexpected {self.path} {kind}")
            spans = flatten(json.loads(data))
        except Exception as error:  # the test reads the status
            self.send_response(400)
            self.end_headers()
            self.wfile.write(str(error).encode())
            return
        with lock:
            received["spans"].extend(spans)
            received["requests"] += 1
            received["contentTypes"].append(kind)
            received["headers"].append({k.lower(): v for k, v in self.headers.items()})
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        with lock:
            body = json.dumps(received).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def hang():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print(f"listening {listener.getsockname()[1]}", flush=True)
    held = []
    while True:
        connection, _ = listener.accept()
        held.append(connection)  # read nothing, answer nothing


if __name__ == "__main__":
    if "--hang" in sys.argv:
        hang()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()
