"""The issuer's RSA signing key: generated, published as a JWK, and kept in the data dir so separate processes agree."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

__all__ = ["SigningKey", "load_or_create_key"]

_KEY_FILE = "signing-key.pem"
_KID_FILE = "kid"


class SigningKey:
    """An RSA private key and the ``kid`` it is published under."""

    def __init__(self, private_key: rsa.RSAPrivateKey, kid: str) -> None:
        self.private_key = private_key
        self.kid = kid

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(rsa.generate_private_key(public_exponent=65537, key_size=2048), f"local-{uuid.uuid4().hex[:12]}")

    def public_jwk(self) -> dict[str, Any]:
        jwk: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(self.private_key.public_key()))
        jwk.update({"kid": self.kid, "alg": "RS256", "use": "sig"})
        return jwk

    def to_pem(self) -> bytes:
        return self.private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )


def load_or_create_key(data_dir: Path) -> SigningKey:
    """The key persisted in ``data_dir`` (created, mode 0600, on first use), so separate processes agree."""
    data_dir.mkdir(parents=True, exist_ok=True)
    key_path = data_dir / _KEY_FILE
    kid_path = data_dir / _KID_FILE
    if key_path.exists() and kid_path.exists():
        private = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        if not isinstance(private, rsa.RSAPrivateKey):
            raise ValueError(f"{key_path} does not hold an RSA key")
        return SigningKey(private, kid_path.read_text().strip())
    key = SigningKey.generate()
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key.to_pem())
    kid_path.write_text(key.kid)
    return key
