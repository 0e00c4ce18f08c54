"""Start-up without the cyclic garbage collector's passes, and without httpx's command line.

What the app and the service allocate while they start (modules, classes, models, routes: ~100,000
objects) lives as long as the process, yet each full collection walks all of it: 0.1 CPU-s of the
service's 0.9 before it listens, 0.05 of the app's imports. The entry points pause collection while
they start and resume it once started, with what start-up made moved out of the collector's sight.

`import httpx` also loads its own command line (`httpx._main`: click, rich's progress and syntax,
pygments' lexers) when those can be imported, much of its import time; bbrowse never runs it.
"""

import gc
import sys

#: Whether this process started through an entry point that froze start-up's objects (not a test's process).
_froze_at_start = False


def skip_httpx_command_line() -> None:
    """Called by `bbrowse` before anything imports httpx: httpx then takes its command line as not installed
    (it guards that import for installs without click and rich); `httpx.main` is then a stub saying so."""
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def pause_collection() -> None:
    """Called by an entry point (`bbrowse`, `bbrowse serve`) before it imports the app or the service."""
    gc.disable()


def resume_collection() -> None:
    """Start-up is over: its objects are frozen (never walked again) and collection resumes, if it was paused."""
    global _froze_at_start
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
        _froze_at_start = True


def freeze_more() -> None:
    """What a process started through an entry point loaded since (`resume_collection`) leaves the collector's
    sight too: one full collection first, so no garbage is frozen. Nothing in a process that did not start so
    (a test's: its app never freezes what the tests hold)."""
    if _froze_at_start:
        gc.collect()
        gc.freeze()
