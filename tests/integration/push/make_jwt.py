#!/usr/bin/python3
"""Signs a JWT with PyJWT (Debian's python3-jwt), not with any Pacer code, so
the fakes' verification is checked against an implementation no one here wrote.

usage: make_jwt.py ALG PRIVATE_KEY_PEM CLAIMS_JSON [HEADERS_JSON]
Claims whose value is "now+N" or "now-N" become integer seconds from now.
"""
import json
import sys
import time

import jwt

alg, key_path, claims = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
headers = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
now = int(time.time())
for k, v in list(claims.items()):
    if isinstance(v, str) and v.startswith("now"):
        claims[k] = now + int(v[3:] or 0)
with open(key_path) as f:
    print(jwt.encode(claims, f.read(), algorithm=alg, headers=headers))
