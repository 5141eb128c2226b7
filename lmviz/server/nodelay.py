"""Every response of the app server leaves at once: TCP_NODELAY on the server's connections.

asyncio switches Nagle's algorithm off for the connections it carries (``TCP_NODELAY``), but only
for a socket that names its protocol (``proto == IPPROTO_TCP``). Streamlit's server listens on a
socket made as ``socket.socket(family)`` (protocol 0), so every connection it accepts keeps Nagle
on. uvicorn writes a response's headers and its body in two writes; on a keep-alive connection the
body then waits for the browser's delayed acknowledgement, about 40 ms on Linux: 20 frontend files
in a row took 0.84 s, a two-byte health check 43 ms. The websocket's messages wait the same way when
a script run sends several in a row.

:func:`install` (``serve.py``, before uvicorn accepts its first connection) makes asyncio set the
option on any IPv4 or IPv6 stream socket, whatever its protocol number says. A socket of another
kind (a Unix socket, a datagram) is left as it is, as asyncio leaves it.
"""
from __future__ import annotations

import socket

_INET = (socket.AF_INET, socket.AF_INET6)


def set_nodelay(sock) -> None:
    """``TCP_NODELAY`` on ``sock`` when it is a TCP stream (IPv4 or IPv6); nothing otherwise."""
    if sock.family in _INET and sock.type == socket.SOCK_STREAM:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:          # the peer is gone already: nothing left to send to
            pass


def install() -> None:
    """From now on, asyncio's transports in this process set ``TCP_NODELAY`` on every TCP socket
    (asyncio's own ``_set_nodelay``, without its test of the protocol number). Idempotent."""
    from asyncio import base_events

    if getattr(base_events, "_set_nodelay", None) is not set_nodelay and hasattr(socket, "TCP_NODELAY"):
        base_events._set_nodelay = set_nodelay
