"""The "Replay training" section of /training in AppTest: no replay (default model, an old
checkpoint), an uploaded checkpoint's replay scrubbed to its first and last snapshot in both
languages (the captions follow the computed numbers), a brushed stretch of the loss curve, and a
live tiny training whose replay grows while it runs."""
from __future__ import annotations

import json
import math

import pytest

from tests.conftest import run_async

from tests.apptest_util import all_text, figures, open_page, poll_until
from tests.replay_util import replay_checkpoint
from ui.i18n import translate

pytestmark = pytest.mark.apptest
PAGE = "chapters/training.py"


@pytest.fixture(scope="module")
def trained():
    """A tiny run with its replay, as a checkpoint upload would bring it (model, tokenizer, replay)."""
    from lmviz.checkpoint import load_checkpoint_with_replay

    blob, _ = replay_checkpoint(60)
    return load_checkpoint_with_replay(blob)


def _as_uploaded(at, model, tok, meta, replay):
    from ui.session import Bundle

    at.session_state["lmviz_session_bundle"] = Bundle(model, tok, meta, "session")
    at.session_state["train_uploaded_replay"] = (model, replay)
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def _captions(at) -> list[str]:
    return [c.value for c in at.caption]


def _expected(replay, tok, i, lang):
    """The captions' computed numbers for snapshot i, formatted as the catalogue formats them."""
    from lmviz.replay import class_separation, token_classes

    s, first = replay.snapshots[i], replay.snapshots[0]
    head = int(replay.snapshots[-1].prev_token[s.layer].argmax())
    cls = token_classes(tok, s.emb_xy.shape[0])
    return [translate("train.replay_caption", lang, n=len(replay), step=s.step).split("{")[0],
            f"{float(s.prev_token[s.layer, head]):.0%}", f"{s.entropy:.2f}",
            f"{class_separation(s.emb_xy, cls):.0%}", f"{float(s.top_probs[0]):.0%}"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_default_model_explains_there_is_no_replay(lang):
    at = open_page(PAGE, lang)
    assert translate("train.replay_title", lang) in all_text(at)
    assert translate("train.replay_default", lang) in all_text(at)


def test_old_checkpoint_without_replay_says_so(trained):
    model, tok, meta, _ = trained
    at = open_page(PAGE, "zh")
    _as_uploaded(at, model, tok, meta, None)
    assert translate("train.replay_missing", "zh") in all_text(at)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_scrub_uploaded_replay_first_to_last(trained, lang):
    model, tok, meta, replay = trained
    at = open_page(PAGE, lang)
    _as_uploaded(at, model, tok, meta, replay)
    steps = [s.step for s in replay.snapshots]
    slider = at.select_slider(key="train_replay_step")
    assert list(slider.options) == [str(s) for s in steps] and slider.value == steps[-1]  # starts at the end
    assert at.get("vega_lite_chart")                        # the Altair loss curve with a brush
    captions = {}
    for i in (0, len(steps) - 1):
        at.select_slider(key="train_replay_step").set_value(steps[i]).run()
        assert not at.exception, [e.value for e in at.exception]
        text = "\n".join(_captions(at))
        for want in _expected(replay, tok, i, lang):
            assert want in text, (i, want)
        captions[i] = text
        figs = [f for f in figures(at) if f.get("layout", {}).get("yaxis", {}).get("range") == [0, 1.08]]
        assert figs                                               # the next-token bars
        # the loss curve's rule stands at the step shown (its one row of data)
        spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
        rules = [layer for layer in spec["layer"] if layer.get("mark", {}).get("type") == "rule"]
        assert [r["data"]["values"] for r in rules] == [[{"step": float(steps[i])}]]
    assert captions[0] != captions[len(steps) - 1]
    first, last = replay.snapshots[0], replay.snapshots[-1]
    assert last.entropy < first.entropy < math.log(tok.vocab_size) + 1e-6  # what the captions report


def test_an_uploaded_runs_induction_record_is_drawn_and_scrubbed():
    """A checkpoint of a run that probed for an induction head (issue 57): its record draws the
    induction section (the scores over training, the head before and now, the causal check on the
    uploaded model; no control button: nothing trains here) and the replay's step slider shows
    the followed head at the evaluation at or before the chosen step, with its computed score."""
    from lmviz.chapters.induction_run import induction_run
    from lmviz.checkpoint import load_checkpoint_with_replay

    blob, _ = replay_checkpoint(40, induction=4)
    model, tok, meta, replay = load_checkpoint_with_replay(blob)
    run = induction_run(replay.evals)
    assert run.steps == (0, 10, 20, 30, 40) and run.maps == (0, 1, 2, 3, 4)
    at = open_page(PAGE, "zh")
    _as_uploaded(at, model, tok, meta, replay)
    text = all_text(at)
    assert translate("train.ind_title", "zh") in text and translate("train.ind_check", "zh") in text
    assert not [b for b in at.button if b.key == "train_ind_control"]
    lh = translate("common.layer_head", "zh", layer=run.head[0] + 1, head=run.head[1] + 1)
    for step in (s.step for s in (replay.snapshots[0], replay.snapshots[len(replay) // 2], replay.snapshots[-1])):
        at.select_slider(key="train_replay_step").set_value(step).run()
        assert not at.exception, [e.value for e in at.exception]
        i = run.map_at(step)
        assert run.steps[i] <= step and (i == len(run.steps) - 1 or run.steps[i + 1] > step)
        assert translate("train.replay_ind", "zh", step=run.steps[i], lh=lh, score=run.score(i)) in _captions(at)


def test_brushed_stretch_picks_the_last_snapshot_inside(trained):
    from lmviz.replay import pick
    from ui.replay_section import selected_stretch

    _, _, _, replay = trained
    assert selected_stretch({"selection": {"stretch": {}}}) is None
    assert selected_stretch(None) is None
    lo, hi = selected_stretch({"selection": {"stretch": {"step": [3.2, 20.5]}}})
    assert pick(replay.snapshots, lo, hi).step == 16


def test_live_training_replay_grows():
    at = open_page(PAGE, "en", corpus="toy", preset="tiny")
    next(b for b in at.button if b.key == "train_start").click().run()

    def n_steps(a):
        try:
            return len(a.select_slider(key="train_replay_step").options)
        except (KeyError, IndexError):
            return 0

    assert poll_until(at, lambda a: n_steps(a) >= 3, 60, interval=0.7)
    n1 = n_steps(at)
    assert poll_until(at, lambda a: n_steps(a) > n1, 60, interval=0.7)
    next(b for b in at.button if b.key == "train_stop").click().run()
    assert not at.exception
    assert poll_until(at, lambda a: not next(b for b in a.button if b.key == "train_start").disabled, 30)


def test_a_held_view_moves_at_most_every_few_seconds_while_a_run_runs():
    """The slow parts of the live page (the perplexity panel, the attention and the samples)
    redraw charts in every watching browser; the Tang-poem preset evaluates every ~2.5 s. While a
    run runs they move at most every HOLD_S; paused or ended, or for another run, at once."""
    from ui.session import HOLD_S, due

    shown, moves = None, []
    for k in range(40):                    # one tick every 0.5 s, a new version at every tick
        now = 100.0 + 0.5 * k
        if due(shown, k, now):
            shown = (k, now)
            moves.append(now)
    assert len(moves) > 2 and all(b - a >= HOLD_S for a, b in zip(moves, moves[1:]))
    assert shown[0] < 39                                         # some held back
    assert due((5, 100.0), 9, 100.0 + HOLD_S)                    # a new one after a quiet stretch: at once
    assert not due((5, 100.0), 5, 500.0)                         # nothing new: nothing moves


def test_hold_shows_everything_when_not_running_or_for_another_run(monkeypatch):
    import streamlit as st

    from ui import session

    state: dict = {}
    monkeypatch.setattr(st, "session_state", state)
    clock = iter([100.0, 101.0, 102.0, 103.0, 110.0])
    monkeypatch.setattr("time.monotonic", lambda: next(clock))
    assert session.hold("h", "run1", 1, "a", running=True) == "a"       # the first time
    assert session.hold("h", "run1", 2, "b", running=True) == "a"       # 1 s later: held
    assert session.hold("h", "run2", 1, "c", running=True) == "c"       # another run: at once
    assert session.hold("h", "run2", 2, "d", running=False) == "d"      # paused: at once
    assert session.hold("h", "run2", 3, "e", running=True) == "e"       # 8 s after "d" came: due


def test_a_move_back_to_the_step_followed_before_is_a_choice_not_an_echo(monkeypatch):
    """While a run goes on the slider follows the newest snapshot, and a late echo of the step it
    followed before is not a choice. But once the student has moved the slider, a move back to
    that step is one: after a pause several held snapshots join at once, and the second step back
    landed there and was sent back to the newest (bench/live_page.py's scrub never landed)."""
    from types import SimpleNamespace

    import streamlit as st

    from ui import replay_section as rs

    state: dict = {}
    monkeypatch.setattr(st, "session_state", state)

    def tick(steps, sent=None):
        if sent is not None:
            state[rs.STEP_KEY] = sent
        return rs._choose_step([SimpleNamespace(step=s) for s in steps])

    held = [0, 1, 2, 4, 8, 16, 32, 64, 128, 181, 256]
    every = held + [362, 512]
    assert tick(held) == 256 and tick(held, 256) == 256          # follows the newest
    assert tick(every, 256) == 512                               # paused: every snapshot, follows
    assert tick(every, 256) == 512                               # a late echo of 256: still follows
    assert tick(every, 362) == 362                               # the student's step back
    assert tick(every, 256) == 256                               # and another: a choice


def test_a_step_back_asked_for_the_section_itself_is_a_choice(monkeypatch):
    """The slider followed a new snapshot (362 -> 512). A tick of the live section that left the
    browser before it drew 512 sends 362 back: an echo, still following. The same 362 from a
    move of the slider (a run asked for the replay's own fragment) is the student's step back:
    it lands (bench/live_page.py: the first step back after a snapshot came in was never shown)."""
    from types import SimpleNamespace

    import streamlit as st

    import ui.runtime
    from ui import replay_section as rs

    state: dict = {}
    monkeypatch.setattr(st, "session_state", state)
    asked_here = [False]
    monkeypatch.setattr(ui.runtime, "asked_for_this_fragment", lambda: asked_here[0])

    def tick(steps, sent=None):
        if sent is not None:
            state[rs.STEP_KEY] = sent
        return rs._choose_step([SimpleNamespace(step=s) for s in steps])

    before = [0, 1, 2, 4, 8, 16, 32, 64, 128, 181, 256, 362]
    after = before + [512]
    assert tick(before) == 362 and tick(before, 362) == 362
    assert tick(after, 362) == 512                               # follows the new snapshot
    assert tick(after, 362) == 512                               # a tick's late echo: still follows
    asked_here[0] = True
    assert tick(after, 362) == 362                               # the student's step back: a choice
    assert tick(after, 256) == 256


def _client():
    from ui.headless import Session

    return Session


def test_websocket_client_echoes_a_select_slider_as_labels_like_the_browser():
    """The replay slider is a select slider whose value the page sets while a run grows; the
    browser sends such a value back as option labels (a string array). ui/headless.py once
    echoed it as numbers, so the server stored the widget as a double array and the next rerun
    failed in st.select_slider with "must be real number, not str"."""
    import asyncio

    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from streamlit.proto.Slider_pb2 import Slider

    class Wire:
        sent: list[bytes] = []

        async def send(self, data: bytes) -> None:
            self.sent.append(data)

    s = _client()(0, "training")
    s._ws = Wire()
    fm = ForwardMsg()
    sl = fm.delta.new_element.slider
    sl.id, sl.type, sl.label = "w-train_replay_step", Slider.Type.SELECT_SLIDER, "Training step"
    sl.options[:], sl.default[:] = ["0", "16", "32"], [2]
    sl.raw_value[:], sl.set_value = ["16"], True               # the page set the step in session state
    s._on_delta(fm.delta)
    assert s.widgets["w-train_replay_step"].value == ["16"]

    def sent() -> list:
        msg = BackMsg()
        msg.ParseFromString(s._ws.sent[-1])
        (w,) = msg.rerun_script.widget_states.widgets
        return [w.WhichOneof("value"), list(w.string_array_value.data)]

    run_async(s._rerun(fragment_id="f"))                     # the polling fragment's rerun
    assert sent() == ["string_array_value", ["16"]]
    with pytest.raises(asyncio.TimeoutError):                  # no server answers here
        run_async(s.move_slider(s.widgets["w-train_replay_step"], 2, timeout=0.01))
    assert sent() == ["string_array_value", ["32"]]            # a move picks an option by index


async def until(cond, s, what: str, timeout: float = 60) -> None:
    """Wait until ``cond()`` holds for the websocket session ``s`` (or it shows an error)."""
    import asyncio
    import time

    end = time.monotonic() + timeout
    while not cond() and time.monotonic() < end and not s.errors:
        await asyncio.sleep(0.1)
    assert cond(), f"{what}: {s.diagnosis()}"


def test_start_a_training_through_the_websocket_client_raises_nothing():
    """The reported bug end to end: a local server, the websocket client opens /training, presses
    Start and answers the polling fragment's reruns while the replay slider follows the run."""
    import asyncio
    import time

    from tests.browser_util import Server

    Session = _client()

    async def scenario(port: int):
        s = Session(port, "training", "lang=zh&corpus=toy&preset=tiny")
        async with s:
            await s.wait_idle(180)
            await s.skip_questions()           # predict, then reveal: the whole chapter
            # the last skip's run may be followed by the page's own (a revealed section that polls
            # a task asks for it): the run section's Start comes with that run
            await until(lambda: s.button("train_start") is not None, s, "Start drawn", timeout=120)
            await s.click(s.button("train_start"), timeout=120)
            seen: set[str] = set()
            end = time.monotonic() + 120
            while time.monotonic() < end and len(seen) < 3 and not s.errors:
                w = next((w for w in s.sliders() if w.id.endswith("train_replay_step")), None)
                if w is not None and w.value:
                    seen.add(w.value[0])
                await asyncio.sleep(0.3)
            stop = s.button("train_stop")
            if stop is not None and not stop.disabled:
                await s.click(stop, timeout=60)
            return s.errors, seen, w

    srv = Server()
    try:
        errors, seen, w = run_async(scenario(srv.port))
    finally:
        srv.stop()
    assert errors == [], errors
    assert len(seen) >= 3, seen                                 # the slider followed new snapshots
    assert w.value[0] in w.options


def test_a_paused_run_has_no_timer_and_a_press_in_another_tab_is_pushed():
    """Two tabs of one run (the second opened from its ``?run=`` link): once paused, the second
    tab's live section has no timer left, so only the job's push (``Task.watch``) can show it the
    first tab's Resume, and it does; then a Stop while paused, the same way. On a loaded machine
    the pause lands while the run's process is still preparing: the end of preparing, which
    shows it paused, is pushed too (tests/test_train_worker.py; before, that tab read
    "Preparing" for good, and this test was an xfail)."""
    import asyncio

    from tests.browser_util import Server

    Session = _client()

    def enabled(s, key: str) -> bool:
        b = s.button(key)
        return b is not None and not b.disabled

    async def scenario(port: int):
        a = Session(port, "training", "lang=en&corpus=toy&preset=tiny")
        async with a:
            await a.wait_idle(180)
            await a.skip_questions()
            await until(lambda: a.button("train_start") is not None, a, "Start drawn")
            await a.click(a.button("train_start"), timeout=120)
            await until(lambda: "run=" in a.query, a, "the run's link")
            run = next(p for p in a.query.split("&") if p.startswith("run="))
            b = Session(port, "training", f"lang=en&corpus=toy&preset=tiny&{run}")
            async with b:
                await b.wait_idle(180)
                await b.skip_questions()
                await until(lambda: enabled(b, "train_pause"), b, "the second tab sees the run")
                await a.click(a.button("train_pause"))
                # the second tab, polling while the run ran, sees it at its next tick
                await until(lambda: enabled(b, "train_resume"), b, "the pause seen")
                await b.wait_idle(60)
                await until(lambda: not b._timers, b, "no timer while paused")
                # the first pause: its line is among the progress texts seen (``texts`` keeps the
                # last 200 of every markdown too, so a whole run of the page that a loaded
                # machine's reruns bring after it could push the line out)
                await until(lambda: any(x.startswith("paused ·") for x in b.progress_texts), b,
                            f"paused drawn (progress {b.progress_texts[-3:]}, alerts {b.alerts[-3:]})")
                runs = -1
                for _ in range(10):                       # a push that waited for a run to end lands after it
                    if b.runs == runs:
                        break
                    runs = b.runs
                    await asyncio.sleep(1.5)
                await asyncio.sleep(3)                    # longer than the running pace (2 s)
                assert b.runs == runs, b.diagnosis()      # and then nothing reruns it by itself
                await a.click(a.button("train_resume"))
                await until(lambda: enabled(b, "train_pause"), b, "the resume pushed")
                await until(lambda: enabled(a, "train_stop"), a, "Stop drawn")
                await a.click(a.button("train_pause"))
                await until(lambda: enabled(b, "train_resume") and not b._timers, b, "paused again")
                await a.click(a.button("train_stop"))
                await until(lambda: enabled(b, "train_start"), b, "the stop pushed")
                return a.errors + b.errors

    srv = Server()
    try:
        errors = run_async(scenario(srv.port))
    finally:
        srv.stop()
    assert errors == [], errors


def test_a_run_without_a_replay_says_why_from_its_state():
    """The replay's message follows the run's state: a run stopped before its first step is not
    said to lack known tokens (what a run that kept no snapshots is told)."""
    from ui.replay_section import Source, missing_key

    def live(state, steps):
        return Source("live", None, None, steps, state in ("running", "paused"), state)

    assert missing_key(Source("upload", None, None, [], False)) == "train.replay_missing"
    assert missing_key(live("preparing", [])) == "train.replay_none"
    assert missing_key(live("stopped", [])) == "train.replay_before_steps"
    assert missing_key(live("stopped", ["a step"])) == "train.replay_off"
    assert missing_key(live("done", ["a step"])) == "train.replay_off"
    for lang in ("en", "zh"):
        assert translate("train.replay_before_steps", lang) != translate("train.replay_off", lang)
