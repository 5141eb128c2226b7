"""lmviz/server/nodelay.py: the app server's connections send at once (TCP_NODELAY), although
Streamlit listens on a socket made without a protocol number (asyncio then left Nagle on, and each
response on a kept-alive connection waited ~40 ms for the browser's delayed acknowledgement)."""
import asyncio
import socket
import subprocess
import sys
from pathlib import Path

from lmviz.server import nodelay
from tests.conftest import run_async

ROOT = Path(__file__).resolve().parent.parent


def _accepted_nodelay(listener: socket.socket) -> int:
    """Serve ``listener`` with asyncio (as uvicorn does: ``create_server(sock=...)``), connect once
    and return TCP_NODELAY of the connection the server accepted."""
    async def main() -> int:
        got = asyncio.get_running_loop().create_future()

        def accepted(reader, writer):
            sock = writer.get_extra_info("socket")
            got.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(accepted, sock=listener)
        client = socket.create_connection(listener.getsockname()[:2])
        try:
            return await asyncio.wait_for(got, 10)
        finally:
            client.close()
            server.close()
            await server.wait_closed()

    return run_async(main())


def _listener_as_streamlit_makes_it() -> socket.socket:
    """A listening socket made as Streamlit 1.67's ``_bind_socket`` makes it: no protocol number."""
    sock = socket.socket(family=socket.AF_INET)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    assert sock.proto == 0
    return sock


def test_a_connection_accepted_from_a_socket_without_protocol_number_sends_at_once():
    nodelay.install()
    nodelay.install()                                      # idempotent
    assert _accepted_nodelay(_listener_as_streamlit_makes_it()) == 1


def test_other_kinds_of_socket_are_left_as_they_are():
    a, b = socket.socketpair()                            # a Unix socket: no TCP option to set
    nodelay.set_nodelay(a)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    nodelay.set_nodelay(udp)
    for s in (a, b, udp):
        s.close()
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    nodelay.set_nodelay(tcp)
    assert tcp.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    tcp.close()


def test_serve_py_installs_it_when_uvicorn_imports_it():
    code = ("import asyncio.base_events as b, serve; "
            "print(b._set_nodelay.__module__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "lmviz.server.nodelay"
