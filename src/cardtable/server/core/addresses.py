"""Who a client is (``docs/deploy.md``, "Addresses"): the key every per-address limit counts a client under (an
IPv6 client by its /64), the client's address as the TCP peer or as a trusted proxy names it
(``forwarded_allow_ips``), and web origins for the Origin check (scheme, host and port)."""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import MutableMapping
from typing import Any

IPV6_PREFIX = 64
"""Per-address limits count an IPv6 client by its network of this many bits: one home or host is usually given a
whole /64, so its addresses there are one client."""


IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def address_key(host: str | None) -> str:
    """The key under which every per-address limit counts the client ``host`` (an IP address as text): an IPv4
    address as it is, an IPv6 one as its /64 (``"2001:db8:1:2::/64"``), an IPv4-mapped IPv6 address
    (``::ffff:a.b.c.d``) as its IPv4 address; anything else (a Unix socket, a test client) as it is, and no host
    as ``"?"``.

    >>> address_key("203.0.113.7"), address_key("2001:db8:1:2:aaaa::1"), address_key("::ffff:10.0.0.1")
    ('203.0.113.7', '2001:db8:1:2::/64', '10.0.0.1')
    """
    if not host:
        return "?"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((int(ip), IPV6_PREFIX), strict=False))
    return str(ip)


def client_address(connection: Any) -> str:
    """:func:`address_key` of the client of ``connection``: an ASGI scope (its ``client``), or a Starlette
    ``Request`` or ``WebSocket``. Behind a proxy trusted by ``forwarded_allow_ips`` that is the address the proxy
    names (uvicorn's ``ProxyHeadersMiddleware`` has put it in the scope), else the TCP peer."""
    client = connection.get("client") if isinstance(connection, MutableMapping) else connection.client
    return address_key(client[0] if client else None)


def trusted_networks(value: str) -> list[IPNetwork]:
    """The proxies of the setting ``forwarded_allow_ips`` (``"127.0.0.1, ::1, 10.0.0.0/8"``: addresses or networks,
    comma-separated; ``""``: none) as networks. ``ValueError`` naming the setting for any other item (a host name,
    ``*``, an empty item): the forwarded headers of anyone else would be believed."""
    networks: list[IPNetwork] = []
    if not value.strip():
        return networks
    for item in value.split(","):
        try:
            networks.append(ipaddress.ip_network(item.strip()))
        except ValueError:
            raise ValueError(f"forwarded_allow_ips: {item.strip()!r} is not an IP address or network (such as "
                             f"127.0.0.1 or 10.0.0.0/8)") from None
    return networks


DEFAULT_PORTS = {"http": 80, "https": 443}
"""The port of an origin that names none."""


Origin = tuple[str, str, int]
"""A web origin: scheme (``http`` or ``https``), host in lower case (an IPv6 address without brackets), port."""


def parse_origin(text: str) -> Origin | None:
    """The origin an ``Origin`` header names (``"https://Example.com"`` -> ``("https", "example.com", 443)``), or
    ``None`` for ``null`` and for anything that is not ``http(s)://host[:port]`` (a path, a user, another scheme).

    >>> parse_origin("http://[::1]:8000"), parse_origin("null")
    (('http', '::1', 8000), None)
    """
    try:
        parts = urllib.parse.urlsplit(text.strip())
        port = parts.port
    except ValueError:  # a port that is not a number, or out of range
        return None
    scheme = parts.scheme.lower()
    if (scheme not in DEFAULT_PORTS or not parts.hostname or "@" in parts.netloc or parts.path not in ("", "/")
            or parts.query or parts.fragment):
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def own_origin(connection: Any) -> Origin | None:
    """The origin a Starlette ``Request`` or ``WebSocket`` was sent to: its scheme (``https`` when TLS reached the
    server, or a proxy of ``forwarded_allow_ips`` said so; ``ws``/``wss`` count as ``http``/``https``) with its
    ``Host`` header. ``None`` without a usable ``Host``."""
    scheme = {"ws": "http", "wss": "https"}.get(connection.url.scheme, connection.url.scheme)
    return parse_origin(f"{scheme}://{connection.headers.get('host', '')}")
