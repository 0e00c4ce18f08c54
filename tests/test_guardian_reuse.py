"""The guardian ends the sessions the service started, never one whose id was handed out again to a stranger."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from bbrowse.service.guardian import Guardian, process_stat, start_time


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


def _leader_with_a_job() -> tuple[subprocess.Popen, int]:
    """A session leader that started a background job and waits for its stdin to close: (leader, job's pid)."""
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; read _ || true"], start_new_session=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert leader.stdout is not None
    return leader, int(leader.stdout.readline())


def test_a_session_whose_id_went_to_a_stranger_who_also_exited_is_left_alone() -> None:
    """The stranger's leader exited too, leaving a job in its session: no process has the id as its pid any
    more, and only when the processes in the session started tells ours (in it since before our leader was
    seen gone) from the stranger's (which began after)."""
    ours, our_job = _leader_with_a_job()
    stranger, strangers_job = _leader_with_a_job()
    try:
        guardian = Guardian(service_pid=0)
        guardian.register(ours.pid)
        guardian.register(stranger.pid)
        for leader in (ours, stranger):
            assert leader.stdin is not None
            leader.stdin.close()
            assert leader.wait(5) == 0
        for _ in range(50):  # until the guardian has seen both leaders gone
            for fd, _ in guardian.poller.poll(0.1):
                guardian.leader_exited(fd)
            if {ours.pid, stranger.pid} <= guardian.gone_at.keys():
                break
        assert {ours.pid, stranger.pid} <= guardian.gone_at.keys()
        # As if the id of the leader we were told of had gone to the stranger: seen gone before its job began.
        started = start_time(strangers_job)
        assert started is not None
        guardian.gone_at[stranger.pid] = started - 1
        killed, sessions = guardian.end_all()
        assert (killed, sessions) == (1, 1)
        assert start_time(our_job) is None or _state(our_job) == "Z"
        assert start_time(strangers_job) is not None and _state(strangers_job) != "Z"  # the stranger's job runs on
    finally:
        for pid in (our_job, strangers_job):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _state(pid: int) -> str | None:
    stat = process_stat(pid)
    return None if stat is None else stat[1][0].decode()
