"""The fault servers fail the way their names say: hung, refused, 503."""

from __future__ import annotations

import httpx
import pytest


def test_hung_url_accepts_but_never_answers(hung_url):
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(f"{hung_url}/health", timeout=httpx.Timeout(5.0, read=0.3))


def test_refused_url_refuses_connections(refused_url):
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{refused_url}/health", timeout=5.0)


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE"])
def test_failing_url_answers_503_to_everything(failing_url, method):
    response = httpx.request(method, f"{failing_url}/v1/default/banks/b/memories", json={"x": 1}, timeout=5.0)
    assert response.status_code == 503
