"""Whether a host is this machine: shared by the client and the service, which never import each other.

The client lets no proxy from the environment apply to a service on this machine; `bbrowse serve`
warns when it listens beyond it without TLS.
"""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """`localhost`, or an address in 127.0.0.0/8 or `::1` (written bare, without brackets)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
