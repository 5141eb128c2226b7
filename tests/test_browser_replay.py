"""Replay training in a real browser, both languages: upload a checkpoint that carries a replay,
scrub the step slider from the last snapshot to the first and back (the captions and the
pictures change, the induction head's map with them: the run probed for one), brush a stretch of
the loss curve (the linked selection picks the snapshot)."""
from __future__ import annotations

import pytest

from tests.browser_util import skip_questions, exceptions, shot, wait_charts, wait_idle
from tests.replay_util import replay_checkpoint

pytestmark = pytest.mark.browser

CAPTIONS = """() => Array.from(document.querySelectorAll('.st-key-train_replay_box [data-testid=stCaptionContainer]'))
  .map(e => e.innerText).join('\\n')"""


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny run with its replay and its induction record, saved as a checkpoint file (seconds on CPU)."""
    blob, rec = replay_checkpoint(80, induction=4)
    folder = tmp_path_factory.mktemp("ckpt")
    path, bad = folder / "replay.safetensors", folder / "hostile.safetensors"
    path.write_bytes(blob)
    # the same file with one attention weight of the replay set to NaN
    import json
    import struct

    n = struct.unpack("<Q", blob[:8])[0]
    at = 8 + n + json.loads(blob[8:8 + n])["replay.attention"]["data_offsets"][0]
    bad.write_bytes(blob[:at] + struct.pack("<f", float("nan")) + blob[at + 4:])
    return path, [s.step for s in rec.store.snapshots], bad


def _slider_value(page) -> str:
    return page.locator(".st-key-train_replay_step input[type=range]").first.get_attribute("aria-valuetext") or ""


# in English: the live training is watched in Chinese (tests/test_browser_training.py); the
# Chinese run repeated this one, 19 s of CI
@pytest.mark.parametrize("lang", ["en"])
def test_scrub_an_uploaded_replay(server, browser, checkpoint, lang):
    path, steps, hostile = checkpoint
    ctx = browser.new_context(viewport={"width": 1500, "height": 1100}, locale="en-US")
    page = ctx.new_page()
    page.set_default_timeout(90_000)
    page.goto(server.url("", lang=lang), wait_until="domcontentloaded")
    wait_idle(page)
    page.goto(server.url("training", lang=lang), wait_until="domcontentloaded")
    wait_idle(page)
    skip_questions(page, lang)                 # the whole chapter (predict, then reveal)
    page.locator(".st-key-train_upload_ckpt input[type=file]").set_input_files(str(path))
    page.wait_for_selector(".st-key-train_replay_step input[type=range]", timeout=90_000, state="attached")
    wait_idle(page)
    wait_charts(page)
    assert exceptions(page) == []
    assert _slider_value(page) == str(steps[-1])                  # starts on the last snapshot
    at_end = page.evaluate(CAPTIONS)
    # the run's induction record came with it: its section, and the head's map at the replay's step
    assert page.locator(".st-key-train_ind .js-plotly-plot").count() == 1
    assert page.locator(".st-key-train_replay_ind .js-plotly-plot").count() == 1
    assert "evaluation of step 80:" in at_end
    box = page.locator(".st-key-train_replay_box")
    box.scroll_into_view_if_needed()
    shot(page, f"replay-last-{lang}")

    slider = page.locator(".st-key-train_replay_step input[type=range]").first
    slider.focus()
    page.keyboard.press("Home")                                   # scrub to the first snapshot
    page.wait_for_timeout(800)
    wait_idle(page)
    assert _slider_value(page) == str(steps[0])
    at_start = page.evaluate(CAPTIONS)
    assert at_start != at_end and str(steps[0]) in at_start
    assert "evaluation of step 0:" in at_start              # the head's map went back with the slider
    shot(page, f"replay-first-{lang}")
    slider = page.locator(".st-key-train_replay_step input[type=range]").first
    slider.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(300)
    page.wait_for_timeout(600)
    wait_idle(page)
    assert _slider_value(page) == str(steps[3])

    # brush a stretch on the loss curve: the snapshot shown becomes the last one inside it
    chart = page.locator(".st-key-train_replay_loss canvas, .st-key-train_replay_loss svg").first
    chart.scroll_into_view_if_needed()
    bb = chart.bounding_box()
    y = bb["y"] + bb["height"] * 0.5
    page.mouse.move(bb["x"] + bb["width"] * 0.80, y)
    page.mouse.down()
    page.mouse.move(bb["x"] + bb["width"] * 0.88, y, steps=8)
    page.mouse.move(bb["x"] + bb["width"] * 0.93, y, steps=8)
    page.mouse.up()
    page.wait_for_timeout(1200)
    wait_idle(page)
    picked = _slider_value(page)
    assert picked not in ("", str(steps[3])), picked
    assert exceptions(page) == []
    shot(page, f"replay-brushed-{lang}")

    # a checkpoint whose replay was tampered with: refused with a sentence, no traceback
    page.locator(".st-key-train_upload_ckpt input[type=file]").set_input_files(str(hostile))
    page.wait_for_selector("[data-testid=stAlertContentError]", timeout=60_000)
    wait_idle(page)
    from ui.i18n import translate

    sentence = translate("ckpt.err_replay", lang, name="replay.attention")
    assert sentence in page.locator("[data-testid=stAlertContentError]").first.inner_text()
    assert exceptions(page) == []
    ctx.close()
