"""BacklogFilter: after a reconnect, the part of the output the service sends again is shown once."""

from __future__ import annotations

import os

from bbrowse.client.backlog_filter import NEEDLE_BYTES, BacklogFilter, RecentOutput


def shown_after_reconnect(recent: bytes, arriving: list[bytes]) -> bytes:
    backlog = BacklogFilter(recent)
    shown = b"".join(backlog.feed(chunk) for chunk in arriving)
    return shown + backlog.flush()


def test_a_replayed_backlog_is_dropped_and_what_follows_is_shown() -> None:
    history = b"".join(b"line %d of the session\r\n" % i for i in range(5000))
    recent = history[-200_000:]
    backlog = history[-80_000:]  # the service replays less than the client remembers
    assert shown_after_reconnect(recent, [backlog[:1000], backlog[1000:], b"new output\r\n"]) == b"new output\r\n"


def test_a_backlog_longer_than_what_the_client_remembers_is_dropped_too() -> None:
    history = os.urandom(300_000)
    assert shown_after_reconnect(history[-50_000:], [history[-120_000:], b"fresh"]) == b"fresh"


def test_new_output_with_no_backlog_is_all_shown() -> None:
    recent = os.urandom(10_000)
    fresh = [os.urandom(3000), b"\r\x1b[Kprompt$ "]
    assert shown_after_reconnect(recent, fresh) == b"".join(fresh)


def test_output_that_repeats_itself_still_shows_what_is_new() -> None:
    recent = b"y\n" * 100_000
    assert shown_after_reconnect(recent, [b"y\n" * 50_000 + b"^C\r\n$ "]).endswith(b"^C\r\n$ ")


def test_the_filter_decides_once_it_has_seen_as_much_as_it_remembers() -> None:
    recent = os.urandom(5000)
    backlog = BacklogFilter(recent)
    assert backlog.feed(recent[:4000]) == b"" and not backlog.done  # still possibly a repeat: held back
    assert backlog.feed(recent[4000:] + b"after" + b"x" * NEEDLE_BYTES) == b"after" + b"x" * NEEDLE_BYTES
    assert backlog.done and backlog.dropped == len(recent)
    assert backlog.feed(b"more") == b"more"


def test_nothing_remembered_means_nothing_held() -> None:
    backlog = BacklogFilter(b"")
    assert backlog.done and backlog.feed(b"abc") == b"abc"


def test_recent_output_keeps_the_tail() -> None:
    recent = RecentOutput(limit=10)
    for chunk in (b"0123", b"4567", b"89ab", b"cdef"):
        recent.add(chunk)
    assert recent.tail() == b"6789abcdef" and len(recent) == 10
