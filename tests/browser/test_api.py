"""The app's API through gradio_client: one comparison by preset names."""

from __future__ import annotations

import pytest
from gradio_client import Client

pytestmark = pytest.mark.server


def test_compare_endpoint(app_url: str) -> None:
    client = Client(app_url, verbose=False)
    result = client.predict("北京市朝阳区建国路88号 王建国 13812345678",
                            ["fixed-64-stream", "fixed-64-nonstream"], api_name="/compare")
    stream, non_stream = result
    assert stream["variant"]["name"] == "fixed-64-stream"
    assert stream["metrics"]["ttft_ms"] > 0 and stream["metrics"]["completion_tokens"] == 64
    assert non_stream["metrics"]["ttft_ms"] is None
    assert non_stream["metrics"]["e2e_ms"] > 0
    assert "api_key" not in str(result).lower()


def test_compare_endpoint_unknown_preset(app_url: str) -> None:
    client = Client(app_url, verbose=False)
    with pytest.raises(Exception, match="unknown preset"):
        client.predict("x", ["nope"], api_name="/compare")
