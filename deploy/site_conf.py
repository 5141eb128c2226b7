"""Fill deploy/nginx-lmviz.conf.template's {{...}} placeholders (deploy/local-cluster.sh uses it).

    python deploy/site_conf.py TEMPLATE OUT LISTEN UPSTREAM_SERVERS ACCESS_LOG ERROR_LOG [SERVER_NAME]

The upload limit is not a choice made here: ``{{MAX_BODY_SIZE}}`` comes from
``lmviz.limits.MAX_REQUEST_MB`` (the app's one upload limit, ``MAX_UPLOAD_MB``, plus the request's
multipart framing), so nginx never refuses a file the app accepts (a 10m here once gave the
"bigger" preset's own 18 MB download a 413). Header comment lines keep their placeholders.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def max_body_size() -> str:
    """nginx's client_max_body_size for lmviz, e.g. "65m" (nginx's m is 2**20 bytes, as Streamlit's MB)."""
    sys.path.insert(0, str(ROOT))
    from lmviz.limits import MAX_REQUEST_MB

    return f"{MAX_REQUEST_MB}m"


def render(template: str, listen: str, upstream_servers: str, access_log: str, error_log: str,
           server_name: str = "_") -> str:
    values = {"LISTEN": listen, "SERVER_NAME": server_name, "UPSTREAM_SERVERS": upstream_servers.rstrip(),
              "ACCESS_LOG": access_log, "ERROR_LOG": error_log, "MAX_BODY_SIZE": max_body_size()}
    out = []
    for line in template.splitlines(keepends=True):
        if not line.lstrip().startswith("#"):          # the header comments keep their placeholders
            for k, v in values.items():
                line = line.replace("{{" + k + "}}", v)
        out.append(line)
    return "".join(out)


if __name__ == "__main__":
    src, dst, listen, servers, access, error, *rest = sys.argv[1:]
    Path(dst).write_text(render(Path(src).read_text(), listen, servers, access, error, *rest[:1]))
