"""The /training page in AppTest: start a tiny training, poll it a few times, stop it."""
from __future__ import annotations

import time

import pytest

from tests.apptest_util import all_text, decode, figures, open_page, poll_until
from ui.i18n import translate

pytestmark = pytest.mark.apptest
PAGE = "pages/training.py"


def button(at, key):
    return next(b for b in at.button if b.key == key)


def loss_points(at) -> int:
    figs = [f for f in figures(at) if f["data"] and f["data"][0].get("mode") == "lines"
            and len(f["data"]) >= 2 and f["data"][1].get("mode") == "lines+markers"]
    return len(decode(figs[0]["data"][0]["x"])) if figs else 0


def poll(at, until, timeout=40.0):
    return poll_until(at, until, timeout, interval=0.7)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_start_poll_stop_tiny(lang):
    at = open_page(PAGE, lang, corpus="toy", preset="tiny")
    assert translate("train.title", lang) in [x.value for x in at.title]
    assert button(at, "train_stop").disabled and not button(at, "train_start").disabled
    button(at, "train_start").click().run()
    assert not at.exception
    assert poll(at, lambda a: loss_points(a) > 0)
    n1 = loss_points(at)
    assert poll(at, lambda a: loss_points(a) > n1)              # the curve grows between polls
    text = all_text(at)
    assert translate("train.published", lang, step=0).split("0")[0][:6] in text
    # the trained model is what every chapter now shows
    assert at.session_state["lmviz_session_bundle"].source == "session"
    button(at, "train_stop").click().run()
    assert poll(at, lambda a: button(a, "train_start").disabled is False)
    progress = at.get("progress")[0].proto.text
    assert progress.startswith(translate("train.state_stopped", lang)) or \
        progress.startswith(translate("train.state_done", lang))
    n_final = loss_points(at)
    time.sleep(1.0)
    at.run()
    assert loss_points(at) == n_final                           # stopped: no more steps
    button(at, "train_reset").click().run()
    assert "lmviz_session_bundle" not in at.session_state or at.session_state["lmviz_session_bundle"] is None


def test_bad_custom_value_gets_a_message_not_a_traceback():
    at = open_page(PAGE, "en", preset="tiny")
    at.number_input(key="train_n_head_tiny").set_value(3).run()   # 64 is not divisible by 3
    assert not at.exception
    assert any("divisible by n_head" in e.value for e in at.error)
    assert button(at, "train_start").disabled


def test_own_text_needs_text():
    at = open_page(PAGE, "zh", corpus="own")
    assert not at.exception
    assert translate("train.need_text", "zh") in all_text(at)
    assert button(at, "train_start").disabled
