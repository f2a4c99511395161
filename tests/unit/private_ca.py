"""A private certificate authority made in the test (as ACM Private CA or a corporate CA would be): its PEM, and a
server certificate it signed for ``localhost`` / ``127.0.0.1``. No trust store knows it."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CA_NAME = "Test Private CA"


@dataclass(frozen=True)
class PrivateCa:
    """The CA's certificate (PEM text and file) and the server's certificate and key files."""

    ca_pem: str
    ca_file: Path
    server_cert: Path
    server_key: Path


def make_private_ca(folder: Path) -> PrivateCa:
    """A fresh CA and a server certificate (EC P-256, valid for a day), written into ``folder``."""
    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _certificate(CA_NAME, ca_key, ca_key, ca=True)
    leaf = _certificate("localhost", server_key, ca_key, ca=False)
    ca_pem = ca.public_bytes(serialization.Encoding.PEM).decode()
    (folder / "ca.pem").write_text(ca_pem)
    (folder / "server.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (folder / "server.key").write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return PrivateCa(ca_pem, folder / "ca.pem", folder / "server.pem", folder / "server.key")


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject: str, key: Any, issuer_key: Any, *, ca: bool) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(CA_NAME))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())
