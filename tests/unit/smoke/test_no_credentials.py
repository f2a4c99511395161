"""``make smoke`` without AWS credentials says what to do (set AWS_PROFILE, or use --local), in one line."""

from __future__ import annotations

import io
from pathlib import Path

import boto3
import pytest

from smoke.__main__ import main


def test_no_credentials_names_aws_profile_and_local(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # GIVEN no credentials anywhere botocore looks
    for name in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "empty"
    empty.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    out = io.StringIO()
    # WHEN the deployed smoke runs
    code = main([], out=out, session=boto3.Session(region_name="us-east-1"))
    # THEN it fails setup with one line naming both ways forward
    assert code == 2
    (line,) = [line for line in out.getvalue().splitlines() if line.startswith("SMOKE SETUP FAILED")]
    assert "NoCredentialsError" in line
    assert "AWS_PROFILE" in line
    assert "--local" in line
