"""Trusting a private certificate authority for HTTPS to Hindsight: one setting that every client reads.

An internal name (``memory.internal.example.com``) usually has a certificate from a private CA (ACM Private CA, a
corporate CA), which the default trust store does not know: every recall would degrade and every queued retain
would wait. ``HINDSIGHT_CA_BUNDLE`` names the CA's certificates, as a PEM file's path or as the PEM text itself
(what the stack sets, from ``cdk.json``'s ``hindsight.ca_bundle``). They are trusted *in addition to* the default
store, so a publicly trusted certificate keeps working.

Every client of Hindsight uses it: :class:`~memory_adapter.transport.HttpTransport`, the one transport (the agent's
turns, the replay function, the gateway target, the admin functions, the redrive command, the isolation probe).
Standard library only; ``ssl`` is imported on the first HTTPS connection.

Example:
    >>> os.environ["HINDSIGHT_CA_BUNDLE"] = "/etc/ssl/private-ca.pem"
    >>> HttpTransport("https://memory.internal.example.com")   # trusts the private CA and the public ones
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from memory_adapter.constants import CA_BUNDLE_ENV
from memory_adapter.exceptions import ConfigurationError
from memory_adapter.settings_fields import HindsightClientSettings, read_declared
from memory_adapter.settings_reader import SettingsReader

if TYPE_CHECKING:
    import ssl

__all__ = ["ca_bundle_file", "ssl_context"]

_PEM_CERTIFICATE: Final = "-----BEGIN CERTIFICATE-----"


def ca_bundle_file(env: Mapping[str, str] | None = None) -> str | None:
    """The PEM file of ``HINDSIGHT_CA_BUNDLE`` (inline PEM is written once to a private temporary file), or None.

    Raises:
        ConfigurationError: The file does not exist, cannot be read or holds no PEM certificate.
    """
    reader = SettingsReader(os.environ if env is None else env)
    value = read_declared(HindsightClientSettings, reader, only=("ca_bundle",))["ca_bundle"]
    if not value:
        return None
    if value.startswith(_PEM_CERTIFICATE):
        return _inline_file(value)
    path = Path(value)
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError as exc:
        raise ConfigurationError(
            f"{CA_BUNDLE_ENV}={value[:200]!r} cannot be read ({type(exc).__name__}): give a PEM file's path or the PEM",
            subject="TLS",
        ) from exc
    if _PEM_CERTIFICATE not in text:
        raise ConfigurationError(f"{CA_BUNDLE_ENV}={value[:200]!r} holds no PEM certificate", subject="TLS")
    return str(path)


def ssl_context(env: Mapping[str, str] | None = None) -> ssl.SSLContext:
    """A verifying client context: the default trust store plus ``HINDSIGHT_CA_BUNDLE``'s certificates."""
    import ssl

    context = ssl.create_default_context()
    bundle = ca_bundle_file(env)
    if bundle is not None:
        try:
            context.load_verify_locations(cafile=bundle)
        except ssl.SSLError as exc:
            raise ConfigurationError(f"{CA_BUNDLE_ENV} is not a usable PEM bundle: {exc}", subject="TLS") from exc
    return context


def _inline_file(pem: str) -> str:
    """Inline PEM as a file (``hindsight_client`` and ``load_verify_locations`` take a path); same PEM, same file."""
    digest = hashlib.sha256(pem.encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"hindsight-ca-{digest}.pem"
    if not path.exists():
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".hindsight-ca-")
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(pem if pem.endswith("\n") else pem + "\n")
        os.replace(tmp, path)  # atomic: a concurrent reader sees the whole file or none
    return str(path)
