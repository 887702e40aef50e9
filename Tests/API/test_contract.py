"""The service's OpenAPI document: valid, fuzzed against a live service with every
schemathesis check, and usable by a generated Python client."""
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import DOCUMENT

HERE = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
MIN_REQUESTS = 1000


def post(base, path, body, headers=None):
    request = urllib.request.Request(f"{base}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_document_is_valid_openapi_31():
    result = subprocess.run([str(VENV_BIN / "openapi-spec-validator"), str(DOCUMENT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(DOCUMENT.read_text())["openapi"] == "3.1.0"


def test_the_service_serves_the_document(service):
    with urllib.request.urlopen(f"{service.base}/openapi.json", timeout=10) as answer:
        assert answer.headers["Content-Type"] == "application/json"
        assert answer.read() == DOCUMENT.read_bytes()


def test_a_url_to_another_host_never_leaves_the_machine(service, proxy, origin):
    """The egress rule the fuzzing relies on: a URL naming a host that is not loopback is
    handed to the proxy (which refuses it) instead of being resolved or connected to. Were the
    service to bypass the proxy, the refused list would not name the host and this would fail."""
    status, document = post(service.base, "/v1/attachments",
                            {"urls": ["http://media.invalid.example/a.jpg", origin.url("photo.jpg")]})
    assert status == 200
    leaving, local = document["attachments"]
    # The proxy's 403, as libcurl reports a refused proxy request.
    assert leaving["status"] == "failed" and leaving["reason"]["code"] in ("httpStatus", "connectFailed"), leaving
    assert local["status"] == "ready", local
    assert "media.invalid.example:80" in proxy.refused
    assert all(target.rsplit(":", 1)[0] in ("127.0.0.1", "::1", "[::1]", "localhost") for target in proxy.allowed)


def test_schemathesis_finds_nothing_in_a_thousand_requests(service, keyless_service, proxy, origin, tmp_path):
    """Against the service with a media key and the one without, side by side: each run is one
    Python process that spends much of its time waiting for the service's answers."""
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "hooks", "ATTACH_FETCH_TEST_ORIGIN": f"http://127.0.0.1:{origin.port}",
           "PYTHONPATH": str(HERE), "SCHEMATHESIS_TELEMETRY": "false", "NO_COLOR": "1"}
    runs = {}
    try:
        for which, target in (("with a media key", service), ("without a media key or publishing", keyless_service)):
            directory = tmp_path / which.replace(" ", "-")
            directory.mkdir()
            # Output to a file: a pipe left unread while the other run is waited for could block it.
            with open(directory / "st.log", "w") as log:
                runs[which] = (subprocess.Popen(
                    [str(VENV_BIN / "st"), "run", str(DOCUMENT), "--url", target.base, "--checks", "all",
                     "--max-examples", "100", "--seed", "20261126", "--no-color", "--report", "junit",
                     "--report-dir", str(directory / "report"), "--request-timeout", "30"],
                    stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(directory)), directory / "st.log")
        deadline = time.monotonic() + 1800
        for run, _ in runs.values():
            run.wait(timeout=max(1, deadline - time.monotonic()))
    finally:
        for run, _ in runs.values():
            if run.poll() is None:
                run.kill()
                run.wait()
    outputs = {which: log.read_text() for which, (_, log) in runs.items()}
    for which, output in outputs.items():
        print(f"--- {which}\n{output[-4000:]}")
    for which, output in outputs.items():
        generated = re.search(r"(\d+) generated", output)
        assert generated, f"{which}: {output[-2000:]}"
        assert int(generated.group(1)) >= MIN_REQUESTS, f"{which}: only {generated.group(1)} requests generated"
        assert runs[which][0].returncode == 0, f"{which}: {output[-6000:]}"
    # Every fetch the runs caused went through the proxy, and only loopback got through.
    assert all(target.rsplit(":", 1)[0] in ("127.0.0.1", "::1", "[::1]", "localhost") for target in proxy.allowed)


def test_a_generated_python_client_sends_reads_and_fails_typed(service, origin, tmp_path):
    subprocess.run([str(VENV_BIN / "openapi-python-client"), "generate", "--path", str(DOCUMENT),
                    "--output-path", str(tmp_path / "client"), "--meta", "none"], check=True, capture_output=True, text=True)
    program = f'''
import sys
sys.path.insert(0, {str(tmp_path)!r})
from client import Client
from client.api.default import process_attachments
from client.models import AttachmentsByURLs, BatchDocument, Error, AttachmentDescriptorStatus, ErrorErrorCode

api = Client(base_url={service.base!r})
answer = process_attachments.sync(client=api, body=AttachmentsByURLs(urls=[{origin.url("photo.jpg")!r}]))
assert isinstance(answer, BatchDocument), answer
photo = answer.attachments[0]
assert photo.status == AttachmentDescriptorStatus.READY, photo
assert photo.width > 0 and photo.thumbnail.width > 0 and len(photo.sha256) == 64
refused = process_attachments.sync(client=api, body=AttachmentsByURLs(urls=[]))
assert isinstance(refused, Error), refused
assert refused.error.code == ErrorErrorCode.INVALIDREQUEST and "urls" in refused.error.message, refused.error.message
print("ok")
'''
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "ok" in result.stdout, result.stdout + result.stderr


def test_encrypt_without_a_media_key_is_409_not_configured(keyless_service, origin):
    for path, body in (("/v1/attachments", {"urls": [origin.url("photo.jpg")], "encrypt": True}),
                       ("/v1/payloads?encrypt=true", {"aps": {"alert": "a", "mutable-content": 1}, "image_url": origin.url("photo.jpg")})):
        status, document = post(keyless_service.base, path, body)
        assert status == 409, (path, status, document)
        assert document["error"]["code"] == "notConfigured" and "media key" in document["error"]["message"], document



def test_rewrite_on_a_service_that_does_not_publish_is_409_not_configured(keyless_service):
    status, document = post(keyless_service.base, "/v1/payloads?rewrite=true", {})
    assert status == 409, (status, document)
    assert document["error"]["code"] == "notConfigured" and "publish" in document["error"]["message"], document
