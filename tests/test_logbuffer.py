"""The log pane's pure parts: the bounded buffer, its views, the row map and the text conversion."""

from __future__ import annotations

import random
from collections import deque

import pytest
from rich.text import Text

from bbrowse.tui.ansi_text import cell_width, pretty_json, to_text
from bbrowse.tui.logbuffer import AllLines, LogBuffer, MatchIndex, RowMap, gap_text, strip_ansi


def test_bounded_ring_keeps_the_newest_lines_and_counts_the_dropped() -> None:
    buffer = LogBuffer(capacity=5)
    buffer.append_many([f"a{i}" for i in range(3)], 1.0)
    assert list(buffer) == ["a0", "a1", "a2"] and buffer.dropped == 0
    buffer.append_many([f"b{i}" for i in range(4)], [2.0, 3.0, 4.0, 5.0])
    assert list(buffer) == ["a2", "b0", "b1", "b2", "b3"]
    assert buffer.dropped == 2
    assert len(buffer) == 5
    assert buffer[0] == "a2" and buffer[-1] == "b3"
    assert (buffer.first_seq, buffer.end_seq) == (2, 7)
    assert buffer.timestamp(2) == 1.0 and buffer.timestamp(6) == 5.0
    with pytest.raises(IndexError):
        buffer.line(1)  # dropped
    with pytest.raises(IndexError):
        buffer[5]
    # a batch larger than the buffer keeps only its own tail
    buffer.append_many([f"c{i}" for i in range(12)], 9.0)
    assert list(buffer) == [f"c{i}" for i in range(7, 12)]
    assert buffer.dropped == 2 + 5 + 7


def test_ring_matches_a_reference_model_under_random_batches() -> None:
    rng = random.Random(5)
    for _ in range(200):
        capacity = rng.randint(1, 16)
        buffer, model, total = LogBuffer(capacity), deque(maxlen=capacity), 0
        for _ in range(20):
            if rng.random() < 0.05:
                buffer.clear()
                model.clear()
            lines = [f"l{total + i}" for i in range(rng.randint(0, 3 * capacity))]
            buffer.append_many(lines, [float(total + i) for i in range(len(lines))])
            model.extend(lines)
            total += len(lines)
            assert list(buffer) == list(model)
            assert [buffer.timestamp(s) for s in range(buffer.first_seq, buffer.end_seq)] == [
                float(line[1:]) for line in model
            ]


def test_memory_stays_flat_once_full() -> None:
    """2 million lines through a 100k buffer: the ring never grows past its capacity."""
    buffer = LogBuffer()
    batch = [f"seq={i} " + "x" * 60 for i in range(2000)]
    for _ in range(1000):
        buffer.append_many(batch, 1.0)
    assert len(buffer) == 100_000
    assert buffer.dropped == 2_000_000 - 100_000
    assert len(buffer._lines) == 100_000 and len(buffer._times) == 100_000


def test_search_is_case_insensitive_lazy_and_ignores_escapes_and_gaps() -> None:
    buffer = LogBuffer(100)
    buffer.append_many(["GET /a 200", "post /b 500", "\x1b[31mERR\x1b[0mOR here", "get /c 404"])
    buffer.add_gap(3)
    buffer.append_many(["nothing", "error again"])
    assert [buffer.line(s) for s in buffer.search("get")] == ["GET /a 200", "get /c 404"]
    assert list(buffer.search("error")) == [2, 6]  # colour codes in the middle of a word do not hide it
    assert list(buffer.search("31m")) == []  # nor do escape sequences match
    assert list(buffer.search("reconnected")) == []  # gap markers are not log lines
    assert list(buffer.search("error", reverse=True)) == [6, 2]
    assert list(buffer.search("get", start_seq=1)) == [3]
    lazy = buffer.search("o")
    assert next(lazy) == 1  # nothing beyond the first hit has been looked at yet
    assert buffer.match_spans(0, "get") == [(0, 3)]


def test_match_index_is_a_live_filtered_view_of_seqs() -> None:
    buffer = LogBuffer(capacity=6)
    buffer.append_many(["a error", "b", "c ERROR", "d"])
    errors = MatchIndex(buffer, "error", keep_gaps=True)
    assert list(errors) == [0, 2]
    assert len(errors) == 2 and errors.first_pos == 0
    buffer.add_gap(1.5)
    buffer.append_many(["e error", "f", "g"])
    assert errors.update() == 2  # the new match and the gap marker
    # "a error" and "b" dropped off the front; the view forgets them, positions stay absolute
    assert [buffer.line(s) for s in errors] == ["c ERROR", gap_text(1.5), "e error"]
    assert (errors.first_pos, errors.end_pos) == (1, 4)
    assert errors.seq_at(1) == 2
    assert errors.next_after(2) == 4 and errors.prev_before(4) == 2 and errors.prev_before(2) is None
    assert errors.pos_of(5) == 3 and errors.pos_of(3) is None
    assert isinstance(errors._seqs[0], int)  # seqs, not copies of the text
    hits = MatchIndex(buffer, "error")  # search: gaps excluded
    assert list(hits) == [2, 5]
    everything = AllLines(buffer)
    assert len(everything) == len(buffer) and everything.seq_at(everything.first_pos) == buffer.first_seq


def test_gap_marker_entry() -> None:
    buffer = LogBuffer(10)
    buffer.append("before")
    seq = buffer.add_gap(4.2, 100.0)
    buffer.append("after")
    assert buffer.line(seq) == "── reconnected after 4 s; lines may be missing ──"
    assert buffer.is_gap(seq) and not buffer.is_gap(seq + 1)
    assert buffer.timestamp(seq) == 100.0
    buffer.append_many(["x"] * 10)
    assert buffer.gaps == set()  # forgotten with the line


def test_row_map_for_entries_of_several_rows() -> None:
    rows = RowMap(first_pos=10)
    rows.extend([1, 3, 2])  # positions 10, 11, 12
    assert rows.rows == 6
    assert [rows.locate(r) for r in range(6)] == [(10, 0), (11, 0), (11, 1), (11, 2), (12, 0), (12, 1)]
    assert rows.row_of(12) == 4
    assert rows.trim(11) == 1
    assert rows.rows == 5 and rows.locate(0) == (11, 0) and rows.row_of(12) == 3
    rows.extend([4])
    assert rows.end_pos == 14 and rows.rows == 9 and rows.locate(8) == (13, 3)


def test_pretty_json_helper() -> None:
    assert pretty_json('{"level": "info", "n": [1, 2]}') == '{\n  "level": "info",\n  "n": [\n    1,\n    2\n  ]\n}'
    assert pretty_json('  {"a": "é"}  ') == '{\n  "a": "é"\n}'
    assert pretty_json("[1, 2]") is None  # objects only
    assert pretty_json("{not json}") is None
    assert pretty_json("plain text") is None
    assert "\x1b" not in pretty_json('{"a": "\\u001b[31mred"}')  # JSON keeps control characters escaped


def test_ansi_colours_become_styles_and_markup_stays_literal() -> None:
    text = to_text("\x1b[31mred\x1b[0m and [bold]x[/bold]")
    assert isinstance(text, Text)
    assert text.plain == "red and [bold]x[/bold]"
    [span] = text.spans
    assert (span.start, span.end, span.style.color.number) == (0, 3, 1)  # ANSI red
    plain = to_text("[bold]x[/bold] [link=http://evil]y[/link]")
    assert plain.plain == "[bold]x[/bold] [link=http://evil]y[/link]" and plain.spans == []


def test_control_characters_never_reach_the_terminal() -> None:
    text = to_text("a\rb\x07c\x1b]0;title\x07d\x1b[2Je\x9bf\tg")
    assert text.plain == "a␍b␇cde\ufffdf       g"
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in text.plain)
    assert cell_width("a\tb") == len(to_text("a\tb").plain) == 9
    assert strip_ansi("\x1b[1mbold\x1b[0m") == "bold"
