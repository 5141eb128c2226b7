"""Students never see a traceback (hostile probe, fault 14: client.showErrorDetails was Streamlit's
default "full", so any uncaught exception showed server paths). With "none" the page shows
Streamlit's generic sentence only, and the server's log keeps the whole traceback."""
from __future__ import annotations

import tomllib
from pathlib import Path

from streamlit import config as st_config

ROOT = Path(__file__).resolve().parent.parent


def test_the_config_hides_every_detail():
    conf = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    value = conf["client"]["showErrorDetails"]
    assert value == st_config.ShowErrorDetailsConfigOptions.NONE.value == "none"
    assert value in {o.value for o in st_config.ShowErrorDetailsConfigOptions}   # an option 1.67 knows


def test_an_uncaught_exception_shows_a_sentence_and_the_log_keeps_the_details(capfd):
    from streamlit.testing.v1 import AppTest

    st_config.set_option("client.showErrorDetails", "none")   # what config.toml sets (test above)
    at = AppTest.from_string('raise ValueError("position 55 past /srv/lmviz/lmviz/model.py")').run()
    assert len(at.exception) == 1
    e = at.exception[0]
    shown = " ".join([e.value, e.proto.type, *e.stack_trace])
    assert "ValueError" not in shown and "/srv/lmviz" not in shown and "position 55" not in shown
    assert e.stack_trace == [] and e.proto.type == ""
    assert "error" in e.value.lower()                               # a sentence, not an empty box
    out, err = capfd.readouterr()
    assert "position 55" in out + err and "ValueError" in out + err   # the server's log has it all
