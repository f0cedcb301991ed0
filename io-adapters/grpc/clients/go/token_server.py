"""A local OAuth 2.0 token endpoint for the Go clients' Application Default Credentials.

The service-account key that run.sh makes names this server as its token_uri, so Google's Go
client (golang.org/x/oauth2/jwt) signs a JWT with the key and posts it here, as it would to
oauth2.googleapis.com. The grant is checked (grant type, issuer, audience, expiry, and the RS256
signature against the key's public half, with openssl) before the fixed access token is handed
out; rowkit then checks that token on every call (`serve --token`), so the bearer travels end to
end. POSTs to /stranger/token get another well-formed token, which rowkit must refuse: run.sh's
control that the check is real. Writes its port to PORT_FILE once listening.

Usage: token_server.py PORT_FILE PUBLIC_KEY_PEM CLIENT_EMAIL ACCESS_TOKEN
"""

import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

PORT_FILE, PUBLIC_KEY, CLIENT_EMAIL, ACCESS_TOKEN = sys.argv[1:5]


def b64url(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def assertion_problem(assertion: str, audience: str):
    """Why the JWT-bearer assertion is not acceptable, or None."""
    parts = assertion.split(".")
    if len(parts) != 3:
        return "assertion is not a JWS"
    header, claims = json.loads(b64url(parts[0])), json.loads(b64url(parts[1]))
    if header.get("alg") != "RS256":
        return f"alg {header.get('alg')}"
    if claims.get("iss") != CLIENT_EMAIL:
        return f"iss {claims.get('iss')}"
    if claims.get("aud") != audience:
        return f"aud {claims.get('aud')}, want {audience}"
    if not claims.get("exp", 0) > time.time():
        return "expired"
    with tempfile.NamedTemporaryFile() as signature, tempfile.NamedTemporaryFile() as signed:
        signature.write(b64url(parts[2]))
        signature.flush()
        signed.write(f"{parts[0]}.{parts[1]}".encode())
        signed.flush()
        verify = subprocess.run(
            ["openssl", "dgst", "-sha256", "-verify", PUBLIC_KEY, "-signature", signature.name, signed.name],
            capture_output=True,
        )
    return None if verify.returncode == 0 else "bad signature"


class TokenHandler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        form = urllib.parse.parse_qs(body)
        audience = f"http://{self.headers['Host']}{self.path}"
        problem = None
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            problem = f"grant_type {form.get('grant_type')}"
        else:
            problem = assertion_problem(form.get("assertion", [""])[0], audience)
        if problem:
            self.reply(400, {"error": "invalid_grant", "error_description": problem})
        else:
            token = "stranger-" + ACCESS_TOKEN if self.path.startswith("/stranger/") else ACCESS_TOKEN
            self.reply(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600})

    def reply(self, status, doc):
        payload = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, fmt, *args):
        sys.stderr.write("token_server: " + fmt % args + "\n")


server = HTTPServer(("127.0.0.1", 0), TokenHandler)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
# Renamed into place so a reader never sees a half-written port.
os.replace(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
