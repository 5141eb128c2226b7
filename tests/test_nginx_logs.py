"""deploy/nginx-lmviz.conf.template writes no secret into nginx's logs (issue 28, fault 10).

/training's ``?run=`` is a training's key: whoever reads it can stop that run. Here nginx runs
the template with an upstream that refuses connections (the case in which nginx writes an error
line, which quotes the request), and a request carries a secret in its query string: the access
log has the path but not the secret, the error log has neither. Skips when nginx is missing
(fails with LMVIZ_CLUSTER_TESTS=1)."""
from __future__ import annotations

import shutil
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.browser_util import free_port
from tests.nginx_util import nginx_site


def test_a_secret_in_the_query_string_reaches_no_log():
    run = Path(tempfile.mkdtemp(prefix="lmviz-nginx-"))
    dead = free_port()
    secret = "RunSecretInTheQuery0123456789"
    with nginx_site(run, dead, run / "frontend") as port:
        status = None
        for _ in range(50):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/training?run={secret}&lang=en", timeout=5)
            except urllib.error.HTTPError as e:
                status = e.code
                break
            except OSError:
                time.sleep(0.1)
        assert status == 502                      # the upstream refused: nginx had an error to log
    access = (run / "access.log").read_text()
    errors = "".join(p.read_text() for p in run.glob("*error.log"))
    assert '"GET /training HTTP/1.1" 502' in access
    assert secret not in access and secret not in errors and "run=" not in access + errors
    shutil.rmtree(run, ignore_errors=True)
