"""Fill deploy/nginx-lmviz.conf.template's {{...}} placeholders (deploy/local-cluster.sh uses it).

    python deploy/site_conf.py TEMPLATE OUT LISTEN UPSTREAM_SERVERS ACCESS_LOG ERROR_LOG FRONTEND_ROOT [SERVER_NAME [LECTURE_SERVERS]]
    python deploy/site_conf.py frontend FRONTEND_ROOT

The second form writes FRONTEND_ROOT: a copy of Streamlit's frontend files (``static/``: its
JavaScript, CSS and fonts, each name carrying a hash of its content) with a gzip copy beside each
text file, which nginx serves from disk (``gzip_static``) instead of asking a replica. A student's
first visit fetches about 9 MB of them (3.3 MB compressed); from a replica they go through its
Python event loop, the loop that also carries every websocket of that replica; from nginx they are
no replica's work. Write it again after every Streamlit upgrade (a file missing from the copy
still comes from a replica).

``LECTURE_SERVERS`` is the lecture replica's ``server`` line (a lecturer's browser goes there, by the
cookie a presenter link hands out); without it, lecturers share the room's replicas.

The upload limit is not a choice made here: ``{{MAX_BODY_SIZE}}`` comes from
``lmviz.limits.MAX_REQUEST_MB`` (the app's one upload limit, ``MAX_UPLOAD_MB``, plus the request's
multipart framing), so nginx never refuses a file the app accepts (a 10m here once gave the
"bigger" preset's own 18 MB download a 413). Header comment lines keep their placeholders.
"""
from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def max_body_size() -> str:
    """nginx's client_max_body_size for lmviz, e.g. "65m" (nginx's m is 2**20 bytes, as Streamlit's MB)."""
    sys.path.insert(0, str(ROOT))
    from lmviz.limits import MAX_REQUEST_MB

    return f"{MAX_REQUEST_MB}m"


def frontend(root: Path) -> Path:
    """Copy the installed Streamlit's frontend files into ``root``/static (what nginx serves at
    /static/), each text file with its ``.gz`` twin (level 9, no timestamp: the same bytes every
    time). Returns ``root``. Files a previous copy left behind are removed with it. The text
    files are those serve.py compresses for itself (``lmviz.server.frontend_gzip.TYPES``)."""
    from streamlit import file_util

    sys.path.insert(0, str(ROOT))
    from lmviz.server.frontend_gzip import TYPES

    src = Path(file_util.get_static_dir()) / "static"
    dst = Path(root) / "static"
    Path(root).mkdir(parents=True, exist_ok=True)
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    for f in dst.rglob("*"):
        if f.is_file() and f.suffix in TYPES:
            with open(f, "rb") as raw, gzip.GzipFile(f"{f}.gz", "wb", compresslevel=9, mtime=0) as gz:
                shutil.copyfileobj(raw, gz)
    Path(root).chmod(0o755)      # nginx's workers run as another user: they must read it
    return Path(root)


def render(template: str, listen: str, upstream_servers: str, access_log: str, error_log: str,
           frontend_root: str, server_name: str = "_", lecture_servers: str | None = None) -> str:
    values = {"LISTEN": listen, "SERVER_NAME": server_name, "UPSTREAM_SERVERS": upstream_servers.rstrip(),
              "LECTURE_SERVERS": (lecture_servers or upstream_servers).rstrip(),
              "ACCESS_LOG": access_log, "ERROR_LOG": error_log, "MAX_BODY_SIZE": max_body_size(),
              "FRONTEND_ROOT": str(frontend_root)}
    out = []
    for line in template.splitlines(keepends=True):
        if not line.lstrip().startswith("#"):          # the header comments keep their placeholders
            for k, v in values.items():
                line = line.replace("{{" + k + "}}", v)
        out.append(line)
    return "".join(out)


if __name__ == "__main__":
    if sys.argv[1:2] == ["frontend"]:
        frontend(Path(sys.argv[2]))
    else:
        src, dst, listen, servers, access, error, front, *rest = sys.argv[1:]
        Path(dst).write_text(render(Path(src).read_text(), listen, servers, access, error, front, *rest[:2]))
