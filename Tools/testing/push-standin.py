#!/usr/bin/python3
"""A push service stand-in, on loopback, for Web Push tests: what a browser's push service does
with a push, checked as strictly as the real ones check it.

    push-standin.py STATE_DIR     (prints "listening PORT" when up)

GET  /subscribe/NAME     makes a subscription as a browser would (a P-256 key pair and a 16-byte
                         auth secret, kept here) and answers its PushSubscription JSON, with the
                         endpoint http://127.0.0.1:PORT/push/NAME.
POST /script/NAME        the answers to give NAME's next pushes, in turn: a JSON list of status
                         codes and "drop" (close the connection without answering); then 201.
POST /push/NAME          a push: the VAPID header (RFC 8292) is verified (ES256 over the JWT,
                         with the key in k=; aud is this service's origin; exp in the future, at
                         most 24 h away), the body decrypted with NAME's keys (RFC 8291,
                         aes128gcm, with http-ece from PyPI); each push taken is one JSON line in
                         STATE_DIR/deliveries.jsonl: {"name", "payload", "ttl", "at"}; one that
                         fails a check is answered 400 and written to STATE_DIR/refused.jsonl.
GET  /deliveries         every delivery so far, as a JSON list.
GET  /attempts/NAME      how many pushes NAME's endpoint was sent, answered or not.
"""
import base64
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


STATE = sys.argv[1]
LOCK = threading.Lock()
SUBSCRIPTIONS = {}  # name -> (private key, auth secret)
SCRIPTS = {}  # name -> [answers]
ATTEMPTS = {}  # name -> pushes received


def record(file, entry):
    with LOCK, open(os.path.join(STATE, file), "a") as f:
        f.write(json.dumps(entry) + "\n")


def check_vapid(header, origin):
    """The problem with a VAPID Authorization header, or None."""
    if not header.startswith("vapid "):
        return "no vapid scheme"
    fields = dict(part.strip().split("=", 1) for part in header[6:].split(","))
    token, key = fields.get("t"), fields.get("k")
    if not token or not key:
        return "t= and k= are needed"
    signing_input, _, signature = token.rpartition(".")
    head, _, claims = signing_input.partition(".")
    if json.loads(unb64url(head)) != {"typ": "JWT", "alg": "ES256"}:
        return "not an ES256 JWT"
    raw = unb64url(signature)
    if len(raw) != 64:
        return "the signature is not 64 bytes"
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(key))
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    try:
        public.verify(der, signing_input.encode(), ec.ECDSA(hashes.SHA256()))
    except Exception:
        return "the signature does not verify"
    c = json.loads(unb64url(claims))
    if c.get("aud") != origin:
        return f"aud {c.get('aud')} is not {origin}"
    if not (time.time() < c.get("exp", 0) <= time.time() + 86400):
        return "exp is not within 24 h"
    if not str(c.get("sub", "")).startswith(("mailto:", "https://")):
        return "sub is not mailto: or https:"
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        port = self.server.server_address[1]
        if self.path.startswith("/subscribe/"):
            name = self.path.split("/")[2]
            private = ec.generate_private_key(ec.SECP256R1())
            auth = os.urandom(16)
            with LOCK:
                SUBSCRIPTIONS[name] = (private, auth)
            public = private.public_key().public_bytes(
                serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
            )
            body = {
                "endpoint": f"http://127.0.0.1:{port}/push/{name}",
                "expirationTime": None,
                "keys": {"p256dh": b64url(public), "auth": b64url(auth)},
            }
            return self.answer(200, json.dumps(body).encode())
        if self.path.startswith("/attempts/"):
            with LOCK:
                n = ATTEMPTS.get(self.path.split("/")[2], 0)
            return self.answer(200, str(n).encode())
        if self.path == "/deliveries":
            path = os.path.join(STATE, "deliveries.jsonl")
            lines = open(path).read().splitlines() if os.path.exists(path) else []
            return self.answer(200, json.dumps([json.loads(l) for l in lines]).encode())
        self.answer(404)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        port = self.server.server_address[1]
        if self.path.startswith("/script/"):
            with LOCK:
                SCRIPTS[self.path.split("/")[2]] = json.loads(body)
            return self.answer(204)
        if not self.path.startswith("/push/"):
            return self.answer(404)
        name = self.path.split("/")[2]
        with LOCK:
            ATTEMPTS[name] = ATTEMPTS.get(name, 0) + 1
            script = SCRIPTS.get(name) or []
            scripted = script.pop(0) if script else 201
        if scripted == "drop":
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if scripted != 201:
            return self.answer(scripted)
        problem = check_vapid(self.headers.get("Authorization", ""), f"http://127.0.0.1:{port}")
        if not problem and self.headers.get("Content-Encoding") != "aes128gcm":
            problem = "Content-Encoding is not aes128gcm"
        if not problem and not self.headers.get("TTL", "").isdigit():
            problem = "no TTL"
        payload = None
        if not problem:
            with LOCK:
                keys = SUBSCRIPTIONS.get(name)
            if not keys:
                return self.answer(404)
            try:
                payload = http_ece.decrypt(body, private_key=keys[0], auth_secret=keys[1], version="aes128gcm").decode()
            except Exception as e:
                problem = f"cannot decrypt: {e}"
        if problem:
            record("refused.jsonl", {"name": name, "problem": problem})
            return self.answer(400, problem.encode())
        record("deliveries.jsonl", {"name": name, "payload": payload, "ttl": self.headers.get("TTL"), "at": time.time()})
        self.answer(201)


def outlive_no_test(parent=os.getppid()):
    """Ends this process when the test that started it has gone, however it went (SIGKILL
    included: this process is then another's child)."""
    while os.getppid() == parent:
        time.sleep(0.25)
    os._exit(0)


# SIGTERM, which a Swift test process blocks and its children inherit blocked, ends it again.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
threading.Thread(target=outlive_no_test, daemon=True).start()
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"listening {server.server_address[1]}", flush=True)
server.serve_forever()
