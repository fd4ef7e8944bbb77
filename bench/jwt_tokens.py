#!/usr/bin/env python3
"""Makes the keys and tokens of bench/jwt.sh with PyJWT and cryptography, and times PyJWT's own verification.

Usage: jwt_tokens.py make DIR COUNT   -> DIR/jwks.json (an oct key "hs", an EC P-256 key "es"), DIR/hs256.txt and
                                          DIR/es256.txt (COUNT distinct tokens each: a different jti, so every one
                                          is a cold verification), DIR/es256.pem (the private key)
       jwt_tokens.py time DIR ROUNDS  -> PyJWT's jwt.decode per token (thread CPU time, median of ROUNDS rounds over
                                          all the tokens), one line per algorithm: "pyjwt HS256 <ns>"
"""
import base64
import json
import os
import statistics
import sys
import time

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

SECRET = b"0123456789abcdef0123456789abcdef"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make(directory: str, count: int) -> None:
    os.makedirs(directory, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    numbers = key.public_key().public_numbers()
    jwks = {"keys": [
        {"kty": "oct", "kid": "hs", "k": b64(SECRET)},
        {"kty": "EC", "kid": "es", "crv": "P-256",
         "x": b64(numbers.x.to_bytes(32, "big")), "y": b64(numbers.y.to_bytes(32, "big"))},
    ]}
    with open(os.path.join(directory, "jwks.json"), "w") as out:
        json.dump(jwks, out)
    with open(os.path.join(directory, "es256.pem"), "wb") as out:
        out.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    expires = int(time.time()) + 86400 * 30
    for name, signing, alg, kid in (("hs256", SECRET, "HS256", "hs"), ("es256", key, "ES256", "es")):
        with open(os.path.join(directory, name + ".txt"), "w") as out:
            for index in range(count):
                claims = {"sub": "bench-%d" % index, "jti": "%d" % index, "exp": expires,
                          "spout": {"subscribe": ["bench.*"], "publish": ["bench.*"]}}
                out.write(jwt.encode(claims, signing, algorithm=alg, headers={"kid": kid}) + "\n")


def time_pyjwt(directory: str, rounds: int) -> None:
    with open(os.path.join(directory, "es256.pem"), "rb") as source:
        public = serialization.load_pem_private_key(source.read(), None).public_key()
    for name, key, alg in (("hs256", SECRET, "HS256"), ("es256", public, "ES256")):
        with open(os.path.join(directory, name + ".txt")) as source:
            tokens = source.read().split()
        per_token = []
        for _ in range(rounds):
            start = time.thread_time_ns()
            for token in tokens:
                jwt.decode(token, key, algorithms=[alg])
            per_token.append((time.thread_time_ns() - start) / len(tokens))
        print("pyjwt %s %.0f" % (alg, statistics.median(per_token)))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]))
    else:
        time_pyjwt(sys.argv[2], int(sys.argv[3]))
