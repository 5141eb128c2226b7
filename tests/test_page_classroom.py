"""Classroom mode through the app (AppTest): a lecturer's session publishes, a follower session
shows the lecturer's chapter and settings in its own language, a student cannot drive, answers
once, sees the reveal, and the class ends with a note. Two AppTest sessions in one process share
the class store (``ui.follow.store`` is a process-wide resource), as two browser tabs would.
"""
from __future__ import annotations

import pytest

from tests.apptest_util import TIMEOUT, all_text, open_page
from tests.test_page_hf import smollm2_only  # noqa: F401 - a fixture: the installed SmolLM2 the only pretrained model
from ui.i18n import translate

pytestmark = pytest.mark.apptest
GEN = "chapters/generation.py"


def keys(at) -> set[str]:
    return {b.key for b in at.button if b.key}


def start_class(at):
    at.button(key="class_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at.session_state["class_lect"]["code"]


def join(code: str, **kw):
    """A student's tab opening the lecturer's follow link on the home page, then its next run."""
    fol = open_page(None, follow=code, **kw)
    fol.run()
    return fol


@pytest.fixture
def lecture():
    lec = open_page(GEN, present="1")
    code = start_class(lec)
    return lec, code


def show_temperature(lec):
    """The lecturer shows the temperature section without asking its question, sets τ = 0.5."""
    assert "gen_tau" not in {s.key for s in lec.slider}      # hidden until revealed
    lec.button(key="class_show:gen_tau_half").click().run()
    assert not lec.exception, [e.value for e in lec.exception]
    lec.slider(key="gen_tau").set_value(0.5).run()
    assert lec.query_params["tau"] == ["0.5"] or lec.query_params["tau"] == "0.5"


def test_follower_gets_chapter_and_setting_in_own_language(lecture):
    lec, code = lecture
    show_temperature(lec)
    fol = join(code, lang="zh")                         # opens the link on the home page
    assert not fol.exception, [e.value for e in fol.exception]
    assert fol.session_state["lmviz_page_file"] == GEN
    assert fol.slider(key="gen_tau").value == 0.5
    text = all_text(fol)
    assert translate("gen.title", "zh") in text                   # the follower's language
    assert translate("class.following", "zh", cls=code) in text
    # the lecturer moves on: the follower's next poll takes the new value
    lec.slider(key="gen_tau").set_value(1.5).run()
    fol.run()
    assert fol.slider(key="gen_tau").value == 1.5


def test_on_a_room_replica_start_reloads_as_a_presenter_link_that_starts_the_class(monkeypatch):
    """Behind nginx a lecturer lectures on a replica of its own (lmviz.server.classroom): on a
    replica that serves the room (LMVIZ_ROLE=room), "Start a class" starts none there; it reloads
    the tab as a presenter link with ``start=1`` (whose HTML hands out the lecture cookie), and
    that link's session, on the lecture replica, starts the class and drops ``start`` from the URL."""
    monkeypatch.setenv("LMVIZ_ROLE", "room")
    room = open_page(GEN, present="1")
    room.button(key="class_start").click().run()
    assert not room.exception, [e.value for e in room.exception]
    assert "class_lect" not in room.session_state
    assert translate("class.moving", "en") in all_text(room)
    script = next(h.proto.body for h in room.get("html") if "location.replace" in h.proto.body)
    assert "location.replace" in script and "'start','1'" in script and "'present','1'" in script
    room.run()                                          # moved once: the button is back, no loop
    assert "class_start" in keys(room)
    monkeypatch.delenv("LMVIZ_ROLE")
    lecture = open_page(GEN, present="1", start="1")    # the reloaded tab, on the lecture replica
    code = lecture.session_state["class_lect"]["code"]
    assert code and "start" not in lecture.query_params and "class_end" in keys(lecture)
    lecture.run()                                       # one class: its reruns start no second one
    assert lecture.session_state["class_lect"]["code"] == code
    student = open_page(GEN, start="1")                 # not in presenter mode: starts nothing
    assert "class_lect" not in student.session_state and "start" not in student.query_params


def test_student_cannot_drive(lecture):
    from ui.follow import store

    lec, code = lecture
    fol = join(code)
    assert "class_lect" not in fol.session_state
    assert not keys(fol) & {"class_end", "class_start"}
    assert not any(k.startswith(("class_ask:", "class_reveal:", "class_close:")) for k in keys(fol))
    assert "?follow=" in lec.code[0].value and lec.session_state["class_lect"]["secret"] not in lec.code[0].value
    assert store().publish(code, "guess", "cost").reason == "wrong_secret"
    assert store().end_class(code, "").reason == "wrong_secret"


def test_answer_once_and_reveal(lecture):
    from ui.follow import store

    lec, code = lecture
    fol = join(code)
    lec.button(key="class_ask:gen_tau_half").click().run()
    assert "class_reveal:gen_tau_half" in keys(lec)
    fol.run()
    fol.radio(key="class_ans:gen_tau_half").set_value("rises").run()
    fol.button(key="class_ans:gen_tau_half:send").click().run()
    assert not fol.exception, [e.value for e in fol.exception]
    sent = translate("class.sent", "en", answer=translate("q.gen_tau_half.opt.rises", "en"))
    assert sent in [i.value for i in fol.info]
    h = store().histogram(code, lec.session_state["class_lect"]["secret"], "gen_tau_half")
    assert (h.total, h.counts["rises"]) == (1, 1)
    # a second answer from the same session is refused; the page offers no second try
    sid = fol.session_state["class_sid"]        # no browser cookie (AppTest): the session votes
    assert store().answer(code, f"s:{sid}", "gen_tau_half", "falls").reason == "already_answered"
    assert "class_ans:gen_tau_half:send" not in keys(fol)
    lec.run()
    # before the reveal: the projector shows how many answered, not how; the answering section
    # (its slider, its table) is drawn for no one
    text = all_text(lec)
    assert translate("class.answered_n", "en", n=1) in text
    assert translate("class.answers", "en", n=1) not in text
    assert "gen_tau" not in {s.key for s in lec.slider} | {s.key for s in fol.slider}
    assert not lec.dataframe and not fol.dataframe
    lec.toggle(key="class_dist:gen_tau_half").set_value(True).run()    # the lecturer's peek
    assert translate("class.answers", "en", n=1) in all_text(lec)
    lec.button(key="class_reveal:gen_tau_half").click().run()
    assert not lec.exception, [e.value for e in lec.exception]
    assert "gen_tau" in {s.key for s in lec.slider} and lec.dataframe
    fol.run()
    right = translate("class.right", "en", answer=translate("q.gen_tau_half.opt.rises", "en"))
    assert right in [s.value for s in fol.success]
    # the answered question folds to its verdict, so the section below is what the phone shows
    assert [e.label for e in fol.expander if e.label == right] == [right]
    assert "gen_tau" in {s.key for s in fol.slider} and fol.dataframe


def test_step_away_and_rejoin(lecture):
    lec, code = lecture
    show_temperature(lec)
    fol = join(code)
    fol.button(key="class_away").click().run()
    assert translate("class.exploring", "en", cls=code) in all_text(fol)
    lec.slider(key="gen_tau").set_value(2.0).run()
    fol.run()
    assert fol.slider(key="gen_tau").value == 0.5           # exploring: not moved
    fol.button(key="class_rejoin").click().run()
    fol.run()
    assert fol.slider(key="gen_tau").value == 2.0


def test_class_ends_with_a_note(lecture):
    lec, code = lecture
    fol = join(code)
    lec.button(key="class_end").click().run()
    assert "class_lect" not in lec.session_state
    fol.run()
    assert not fol.exception
    note = translate("class.ended_note", "en", reason=translate("class.reason.ended_by_lecturer", "en"))
    assert note in [i.value for i in fol.info]
    assert "class_follow" not in fol.session_state and "follow" not in fol.query_params


def test_bad_follow_code_is_a_note():
    fol = open_page(None, follow="<b>x</b>")
    assert not fol.exception
    assert translate("class.reason.bad_code", "en") in " ".join(i.value for i in fol.info)


def test_alone_a_student_predicts_then_sees_the_reveal():
    at = open_page(GEN, predicted=False)
    assert "class_solo:gen_tau_half:check" in keys(at)
    assert "gen_tau" not in {s.key for s in at.slider} and not at.dataframe   # not drawn yet
    at.radio(key="class_solo:gen_tau_half").set_value("falls").run()
    at.button(key="class_solo:gen_tau_half:check").click().run()
    assert not at.exception
    wrong = translate("class.wrong", "en", answer=translate("q.gen_tau_half.opt.rises", "en"))
    assert wrong in [e.value for e in at.error]
    from lmviz.chapters.questions import by_id

    s = by_id("gen_tau_half").solve()
    assert translate("q.gen_tau_half.explain", "en", **s.explain_args) in all_text(at)
    assert "gen_tau" in {s.key for s in at.slider} and at.dataframe            # now it is


def test_alone_a_student_may_skip():
    at = open_page(GEN, predicted=False)
    at.button(key="class_solo:gen_tau_half:skip").click().run()
    assert not at.exception
    answer = translate("class.answer_is", "en", answer=translate("q.gen_tau_half.opt.rises", "en"))
    assert answer in [e.value for e in at.success]
    assert "gen_tau" in {s.key for s in at.slider}


def test_follower_sees_the_lecturers_section(lecture):
    lec, code = lecture
    fol = join(code)
    headers = lambda at: [m.value for m in at.markdown if m.value.startswith("## ")]   # noqa: E731
    assert headers(fol) == ["## " + translate("gen.sec_temp", "en")]
    lec.button(key="lmviz_next").click().run()
    fol.run()
    assert headers(fol) == ["## " + translate("gen.sec_filter", "en")]
    # stepped away, the student sees the whole chapter
    fol.button(key="class_away").click().run()
    assert len(headers(fol)) > 1


def test_lecturer_gone_ends_following_with_a_note(lecture):
    from ui.follow import store

    lec, code = lecture
    fol = join(code)
    s = store()
    real = s._clock
    s._clock = lambda: real() + s.limits.idle_expiry_s + 5     # the lecturer's tab closed minutes ago
    try:
        fol.run()
    finally:
        s._clock = real
    assert not fol.exception
    note = translate("class.ended_note", "en", reason=translate("class.reason.lecturer_gone", "en"))
    assert note in [i.value for i in fol.info]
    lec.run()                                   # the lecturer's bar says so too, no error
    assert not lec.exception and "class_lect" not in lec.session_state


def test_next_chapter_puts_the_last_question_away(lecture):
    from ui.follow import store

    lec, code = lecture
    lec.button(key="class_ask:gen_tau_half").click().run()
    secret = lec.session_state["class_lect"]["secret"]
    assert store().lecturer_view(code, secret).question.id == "gen_tau_half"
    lec.switch_page("chapters/kv_cache.py").run()
    assert not lec.exception
    assert store().lecturer_view(code, secret).question is None
    fol = join(code)
    assert fol.session_state["lmviz_page_file"] == "chapters/kv_cache.py"
    assert translate("class.asked", "en") not in all_text(fol)


def test_a_new_tab_of_one_browser_answers_once(lecture, monkeypatch):
    """Issue 28, fault 5: an answer was keyed by the Streamlit session, so every new tab voted
    again. With the signed browser cookie (ui.follow.browser) every tab is one voter."""
    from ui import follow

    monkeypatch.setattr(follow, "browser", lambda: "oneBrowserId0001")
    lec, code = lecture
    lec.button(key="class_ask:gen_tau_half").click().run()
    tab1, tab2 = join(code), join(code)
    tab1.radio(key="class_ans:gen_tau_half").set_value("rises").run()
    tab1.button(key="class_ans:gen_tau_half:send").click().run()
    tab2.run()
    sent = translate("class.sent", "en", answer=translate("q.gen_tau_half.opt.rises", "en"))
    assert sent in [i.value for i in tab2.info]              # the other tab knows the answer
    assert "class_ans:gen_tau_half:send" not in keys(tab2)
    h = follow.store().histogram(code, lec.session_state["class_lect"]["secret"], "gen_tau_half")
    assert h.total == 1


def test_the_run_secret_is_never_published():
    """Issue 28, fault 10: the lecturer's ?run= (a training's secret) went into the class record,
    so it sat in Redis and reached every follower."""
    from tests.test_classroom import stored
    from ui import follow

    lec = open_page(GEN, present="1", run="TrainingSecretXYZ123")
    code = start_class(lec)
    lec.button(key="class_show:gen_tau_half").click().run()     # the section with the slider
    lec.slider(key="gen_tau").set_value(0.5).run()
    assert "TrainingSecretXYZ123" not in stored(follow.store()._db)
    fol = join(code)
    view = follow.store().follow(code, "check")
    assert "run" not in view.settings and view.settings.get("tau") == "0.5"
    assert "TrainingSecretXYZ123" not in str(fol.query_params)


def test_a_store_that_lost_its_data_says_so(lecture):
    """Issue 28, fault 13: after a Redis crash the class was gone and the lecturer read "the
    lecturer's page has been closed". Now both roles are told the class service restarted."""
    from ui import follow

    lec, code = lecture
    fol = join(code)
    db = follow.store()._db
    db._data.clear()                      # what a Redis restart without persistence leaves
    db._z.clear()
    fol.run()
    lec.run()
    note = translate("class.ended_note", "en", reason=translate("class.reason.store_restarted", "en"))
    for at in (fol, lec):
        assert not at.exception
        assert note in [i.value for i in at.info]
    assert "class_lect" not in lec.session_state and "class_follow" not in fol.session_state


class _Headers(dict):
    def get_all(self, key):
        return [v for k, v in self.items() if k.lower() == key.lower()]


@pytest.mark.parametrize("peer,forwarded,trusted,want", [
    ("93.184.216.34", None, "", "93.184.216.34"),                       # a direct client
    (None, None, "", "127.0.0.1"),                                      # loopback (Streamlit says None)
    (None, "198.51.100.1, 203.0.113.7", "127.0.0.1", "203.0.113.7"),    # behind nginx: the entry nginx added
    (None, "198.51.100.1, 203.0.113.7", "", "127.0.0.1"),               # a spoof from loopback, no proxy set
    ("127.0.0.1", "203.0.113.7", "10.0.0.2", "127.0.0.1"),              # ... or another proxy set
    ("10.0.0.2", "203.0.113.7", "127.0.0.1,10.0.0.2", "203.0.113.7"),   # nginx on the private network ...
    ("10.0.0.3", "203.0.113.7", "10.0.0.2", "10.0.0.3"),                # ... only the one the replica names
    ("93.184.216.34", "198.51.100.1", "10.0.0.2", "93.184.216.34"),     # a public client's own claim: ignored
    (None, "not-an-address", "127.0.0.1", "127.0.0.1"),
    (None, "2001:db8:1:2::99", "127.0.0.1", "2001:db8:1:2::/64"),
])
def test_the_client_address_behind_a_proxy_is_the_one_nginx_saw(monkeypatch, peer, forwarded, trusted, want):
    """X-Forwarded-For is believed only from a peer in LMVIZ_TRUSTED_PROXIES (unset: from none,
    loopback included), so a spoofed header reaching the server directly changes nothing."""
    from types import SimpleNamespace

    from ui import follow

    headers = _Headers({"Host": "lmviz.example"})
    if forwarded:
        headers["X-Forwarded-For"] = forwarded
    monkeypatch.setattr(follow.st, "context", SimpleNamespace(headers=headers, ip_address=peer))
    if trusted:
        monkeypatch.setenv("LMVIZ_TRUSTED_PROXIES", trusted)
    else:
        monkeypatch.delenv("LMVIZ_TRUSTED_PROXIES", raising=False)
    assert follow.client_address() == want


def test_lecturer_screen_shows_the_code_large_and_a_qr_code_of_the_link(lecture):
    lec, code = lecture
    bodies = [e.proto.body for e in lec.get("html")]
    link = lec.code[0].value
    assert link.endswith(f"?follow={code}")
    assert any("lmviz-class-code" in b and f">{code}<" in b for b in bodies)
    qr = [b for b in bodies if "lmviz-qr" in b]
    # an <img> of an SVG data URI (st.html's DOMPurify drops an inline <svg>); the browser test
    # tests/test_browser_qr.py decodes the drawn code from a screenshot
    assert len(qr) == 1 and '<img class="lmviz-qr" src="data:image/svg+xml' in qr[0] and link in qr[0]
    assert "<svg" not in qr[0]



def _a_run_on_another_page(ours: bool):
    """ui.follow.follower_bar in a whole run on the home page while the class is on
    /generation: the rerun the follower's check asked for (``ours``) or the student's own."""
    import streamlit as st

    from ui import follow

    asked = []

    class Asked(Exception):
        pass

    def switch_page(page, **kw):
        asked.append(("switch_page", str(page)))
        raise Asked

    def rerun(**kw):
        asked.append(("rerun", kw.get("scope")))
        raise Asked

    f = {"code": "ABCDEFG", "paused": False, "expect": "generation", "followers": 1, "version": 3,
         "view": None, **({"rerun_to": "generation"} if ours else {})}
    st.session_state[follow.FOLLOW] = f
    saved = (follow.current_slug, follow._follower_tick, st.switch_page, st.rerun)
    follow.current_slug, follow._follower_tick = (lambda: ""), (lambda: None)   # no check run here
    st.switch_page, st.rerun = switch_page, rerun
    try:
        follow.follower_bar()
    except Asked:
        pass
    finally:
        follow.current_slug, follow._follower_tick, st.switch_page, st.rerun = saved
    st.write(f"{asked!r} {f['paused']}")


@pytest.mark.parametrize("ours, want", [
    (True, "[('switch_page', 'chapters/generation.py')] False"),   # back to the class's page
    (False, "[] True"),                                            # the student went exploring
])
def test_the_classs_own_rerun_landing_on_the_page_left_is_not_exploring(ours, want):
    """The follower's check reruns the page with st.rerun, which reruns the page its request
    named; a request sent before the browser learned of an earlier switch names the page the
    student left. That run took the student for one exploring another chapter, who then never
    saw the lecturer's question (bench/room_ws.py: 8-12 of 100 students a round)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_a_run_on_another_page, args=(ours,), default_timeout=TIMEOUT).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.markdown[0].value == want


def test_model_setup_advice_is_for_the_server_not_a_classs_students(lecture, monkeypatch):
    """Issue 56 item 9: the sidebar's sentence on adding a pretrained model (set-up advice, the
    environment variable only in docs/models.md) shows to a visitor alone, never to a class's
    students."""
    import ui.session

    monkeypatch.setattr(ui.session, "pretrained_models", lambda: [])
    advice = translate("model.none_found", "zh")
    assert "LMVIZ_" not in advice and "docs/models.md" in advice

    def sidebar(at) -> str:
        return " ".join(str(c.value) for c in at.sidebar.caption)
    assert advice in sidebar(open_page(None, lang="zh"))
    _, code = lecture
    assert advice not in sidebar(join(code, lang="zh"))


def test_a_follower_draws_the_lecturers_smollm2_and_the_student_link_names_it(smollm2_only):
    """The lecturer's model travels with the class's state (``?model=``, ui.session.model_menu):
    a student who opens the class's code alone (no ?model= in the link) draws the lecturer's
    SmolLM2 in the lecturer's chapter, in its own language, from the server's one copy; the QR
    code's link names the model, so a student's first page loads it at once."""
    path = smollm2_only
    lec = open_page(None, present="1", model="smollm2")       # the class starts on the overview
    code = start_class(lec)
    assert lec.code[0].value.endswith(f"?follow={code}&model=smollm2")
    assert translate("class.own_model", "en") not in [c.value for c in lec.caption]
    # the student's first page run, on the lecturer's page: its sidebar ran before the class's
    # state arrived, and the run starts again to take the model (in a browser no whole run
    # would follow on its own)
    fol = open_page(None, follow=code, lang="zh")
    b = fol.session_state["lmviz_session_bundle"]
    assert b.meta["path"] == str(path) and b.model is lec.session_state["lmviz_session_bundle"].model
    lec.switch_page("chapters/tokenization.py").run()
    mine = "SmolLM2-135M-Instruct's tokenizer has 49,152 token IDs"
    for _ in range(12):                               # the lecturer steps to the real tokenizer
        if mine in all_text(lec):
            break
        lec.button(key="lmviz_next").click().run()
    assert mine in all_text(lec)
    fol.run()
    assert not fol.exception, [e.value for e in fol.exception]
    assert fol.session_state["lmviz_page_file"] == "chapters/tokenization.py"
    text = all_text(fol)
    assert translate("class.following", "zh", cls=code) in text
    assert "SmolLM2-135M-Instruct 的分词器有 49,152 个 token ID" in text
