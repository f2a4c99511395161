"""The real Hindsight serving HTTPS with a certificate from a private CA made here (as ACM Private CA would issue one
for the load balancer, or as a task serves with ``hindsight.tls_to_tasks``): ``hindsight-api``'s own TLS
(``--ssl-certfile``/``--ssl-keyfile``, what the deployed API task runs). Without ``HINDSIGHT_CA_BUNDLE`` every client
refuses the certificate, and nothing is lost (the retain is spooled); with the bundle the same clients (the agent's
adapter, the operator's client, ``hindsight_client``) reach it. ``tests/unit/memory_adapter/test_tls.py`` covers the
same clients against a stub server; this proves the server side is real."""

from __future__ import annotations

import asyncio
import io
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hindsight_client import Hindsight

from localdev.hindsight import LocalHindsight, LocalHindsightConfig
from localdev.hindsight.config import ServerTls
from memory_adapter import HindsightRuntimeAdapter, RetainOutcome, TurnContext
from memory_adapter._hindsight_api import HindsightApi
from memory_adapter.admin.cli import main as admin_main
from memory_adapter.admin.client import OperatorClient
from memory_adapter.constants import CA_BUNDLE_ENV
from memory_adapter.exceptions import HindsightUnavailableError
from memory_adapter.identity import format_bank_id
from memory_adapter.tls import ca_bundle_file
from memory_adapter.transport import HttpTransport
from tests.conftest import throwaway_hindsight
from tests.unit.private_ca import PrivateCa, make_private_ca

pytestmark = pytest.mark.integration

_UNTRUSTED = rf"TLS certificate is not trusted .*set {CA_BUNDLE_ENV}"


@pytest.fixture(scope="module")
def private_ca(tmp_path_factory: pytest.TempPathFactory) -> PrivateCa:
    return make_private_ca(tmp_path_factory.mktemp("private-ca"))


@pytest.fixture(scope="module")
def tls_hindsight(private_ca: PrivateCa, token_issuer: Any) -> Iterator[LocalHindsight]:
    """A second real Hindsight (its own data dir and ports), serving only HTTPS with the private CA's certificate."""
    config = LocalHindsightConfig.ephemeral(
        issuer_discovery_url=token_issuer.discovery_url,
        tls=ServerTls(certfile=private_ca.server_cert, keyfile=private_ca.server_key, cafile=private_ca.ca_file),
    )
    with throwaway_hindsight(config) as hindsight:
        yield hindsight


async def _recall_until(adapter: HindsightRuntimeAdapter, ctx: TurnContext, query: str, needle: str) -> Any:
    """Fact extraction runs asynchronously on the server: poll recall until ``needle`` shows up (or 90 s pass)."""
    deadline = time.monotonic() + 90
    while True:
        recollection = await adapter.recall_for_turn(ctx, query)
        if needle in recollection.text.lower() or time.monotonic() > deadline:
            return recollection
        await asyncio.sleep(0.5)


def test_it_serves_https_only(tls_hindsight: LocalHindsight, private_ca: PrivateCa) -> None:
    assert tls_hindsight.url.startswith("https://127.0.0.1:")
    assert tls_hindsight.is_healthy()  # verified against the private CA
    plain = OperatorClient(tls_hindsight.url.replace("https://", "http://"), tls_hindsight.operator_key or "")
    with pytest.raises(HindsightUnavailableError):  # no plain-HTTP answer from the TLS port
        plain.bank_ids()


async def test_without_the_bundle_the_agent_refuses_the_certificate_and_loses_nothing(
    tls_hindsight: LocalHindsight,
    make_adapter: Callable[..., HindsightRuntimeAdapter],
    user_ctx: Callable[..., TurnContext],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN no CA bundle: only the default trust store, which does not know the private CA
    monkeypatch.delenv(CA_BUNDLE_ENV, raising=False)
    adapter = make_adapter(tls_hindsight.url)
    ctx = user_ctx("tls-user-refused", "s1")
    # WHEN the agent retains and recalls
    outcome = await adapter.retain_for_turn(ctx, result="Noted.", query="tls-user-refused keeps a blue kayak.")
    recollection = await adapter.recall_for_turn(ctx, "What does this user keep?")
    # THEN the turn kept going without memory, and the retain waits in the spool (not lost)
    assert outcome is RetainOutcome.SPOOLED
    assert adapter.spooled_retains == 1
    assert recollection.degraded
    assert recollection.text == ""


def test_without_the_bundle_the_operator_client_says_what_to_set(
    tls_hindsight: LocalHindsight, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CA_BUNDLE_ENV, raising=False)
    with pytest.raises(HindsightUnavailableError, match=_UNTRUSTED):
        OperatorClient(tls_hindsight.url, tls_hindsight.operator_key or "").bank_ids()


@pytest.mark.parametrize("given", ["path", "pem"])
async def test_with_the_bundle_the_agent_retains_and_recalls_over_https(
    tls_hindsight: LocalHindsight,
    private_ca: PrivateCa,
    make_adapter: Callable[..., HindsightRuntimeAdapter],
    user_ctx: Callable[..., TurnContext],
    monkeypatch: pytest.MonkeyPatch,
    given: str,
) -> None:
    # GIVEN the private CA as HINDSIGHT_CA_BUNDLE (a file's path, or the PEM as the stack sets it)
    monkeypatch.setenv(CA_BUNDLE_ENV, str(private_ca.ca_file) if given == "path" else private_ca.ca_pem)
    user = f"tls-user-{given}"
    adapter = make_adapter(tls_hindsight.url)
    # WHEN the agent retains a fact and a later turn recalls it
    outcome = await adapter.retain_for_turn(user_ctx(user, "s1"), result="Noted.", query=f"{user} keeps a green kayak.")
    recollection = await _recall_until(adapter, user_ctx(user, "s2"), "What does this user keep?", "kayak")
    # THEN both went through the verified TLS connection
    assert outcome is RetainOutcome.DELIVERED
    assert not recollection.degraded
    assert "green kayak" in recollection.text
    # AND the operator's client and hindsight_client see the same bank over it
    operator = OperatorClient(tls_hindsight.url, tls_hindsight.operator_key or "")
    bank_id = format_bank_id(user=user, agent="support")
    assert bank_id in operator.bank_ids()
    client = Hindsight(base_url=tls_hindsight.url, api_key=tls_hindsight.operator_key)
    client._api_client.configuration.ssl_ca_cert = ca_bundle_file()  # read when its aiohttp session is made
    assert (await client.alist_memories(bank_id)).total >= 1


def _archive_text(archive: bytes) -> str:
    """Every member of a transfer archive (ZIP of JSON tables), as one text."""
    with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
        return "\n".join(zipped.read(name).decode("utf-8", "replace") for name in zipped.namelist())


@pytest.fixture(scope="module")
def exported_bank(tls_hindsight: LocalHindsight, private_ca: PrivateCa, token_issuer: Any) -> str:
    """A user's bank on the HTTPS Hindsight holding one extracted memory (a synchronous retain, with the user's
    token, over the verified connection)."""
    user = "tls-export-user"
    bank_id = format_bank_id(user=user, agent="support")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CA_BUNDLE_ENV, str(private_ca.ca_file))
        api = HindsightApi(HttpTransport(tls_hindsight.url), timeout=60.0, bearer=token_issuer.mint(user, ttl=900))
        api.retain(bank_id, [{"content": "tls-export-user keeps a yellow canoe in the garage."}], wait=True)
        api.transport.close()
    return bank_id


def test_with_the_bundle_the_operator_exports_a_users_memories_over_https(
    tls_hindsight: LocalHindsight, private_ca: PrivateCa, exported_bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the private CA as HINDSIGHT_CA_BUNDLE (the PEM, as the stack sets it)
    monkeypatch.setenv(CA_BUNDLE_ENV, private_ca.ca_pem)
    operator = OperatorClient(tls_hindsight.url, tls_hindsight.operator_key or "")
    # WHEN the operator exports the user's bank (submit, wait, download, drop the server's copy)
    archive = operator.export_archive(exported_bank)
    # THEN the download came over the same verified connection and holds the user's memory
    assert archive is not None
    assert "yellow canoe" in _archive_text(archive)


def test_without_the_bundle_an_export_says_what_to_set(
    tls_hindsight: LocalHindsight, exported_bank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CA_BUNDLE_ENV, raising=False)
    with pytest.raises(HindsightUnavailableError, match=_UNTRUSTED):
        OperatorClient(tls_hindsight.url, tls_hindsight.operator_key or "").export_archive(exported_bank)


@pytest.mark.parametrize("bundle", [True, False])
def test_the_admin_backup_over_https_works_with_the_bundle_and_says_what_to_set_without(
    tls_hindsight: LocalHindsight,
    private_ca: PrivateCa,
    exported_bank: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    bundle: bool,
) -> None:
    # GIVEN the operator's command line pointed at the HTTPS Hindsight, with or without the CA bundle
    if bundle:
        monkeypatch.setenv(CA_BUNDLE_ENV, str(private_ca.ca_file))
    else:
        monkeypatch.delenv(CA_BUNDLE_ENV, raising=False)
    key_file = tmp_path / "operator-key"
    key_file.write_text(tls_hindsight.operator_key or "")
    out = tmp_path / "admin"
    argv = ["--local", "--url", tls_hindsight.url, "--operator-key-file", str(key_file), "--out", str(out)]
    # WHEN it backs up the user's bank (a transfer archive: the export download)
    code = admin_main([*argv, "backup", "--bank", exported_bank])
    printed = capsys.readouterr()
    if bundle:
        # THEN the archive is written and holds the user's memory
        assert code == 0, printed.err
        (archive,) = out.glob("backups/*/banks/*.zip")
        assert "yellow canoe" in _archive_text(archive.read_bytes())
    else:
        # THEN the bank's progress line and the error each name the setting to set, and no traceback
        assert code == 2
        progress, error = printed.err.splitlines()
        assert progress.startswith(f"[1/1] {exported_bank}: failed")
        assert error.startswith("error: no bank could be backed up")
        assert CA_BUNDLE_ENV in progress
        assert CA_BUNDLE_ENV in error
        assert "Traceback" not in printed.err
