"""Pointer paths: the points a move or drag passes through, and how long each step takes.

A smooth move follows a cubic Bezier curve whose control points sit a little off the straight
line, easing in and out, with a step every ~16 ms: the kind of path a hand makes, as the cloud
service's `smooth: true` does. A non-smooth drag interpolates each segment linearly in
`steps_per_segment` steps `step_delay_ms` apart. Pure functions; the backends replay the points.
"""

from __future__ import annotations

import itertools
import math
import random

Point = tuple[int, int]

#: Time between two pointer events of a smooth path.
STEP_MS = 16
#: Bounds of an automatic smooth-move duration (ms), and how it grows with distance (ms per px).
AUTO_MIN_MS, AUTO_MAX_MS, AUTO_MS_PER_PX = 80, 600, 0.35


def auto_duration_ms(distance: float) -> int:
    return int(min(AUTO_MAX_MS, max(AUTO_MIN_MS, AUTO_MIN_MS + distance * AUTO_MS_PER_PX)))


def _ease(t: float) -> float:
    """Slow start, fast middle, slow end."""
    return t * t * (3 - 2 * t)


def bezier(start: Point, end: Point, steps: int, rng: random.Random) -> list[Point]:
    """`steps` points after `start` along a gently curved path, the last exactly `end`."""
    (x0, y0), (x3, y3) = start, end
    dx, dy = x3 - x0, y3 - y0
    length = math.hypot(dx, dy)
    if length < 1 or steps < 2:
        return [end]
    # Control points a third and two thirds along, pushed sideways by up to 15 % of the distance.
    nx, ny = -dy / length, dx / length
    bend1 = rng.uniform(-0.15, 0.15) * length
    bend2 = rng.uniform(-0.15, 0.15) * length
    x1, y1 = x0 + dx / 3 + nx * bend1, y0 + dy / 3 + ny * bend1
    x2, y2 = x0 + 2 * dx / 3 + nx * bend2, y0 + 2 * dy / 3 + ny * bend2
    points: list[Point] = []
    for i in range(1, steps + 1):
        t = _ease(i / steps)
        u = 1 - t
        x = u**3 * x0 + 3 * u * u * t * x1 + 3 * u * t * t * x2 + t**3 * x3
        y = u**3 * y0 + 3 * u * u * t * y1 + 3 * u * t * t * y2 + t**3 * y3
        points.append((round(x), round(y)))
    points[-1] = end
    return points


def smooth_path(start: Point, end: Point, duration_ms: int | None, rng: random.Random) -> tuple[list[Point], float]:
    """Points of a smooth move and the seconds to wait between them."""
    distance = math.dist(start, end)
    total = duration_ms if duration_ms is not None else auto_duration_ms(distance)
    steps = max(2, total // STEP_MS)
    return bezier(start, end, steps, rng), total / steps / 1000


def smooth_drag(path: list[Point], duration_ms: int | None, rng: random.Random) -> tuple[list[Point], float]:
    """Points of a smooth drag through every waypoint, the duration shared by length."""
    lengths = [math.dist(a, b) for a, b in itertools.pairwise(path)]
    total_length = sum(lengths) or 1.0
    total = duration_ms if duration_ms is not None else auto_duration_ms(total_length) * max(1, len(lengths)) // 2
    total = max(total, STEP_MS * 2)
    points: list[Point] = []
    for (a, b), length in zip(itertools.pairwise(path), lengths, strict=True):
        steps = max(2, round(total * length / total_length / STEP_MS))
        points += bezier(a, b, steps, rng) if length >= 1 else [b]
    return points, total / max(1, len(points)) / 1000


def linear_drag(path: list[Point], steps_per_segment: int) -> list[Point]:
    """Every segment split into `steps_per_segment` equal steps (the waypoints themselves included)."""
    points: list[Point] = []
    for (x0, y0), (x1, y1) in itertools.pairwise(path):
        for i in range(1, steps_per_segment + 1):
            t = i / steps_per_segment
            points.append((round(x0 + (x1 - x0) * t), round(y0 + (y1 - y0) * t)))
    return points


def typing_bursts(text: str, rng: random.Random) -> list[tuple[str, float, float]]:
    """Human-like typing: (chunk, seconds between its keys, pause after it), a word at a time."""
    chunks: list[str] = []
    current = ""
    for char in text:
        current += char
        if char in " \n\t":
            chunks.append(current)
            current = ""
    if current:
        chunks.append(current)
    bursts = []
    for chunk in chunks:
        between = rng.uniform(0.05, 0.12)
        pause = rng.uniform(0.08, 0.2) * (1.5 if chunk.rstrip().endswith((".", "!", "?")) else 1.0)
        bursts.append((chunk, between, pause))
    return bursts
