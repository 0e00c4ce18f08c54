"""One way to save a stream, for the app and the commands alike: chunks to a file written whole or not at all.

A save goes to `name.part` next to the target and is linked into place only when complete, so a file
under its final name is never half written; a failure removes the part. The app never replaces a file
(a name taken meanwhile becomes `name (1).ext`); a command told `-o FILE` does, as `cp` would.
`progress(done)` gets the bytes written so far after each chunk, the convention of the client's uploads.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from pathlib import Path

#: `progress(bytes_done_so_far)`.
Progress = Callable[[int], None]
#: Lines of a log written per chunk (one thread hop each).
LINES_PER_CHUNK = 20_000


def numbered(path: Path, counter: int) -> Path:
    """`dir/name (counter).ext` (`archive.tar.gz` keeps its double suffix together)."""
    name = path.name
    suffixes = "".join(path.suffixes[-2:]) if name.endswith((".tar.gz", ".tar.bz2", ".tar.xz")) else path.suffix
    stem = name[: len(name) - len(suffixes)] if suffixes else name
    return path.with_name(f"{stem} ({counter}){suffixes}")


def unused_path(path: Path) -> Path:
    """`path`, or the first `name (N).ext` next to it that neither exists nor is being written (`.part`)."""
    candidate, counter = path, 0
    while candidate.exists() or candidate.with_name(candidate.name + ".part").exists():
        counter += 1
        candidate = numbered(path, counter)
    return candidate


def partial_path(target: Path) -> Path:
    """Where a save is written until it is complete (`name.ext.part`, next to the target)."""
    return target.with_name(target.name + ".part")


def commit(partial: Path, target: Path) -> Path:
    """Move a finished `partial` file to `target`, or to `target (N)` if that name got taken meanwhile.

    A hard link never replaces an existing file (unlike rename); where links are not possible
    (some file systems) the rename happens after a last check. Returns the final path.
    """
    candidate = target
    for _ in range(1000):
        try:
            os.link(partial, candidate)
        except FileExistsError:
            candidate = unused_path(target)
            continue
        except OSError:
            candidate = unused_path(candidate)
            partial.replace(candidate)
            return candidate
        with contextlib.suppress(OSError):
            partial.unlink()
        return candidate
    raise OSError(f"no free name next to {target}")


async def pour(chunks: AsyncIterable[bytes], write: Callable[[bytes], object], progress: Progress | None = None) -> int:
    """Every chunk of `chunks` to `write`, `progress` told after each; the bytes written. A stream that is an
    async context manager (the client's `Stream`) is entered, so it is closed however the loop ends."""
    done = 0
    async with _entered(chunks) as source:
        async for chunk in source:
            write(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done)
    return done


async def save_stream(chunks: AsyncIterable[bytes], target: Path, progress: Progress | None = None, *,
                      replace: bool = False) -> tuple[Path, int]:
    """Write `chunks` to `target` whole or not at all: (the path written, its size). Without `replace` a
    name taken meanwhile becomes `name (1).ext`. Disk writes run on a thread, so a slow disk never holds
    the event loop (the app's screen) up. Raises what the stream or the disk raised, the part removed."""
    partial = partial_path(target)
    try:
        sink = await asyncio.to_thread(partial.open, "wb")
        try:
            done = 0
            async with _entered(chunks) as source:
                async for chunk in source:
                    await asyncio.to_thread(sink.write, chunk)
                    done += len(chunk)
                    if progress is not None:
                        progress(done)
        finally:
            await asyncio.to_thread(sink.close)
        if replace:
            partial.replace(target)
            return target, done
        return commit(partial, target), done
    finally:
        partial.unlink(missing_ok=True)


async def save_lines(lines: Iterable[str], target: Path, progress: Progress | None = None) -> tuple[Path, int]:
    """`lines` as UTF-8 text, one a line, through `save_stream`."""
    return await save_stream(_encoded(lines), target, progress)


def save_bytes(data: bytes, target: Path) -> Path:
    """`data` written whole or not at all (small: on the calling thread); the path written."""
    partial = partial_path(target)
    try:
        partial.write_bytes(data)
        return commit(partial, target)
    finally:
        partial.unlink(missing_ok=True)


async def _encoded(lines: Iterable[str]) -> AsyncIterator[bytes]:
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= LINES_PER_CHUNK:
            yield ("\n".join(batch) + "\n").encode("utf-8", "replace")
            batch = []
    if batch:
        yield ("\n".join(batch) + "\n").encode("utf-8", "replace")


@contextlib.asynccontextmanager
async def _entered(chunks: AsyncIterable[bytes]) -> AsyncIterator[AsyncIterable[bytes]]:
    if hasattr(chunks, "__aenter__"):
        async with chunks as source:  # type: ignore[attr-defined]
            yield source
    else:
        yield chunks
