"""ui.render.upload_text / upload_too_big: the one check of an uploaded file (size, NUL, UTF-8)
that the training and tokenization pages share; each failure is one message on the page."""
from types import SimpleNamespace

import pytest

from ui import render

MSG = {"too_big": "big", "binary": "bin", "utf8": "utf"}


class _Up(SimpleNamespace):
    def getvalue(self):
        return self.data


def _up(data: bytes) -> _Up:
    return _Up(data=data, size=len(data))


@pytest.fixture
def errors(monkeypatch):
    shown = []
    monkeypatch.setattr(render.st, "error", shown.append)
    return shown


@pytest.mark.parametrize("data, nul_ok, text, shown", [
    ("低 ok".encode(), False, "低 ok", []),
    (b"x" * 11, False, None, ["big"]),
    (b"a\x00b", False, None, ["bin"]),
    (b"a\x00b", True, "a\x00b", []),          # the training page lets NUL bytes through, as before
    (b"\xff", True, None, ["utf"]),
])
def test_upload_text(errors, data, nul_ok, text, shown):
    assert render.upload_text(_up(data), 10, MSG, nul_ok=nul_ok) == text
    assert errors == shown


def test_upload_too_big(errors):
    assert render.upload_too_big(_up(b"x" * 5), 4, "big") and errors == ["big"]
    assert not render.upload_too_big(_up(b"x" * 4), 4, "big") and errors == ["big"]
