"""Fixtures for a bad network: a `BadLink` in front of a service, a CONNECT proxy, a test CA and a TLS service.

A pytest plugin: a test module that uses them says `pytest_plugins = ["net_support"]`.

- `bad_link(service, delay=0.05, ...)` makes a `netem.BadLink` in front of a running service (closed after
  the test); its `url` replaces the service's for the client under test.
- `connect_proxy`: a `netem.ConnectProxy` that resolves `TLS_HOST` to loopback (a name no resolver knows,
  so a client that reaches it went through the proxy).
- `test_ca`: a throwaway certificate authority (trustme); `test_ca.ca_file` is its certificate as a PEM file
  for `SSL_CERT_FILE`.
- `tls_compat_service`: `bbrowse serve --kernel-compat` with a certificate of `test_ca` for 127.0.0.1,
  localhost and `TLS_HOST` (one for the whole run).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import trustme
from conftest import NO_CHROMIUM, ServiceHandle, start_service, stop_service
from netem import TLS_HOST, BadLink, ConnectProxy


@dataclass
class TestCA:
    ca: trustme.CA
    #: The CA's certificate (PEM), for `SSL_CERT_FILE` or `ssl.create_default_context(cafile=...)`.
    ca_file: Path
    #: A server certificate and key (PEM) for 127.0.0.1, localhost and `TLS_HOST`.
    cert_file: Path
    key_file: Path


def service_address(service: ServiceHandle | str) -> tuple[str, int]:
    url = service if isinstance(service, str) else service.url
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None, url
    return parts.hostname, parts.port


@pytest.fixture
def bad_link() -> Iterator[Callable[..., BadLink]]:
    """`bad_link(service_or_url, **settings)`: a `BadLink` to that service, with its scheme; closed after the test."""
    made: list[BadLink] = []

    def make(service: ServiceHandle | str, **settings: Any) -> BadLink:
        url = service if isinstance(service, str) else service.url
        link = BadLink(service_address(service), scheme=urlsplit(url).scheme, **settings)
        made.append(link)
        return link

    yield make
    for link in made:
        link.close()


@pytest.fixture
def connect_proxy() -> Iterator[ConnectProxy]:
    with ConnectProxy(resolve={TLS_HOST: "127.0.0.1"}) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def test_ca(tmp_path_factory: pytest.TempPathFactory) -> TestCA:
    ca = trustme.CA()
    folder = tmp_path_factory.mktemp("test-ca")
    ca_file = folder / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    cert = ca.issue_cert("127.0.0.1", "localhost", TLS_HOST)
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert.private_key_pem.write_to_path(str(key_file))
    cert_file.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    return TestCA(ca, ca_file, cert_file, key_file)


def start_tls_service(state_dir: Path, ca: TestCA, extra_env: dict[str, str] | None = None) -> ServiceHandle:
    """`bbrowse serve --port 0` with `ca`'s certificate (`conftest.start_service` over HTTPS)."""
    return start_service(state_dir, extra_env,
                         extra_args=("--ssl-certfile", str(ca.cert_file), "--ssl-keyfile", str(ca.key_file)),
                         verify=ssl.create_default_context(cafile=str(ca.ca_file)))


@pytest.fixture(scope="session")
def tls_compat_service(tmp_path_factory: pytest.TempPathFactory, test_ca: TestCA) -> Iterator[ServiceHandle]:
    """`bbrowse serve --kernel-compat` over HTTPS with `test_ca`'s certificate (no Chromium: its tests are of
    the connection)."""
    handle = start_tls_service(tmp_path_factory.mktemp("bbrowse-tls"), test_ca,
                               extra_env={"BBROWSE_KERNEL_COMPAT": "1", "BBROWSE_CHROMIUM": NO_CHROMIUM})
    yield handle
    stop_service(handle)
