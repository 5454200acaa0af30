"""Where a visitor-typed base URL may point (a shared page with `--allow-visitor-urls`).

The app sends requests from the operator's machine, so a URL a stranger typed must not reach
what only that machine can: loopback, private networks, link-local addresses (the cloud
metadata service at 169.254.169.254 among them), or reserved ranges. The host is resolved and
every address it resolves to is checked (an IPv4 address written as IPv6, `[::ffff:a.b.c.d]`,
is checked as the IPv4 address). The operator's own URLs never pass through here, and
`--allow-private-urls` turns the check off.

Not covered: a name that resolves to a public address here and to a private one when the
request is sent (DNS rebinding) -- the client resolves again.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

# names that reach a cloud's metadata service whatever they resolve to here
METADATA_NAMES = frozenset({"metadata", "metadata.google.internal", "metadata.goog",
                            "instance-data", "instance-data.ec2.internal"})

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _kind(ip: Address) -> str | None:
    """What makes `ip` private to the operator's machine, or None for a public address."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if inner is not None:
            return _kind(inner)
    if ip.is_loopback:
        return "loopback (the app's own machine)"
    if ip.is_link_local:
        return "link-local (where cloud metadata services answer)"
    if ip.is_unspecified or ip.is_multicast or ip.is_reserved:
        return "reserved"
    if ip.is_private or not ip.is_global:
        return "a private network range"
    return None


def resolve(host: str) -> list[Address]:
    """Every address `host` names (a literal address is itself); [] when it does not resolve."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return []
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


def refusal(url: str) -> str | None:
    """Why the app may not send a visitor's requests to `url` (None: it may)."""
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if host in METADATA_NAMES or host.endswith(".internal"):
        return f"{host} is a cloud metadata or internal name"
    addresses = resolve(host)
    if not addresses:
        return f"{host} does not resolve to an address"
    for ip in addresses:
        kind = _kind(ip)
        if kind:
            return f"{host} is {'' if str(ip) == host else f'at {ip}, '}{kind}"
    return None
