"""A light version of bench/load.py in the suite: shells echoing, log streams and spawn/exit cycles at once.

The service is this module's own (its descriptors and memory are measured, so nothing else may use
it), with no Chromium: shells, logs and processes use no browser. Afterwards it must hold no more
descriptors than before, have no zombie children, and be back within 10 % of its RSS. The heavy version
(50 shells, 100 streams, 1,000 cycles, steady state against steady state) is `.venv/bin/python
bench/load.py`; its figures are in docs/reliability.md.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ServiceHandle, session_area, start_service, stop_service

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from load import FD_SLACK, RSS_SLACK, LoadConfig, run_load

LIGHT = LoadConfig(shells=10, echoes=20, streams=20, log_lines=500, cycles=200)


@pytest.fixture(scope="module")
def own_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceHandle]:
    handle = start_service(tmp_path_factory.mktemp("load-state"),
                           extra_env={"BBROWSE_CHROMIUM": "/nonexistent/chromium"})
    yield handle
    stop_service(handle)


async def test_shells_streams_and_cycles_at_once_leave_no_fds_zombies_or_memory_behind(
    own_service: ServiceHandle,
) -> None:
    report = await run_load(own_service.url, own_service.token, own_service.pid,
                            lambda sid: session_area(own_service, sid, "load"), LIGHT)
    print("\n" + "\n".join(report.lines()))
    assert len(report.echo_ms) == LIGHT.shells * LIGHT.echoes
    assert report.stream_lines == [LIGHT.log_lines] * LIGHT.streams and report.streams_in_order
    assert report.cycles_done == LIGHT.cycles and report.cycle_exit_codes == {0, 1, 2}
    assert report.after is not None
    assert report.after.zombies == []
    assert report.fd_leak <= FD_SLACK, report.lines()
    assert report.rss_growth <= RSS_SLACK, report.lines()
    # a stalled stdin or output path, or a service loop held by a spawn (2 s: the fork wait), shows as seconds;
    # a busy 2-core machine gives tens to hundreds of milliseconds, beyond what this process's own loop was late
    assert report.percentile(0.99) < 1500 + report.client_lag_ms, report.lines()
