"""Make the service drop a client's TCP connections, as a VM that restarts its server or a proxy that
times out would: the service's own end of each connection is shut down, so the client sees the
connection end without a WebSocket close frame, exactly as it would in the field. No mock is involved.

The service's socket is reached with `pidfd_getfd` (Linux 5.6+): a duplicate of the service's file
descriptor, on which `shutdown()` acts on the connection itself. The test process started the service,
so it may do so (ptrace access to a descendant). Sockets are matched through /proc: the service's
socket inodes, and /proc/<pid>/net/tcp{,6} for each one's peer port.
"""

from __future__ import annotations

import ctypes
import os
import socket
from pathlib import Path

_SYS_PIDFD_GETFD = 438  # the same number on every architecture Linux has added it to

_libc = ctypes.CDLL(None, use_errno=True)


class DropUnsupportedError(Exception):
    """This system cannot reach another process's sockets (no pidfd_getfd, or not allowed)."""


def _socket_inodes(pid: int) -> dict[int, int]:
    """inode -> fd number, for every socket the process holds."""
    inodes = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes[int(target[8:-1])] = int(fd)
    return inodes


def _connections(pid: int) -> list[tuple[int, int, int]]:
    """(inode, local port, remote port) of the process's established TCP connections."""
    found = []
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], int(fields[9])
            if state == "01":  # ESTABLISHED
                found.append((inode, int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16)))
    return found


def client_connections(pid: int, local_port: int | None = None) -> set[tuple[int, int]]:
    """(local port, remote port) of every established TCP connection process `pid` holds (only the one from
    `local_port` when given). The pair names one connection; a client port alone can name several (Linux gives
    one local port to connections to different servers)."""
    inodes = _socket_inodes(pid)
    return {(local, remote) for inode, local, remote in _connections(pid)
            if inode in inodes and local_port in (None, local)}


def drop_connections(service_pid: int, connections: set[tuple[int, int]]) -> int:
    """Shut down the service's end of each of the client's `connections` ((client port, service port) pairs);
    how many were dropped."""
    inodes = _socket_inodes(service_pid)
    targets = [inodes[inode] for inode, local, remote in _connections(service_pid)
               if inode in inodes and (remote, local) in connections]
    if not targets:
        return 0
    try:
        pidfd = os.pidfd_open(service_pid)
    except OSError as exc:
        raise DropUnsupportedError(f"pidfd_open: {exc}") from exc
    dropped = 0
    try:
        for target in targets:
            fd = _libc.syscall(_SYS_PIDFD_GETFD, pidfd, target, 0)
            if fd < 0:
                raise DropUnsupportedError(f"pidfd_getfd: {os.strerror(ctypes.get_errno())}")
            sock = socket.socket(fileno=fd)
            try:
                sock.shutdown(socket.SHUT_RDWR)
                dropped += 1
            except OSError:
                pass  # already gone
            finally:
                sock.close()  # our duplicate only; the service's descriptor stays (and now reads EOF)
    finally:
        os.close(pidfd)
    return dropped
