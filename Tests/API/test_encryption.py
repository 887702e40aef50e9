"""Encrypted media against an implementation we did not write: `http_ece`, by RFC 8188's author.

What `attach-fetch serve --encrypt-media` publishes is decrypted by `http_ece` to exactly the
delivered bytes, and what `http_ece` encrypts (any record size, with or without a key id) is
decrypted by `attach-fetch decrypt`, which uses the same decoder as the device library."""
import base64
import hashlib
import os
import subprocess
from pathlib import Path

import http_ece

from conftest import BINARY, MEDIA, Service
from test_contract import post


def b64url(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_http_ece_decrypts_everything_the_service_publishes(proxy, origin, tmp_path):
    key_file = tmp_path / "media.key"
    key_file.write_bytes(os.urandom(32))
    key_file.chmod(0o600)
    service = Service(proxy, tmp_path, extra=["--encrypt-media", "--media-key-file", str(key_file)])
    try:
        status, document = post(service.base, "/v1/attachments",
                                {"urls": [origin.url("photo.jpg"), origin.url("clip.mp4"), origin.url("image.webp")]})
        assert status == 200, document
        checked = 0
        for descriptor in document["attachments"]:
            assert descriptor["status"] == "ready", descriptor
            things = [(Path(descriptor["file"]).read_bytes(), descriptor)]
            if "thumbnail" in descriptor:
                things.append((Path(descriptor["thumbnail"]["file"]).read_bytes(), descriptor["thumbnail"]))
            for plaintext, published in things:
                name = published["publishedUrl"].rsplit("/", 1)[1]
                ciphertext = (service.publish / name).read_bytes()
                assert name.endswith(".aes128gcm") and len(ciphertext) == published["publishedBytes"]
                assert published["encryption"]["scheme"] == "aes128gcm"
                decrypted = http_ece.decrypt(ciphertext, key=unb64url(published["encryption"]["key"]), version="aes128gcm")
                assert decrypted == plaintext, name
                checked += 1
            # The delivered file of a JPEG is the origin's own bytes, and sha256 is the plaintext's.
            if descriptor["url"].endswith("photo.jpg"):
                assert things[0][0] == (MEDIA / "photo.jpg").read_bytes()
            assert hashlib.sha256(things[0][0]).hexdigest() == descriptor["sha256"]
        assert checked >= 6
        key_text = key_file.read_bytes()
        assert not any(key_text in path.read_bytes() for path in service.publish.iterdir())
    finally:
        service.stop()


def run_decrypt(tmp_path, ciphertext, key, sha256=None):
    source, target, key_path = tmp_path / "in.bin", tmp_path / "out.bin", tmp_path / "key.txt"
    for path in (target,):
        if path.exists():
            path.unlink()
    source.write_bytes(ciphertext)
    key_path.write_text(b64url(key))
    key_path.chmod(0o600)
    arguments = [str(BINARY), "decrypt", "--key-file", str(key_path), str(source), str(target)]
    if sha256:
        arguments[4:4] = ["--sha256", sha256]
    result = subprocess.run(arguments, capture_output=True, text=True)
    return result, (target.read_bytes() if target.exists() else None)


def test_attach_fetch_decrypts_what_http_ece_encrypts(tmp_path):
    data = os.urandom(300_000)
    for record_size in (18 + 5, 4096, 65536):
        for keyid in (None, "a1"):
            key = os.urandom(16)
            ciphertext = http_ece.encrypt(data, salt=os.urandom(16), key=key, rs=record_size, keyid=keyid, version="aes128gcm")
            result, plaintext = run_decrypt(tmp_path, ciphertext, key, hashlib.sha256(data).hexdigest())
            assert result.returncode == 0, (record_size, keyid, result.stderr)
            assert plaintext == data, (record_size, keyid)


def test_a_wrong_key_a_flipped_byte_and_a_cut_stream_are_refused_and_leave_nothing(tmp_path):
    data = os.urandom(50_000)
    key = os.urandom(16)
    ciphertext = http_ece.encrypt(data, salt=os.urandom(16), key=key, rs=4096, version="aes128gcm")
    flipped = bytearray(ciphertext)
    flipped[30_000] ^= 0x10
    header = 21
    cases = [
        (ciphertext, os.urandom(16), "authenticationFailed"),
        (bytes(flipped), key, "authenticationFailed"),
        (ciphertext[: header + 4096 * 5], key, "truncated"),
    ]
    for body, used_key, code in cases:
        result, plaintext = run_decrypt(tmp_path, body, used_key)
        assert result.returncode == 1 and code in result.stderr, result.stderr
        assert plaintext is None, "no partial plaintext is left"
        assert b64url(used_key) not in result.stderr
    result, plaintext = run_decrypt(tmp_path, ciphertext, key, "0" * 64)
    assert result.returncode == 1 and "SHA-256" in result.stderr and plaintext is None
    assert "hashMismatch" in result.stderr and "malformed" not in result.stderr, result.stderr


def test_decrypt_names_an_output_that_exists_and_leaves_it_alone(tmp_path):
    data = os.urandom(5_000)
    key = os.urandom(16)
    ciphertext = http_ece.encrypt(data, salt=os.urandom(16), key=key, rs=4096, version="aes128gcm")
    source, target, key_path = tmp_path / "in.bin", tmp_path / "out.bin", tmp_path / "key.txt"
    source.write_bytes(ciphertext)
    key_path.write_text(b64url(key))
    key_path.chmod(0o600)
    target.write_bytes(b"already here")
    result = subprocess.run([str(BINARY), "decrypt", "--key-file", str(key_path), str(source), str(target)],
                            capture_output=True, text=True)
    assert result.returncode == 2, result
    assert str(target) in result.stderr and "already exists" in result.stderr, result.stderr
    assert "USAGE" not in result.stderr.upper(), "the error, not the usage text"
    assert target.read_bytes() == b"already here"


def test_decrypt_refuses_a_key_file_others_can_read(tmp_path):
    key = os.urandom(16)
    ciphertext = http_ece.encrypt(b"secret media", salt=os.urandom(16), key=key, rs=4096, version="aes128gcm")
    source, target, key_path = tmp_path / "in.bin", tmp_path / "out.bin", tmp_path / "key.txt"
    source.write_bytes(ciphertext)
    key_path.write_text(b64url(key))
    key_path.chmod(0o644)
    result = subprocess.run([str(BINARY), "decrypt", "--key-file", str(key_path), str(source), str(target)],
                            capture_output=True, text=True)
    assert result.returncode != 0, result
    assert "chmod 600" in result.stderr and b64url(key) not in result.stderr, result.stderr
    assert not target.exists()
