"""The local-model benches on a CUDA device (gpu tier: `pytest -m gpu`; skipped without CUDA):
the naive baseline and the cached decoder both run there and measure real work."""

from __future__ import annotations

import pytest
from test_bench_smoke import SMOKE, json_lines, load

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["local_episodes", "latency"])
def test_local_model_bench_smoke_on_cuda(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    load(name).main(["--smoke"])
    res = json_lines(capsys.readouterr().out)
    SMOKE[name](res)
    if name == "local_episodes":
        assert res[0]["device"].startswith("cuda")
