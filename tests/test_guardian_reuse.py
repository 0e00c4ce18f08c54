"""The guardian ends the sessions the service started, never one whose id was handed out again to a stranger."""

from __future__ import annotations

import subprocess

from bbrowse.service.guardian import Guardian, start_time


def test_a_session_whose_id_now_leads_another_process_is_left_alone() -> None:
    ours = subprocess.Popen(["sleep", "60"], start_new_session=True)
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        guardian = Guardian(service_pid=0)
        guardian.register(ours.pid)
        guardian.register(stranger.pid)
        # As if the leader we were told of had exited and its id gone to a new, unrelated session leader:
        # a process with that pid exists, but it is not the one that started when we registered it.
        started = start_time(stranger.pid)
        assert started is not None
        guardian.started[stranger.pid] = started - 1
        assert not guardian.reused(ours.pid) and guardian.reused(stranger.pid)
        killed, sessions = guardian.end_all()
        assert (killed, sessions) == (1, 1)
        assert ours.wait(5) == -9
        assert stranger.poll() is None  # the stranger runs on
    finally:
        for process in (ours, stranger):
            process.kill()
            process.wait()
