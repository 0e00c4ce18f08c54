"""The service reaps a child that its owner left a zombie, at the second look and not before, and says so."""

from __future__ import annotations

import logging
import os
import time

from bbrowse.service.stray_children import StrayReaper, zombie_children


def _unreaped_child() -> int:
    """A child of this process that exits at once with status 3 and that nobody waits for: a zombie."""
    pid = os.fork()
    if pid == 0:
        os._exit(3)
    deadline = time.monotonic() + 10
    while pid not in zombie_children(os.getpid()):
        assert time.monotonic() < deadline, f"{pid} never became a zombie"
        time.sleep(0.01)
    return pid


def test_a_zombie_is_reaped_at_the_second_look_and_logged(caplog) -> None:
    pid = _unreaped_child()
    name = zombie_children(os.getpid())[pid]
    try:
        reaper = StrayReaper(interval=30)
        assert reaper.look() == []  # first seen: its owner may be about to reap it
        assert pid in zombie_children(os.getpid())
        with caplog.at_level(logging.WARNING, logger="bbrowse.service"):
            # every zombie child seen twice is reaped: in a test worker, one another test left may be among them
            reaped = reaper.look()
        assert f"{name} ({pid})" in reaped
        assert pid not in zombie_children(os.getpid())
        assert any(f"{name} ({pid})" in record.getMessage() for record in caplog.records)
        assert reaper.reaped == len(reaped)
    finally:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def test_a_child_its_owner_reaps_in_between_is_left_to_the_owner() -> None:
    pid = _unreaped_child()
    reaper = StrayReaper(interval=30)
    assert reaper.look() == []
    _, status = os.waitpid(pid, 0)  # the owner collects the exit status itself
    assert os.waitstatus_to_exitcode(status) == 3
    assert reaper.look() == []
    assert reaper.reaped == 0
