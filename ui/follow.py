"""Classroom mode on the Streamlit side: a lecturer drives a class, students follow and answer.

The shared state lives in :class:`lmviz.server.classroom.ClassStore` (one per process, or Redis when
``LMVIZ_REDIS_URL`` is set); this module only wires it to sessions:

- **Lecturer** (presenter mode): "Start a class" gives a class code and the student link
  ``?follow=CODE``. The secret stays in this session's state only (never in a URL: the
  lecturer's address bar is on the projector, and a copied presenter link would hand the class
  to whoever opens it). A websocket that drops and reconnects keeps the session and so the
  class; a hard reload starts a new class (the old one ends for its followers after
  ``ClassLimits.idle_expiry_s`` with the note "the lecturer left"). What the lecturer shows
  (chapter slug, ``?sec=`` and the chapter's URL settings) is published whenever
  ``ui.urlstate`` writes a setting and on every tick of a 1 s fragment, which is also the
  heartbeat.
- **Follower** (``?follow=CODE``): a fragment checks ``store.follow`` (one version read,
  redrawing only the small follow banner). The check runs when the class moves: the store tells
  every process of a new version (``ClassStore.watch``: at once in one process, Redis pub/sub
  across several) and :func:`pushes` reruns the check of each follower of that class in this
  process (``ui.runtime.rerun_fragment``: the server pushes, the browser does not ask). It also
  runs every ``FOLLOW_TICK_S`` seconds as a backstop (slower in a big class, ``follow_period``):
  the followers count, the answers' counts after a reveal, a push lost. Only on a new version
  does it switch to the lecturer's chapter (``st.switch_page``) or rerun the
  page, after putting the followed settings in ``lmviz_follow_pending``, which ``ui.urlstate``
  writes into the widgets' session-state keys as they are drawn. At most ``FOLLOW_RERUNS``
  followers of one process update at once (``follow_gate``): the others are woken as places are
  left, and the lecturer, who never waits at that gate, keeps the process. A move of settings
  drawn in fragments reruns just those fragments (``_fragments_for``), as on the lecturer's page;
  a student's pick and Send rerun just the answer box (``ui.questions``). Language is
  the follower's own. Stepping away (a button, or opening another chapter) keeps polling but
  applies nothing; "Rejoin" catches up at once.
- **Who is who**: an answer counts once per browser, through the signed cookie ``lmviz_id``
  that serve.py's page routes hand out (``browser``; without one, once per session), and the
  store bounds classes and answers per client address (``client_address``: behind nginx named
  in ``LMVIZ_TRUSTED_PROXIES``, the address nginx saw). URL parameters that are secrets
  (``SECRET_PARAMS``: ``run``) are never published to the class.
- **Predict, then reveal** (questions, the lecturer's asking and the room's answer box) is
  ``ui.questions``; it reads who this session is from here.

Nothing a student sends is drawn as HTML: a student sends only option ids, checked by the store.
"""
from __future__ import annotations

import secrets as _secrets
from urllib.parse import urlsplit

import streamlit as st

from lmviz.chapters import questions as qs
from lmviz.hf import MODEL_PARAM
from lmviz.server.classroom import (BrowserIds, ClassStore, FollowView, Gate, Pushes, lectures_elsewhere,
                                    normalise_code)
from lmviz.server.classroom_backend import store_from_env
from ui.i18n import t
from ui.runtime import (current_fragment_id, fragment_target, in_fragment_rerun, rerun_fragment,
                        rerun_fragments_here)

LECT = "class_lect"          # session key: {"code": str, "secret": str} while this session lectures
FOLLOW = "class_follow"      # session key: follower state (see follow_state)
NOTE = "class_note"          # session key: a note to show once following or lecturing ended
PENDING = "lmviz_follow_pending"   # session key: {param: raw value} the widgets take when drawn
DRAWN_IN = "lmviz_param_fragment"  # session key: {param: (chapter slug, fragment id or None)} where
                                   # the setting's widget was last drawn (a follower's fragment path)
SID = "class_sid"            # session key: this session's anonymous id in the store
# URL params that are not the chapter's settings. ``run`` is a training's secret (ui.session):
# it must never reach the class record (nor Redis), or every follower could take over the run.
SECRET_PARAMS = frozenset({"run"})
REVEALED = "_rv"            # published setting: the question ids the lecturer has revealed (comma list)
START = "start"              # URL param: a presenter link that starts a class as it opens (how a room
                             # replica's "Start a class" moves the lecturer: lmviz.server.classroom)
MOVING = "class_moving"      # session key: this tab reloads as such a link (its next run says so)
NOT_FOLLOWED = frozenset({"lang", "present", "follow", "sec", START, REVEALED}) | SECRET_PARAMS
TICK_S = 1.0                 # lecturer publish/heartbeat period
FOLLOW_TICK_S = 2.0          # a follower's check of the class when nothing was pushed (a version
                             # read; the page reruns only when the lecturer's state changed) ...
FOLLOW_POLLS_PER_S = 40      # ... slower in a big class: its followers check at most this often
                             # together (80 followers: every 2 s; 200: every 5 s)
FOLLOW_TICK_MAX_S = 5.0
FOLLOW_GATE_WAIT_S = 0.5     # a follower whose update finds the gate full waits this long for a place
FOLLOW_RERUNS = 1            # followers of one process that rerun their page at once (Gate): a
                             # process runs Python on one core at a time, so more at once only
                             # slows everyone, the lecturer included (bench/follow.py, 30
                             # followers, each leaving as its page run ends: 3 at once, the
                             # lecturer's own rerun 0.06-1.5 s and followers' p95 1.7-2.9 s;
                             # 1 at once, 0.04-0.25 s (once 0.58 s) and p95 0.66-0.77 s)

@st.cache_resource(show_spinner=False)
def store() -> ClassStore:
    """The process's class store (shared by every session; thread-safe)."""
    return store_from_env()


@st.cache_resource(show_spinner=False)
def browser_ids() -> BrowserIds:
    """Verifies the signed browser id that serve.py's page routes hand out (ui.first_paint)."""
    return BrowserIds()


@st.cache_resource(show_spinner=False)
def follow_gate() -> Gate:
    """The process's gate for followers' page updates (the lecturer never goes through it);
    ``LMVIZ_FOLLOW_RERUNS`` sets its size (default FOLLOW_RERUNS)."""
    from lmviz.server.env import env_count

    return Gate(env_count("LMVIZ_FOLLOW_RERUNS", FOLLOW_RERUNS))


@st.cache_resource(show_spinner=False)
def pushes() -> Pushes:
    """The process's followers by class: a class that moves reruns their checks (woken
    ``Pushes.per_s`` a second)."""
    p = Pushes(rerun_fragment)
    store().watch(p.moved)
    return p


def _leave_gate() -> None:
    """This follower's page update is done: leave the gate and wake whoever it lets in next."""
    pushes().wake(follow_gate().leave(sid()))


def sid() -> str:
    """This session's anonymous id (a follower's place in the follower count)."""
    if SID not in st.session_state:
        st.session_state[SID] = _secrets.token_urlsafe(12)
    return st.session_state[SID]


def browser() -> str:
    """This browser's verified id (the signed cookie ``lmviz_id``), "" without a valid one (the
    app run without serve.py, a client that drops cookies, or a forged value)."""
    try:
        raw = st.context.cookies.get(BrowserIds.COOKIE)
    except Exception:  # noqa: BLE001 - no client context (AppTest): no cookie
        return ""
    return browser_ids().verify(raw) or ""


def _connected() -> bool:
    """True when a browser (or a client speaking its protocol) holds this session's websocket."""
    try:
        return bool(st.context.headers)
    except Exception:  # noqa: BLE001 - no client context
        return False


def voter() -> str:
    """Who answers: the browser (every tab of it is one voter), else this session."""
    b = browser()
    return f"b:{b}" if b else f"s:{sid()}"


def client_address() -> str:
    """The client's address as the store's bounds count it
    (:func:`lmviz.server.classroom.client_address`: from a proxy in ``LMVIZ_TRUSTED_PROXIES``,
    the last X-Forwarded-For; else the peer)."""
    from lmviz.server.classroom import client_address as address_of

    try:
        headers = st.context.headers
        if not headers:
            return ""    # no client connection (AppTest): nothing to count by
        peer = st.context.ip_address
        forwarded = headers.get_all("X-Forwarded-For")
    except Exception:  # noqa: BLE001 - no client context
        return ""
    return address_of(peer, forwarded)


def current_slug() -> str:
    from ui.chapters import registered

    here = st.session_state.get("lmviz_page_file")
    return next((c.slug for c in registered() if c.file == here), "")


def lecturing() -> dict | None:
    return st.session_state.get(LECT)


def follow_state() -> dict | None:
    """This session's follower state (its class code, version, paused ...), or None when not following."""
    return st.session_state.get(FOLLOW)


def follow_code() -> str:
    """The code of the class this session follows ("" when it follows none)."""
    f = follow_state()
    return f["code"] if f else ""


def alone() -> bool:
    """True while this session neither lectures nor follows a class (or has stepped away from
    the one it follows): its questions are its own to answer."""
    return not lecturing() and not following()


def following() -> bool:
    """True while this session follows a live class and has not stepped away."""
    f = follow_state()
    return bool(f and not f["paused"])


def followed_view() -> FollowView | None:
    """The lecturer's state as last seen, while actively following."""
    f = follow_state()
    return f["view"] if f and not f["paused"] and f["view"] is not None else None


def _note(reason: str) -> None:
    st.session_state[NOTE] = reason


# ------------------------------------------------------------------------ URL, first run ------
def init_from_url() -> None:
    """On a session's first run, ``?follow=CODE`` makes it a follower (a bad code: a note)."""
    if "class_follow_seen" in st.session_state:
        return
    st.session_state["class_follow_seen"] = True
    raw = st.query_params.get("follow")
    if raw is None:
        return
    code = normalise_code(raw)
    if code is None:
        _note("bad_code")
        del st.query_params["follow"]
        return
    st.session_state[FOLLOW] = {"code": code, "version": -1, "paused": False, "view": None,
                                "expect": None, "epoch": store().epoch()}


# ------------------------------------------------------------------------ lecturer ------------
def lecturer_settings() -> dict[str, str]:
    return {k: v for k, v in st.query_params.to_dict().items()
            if k not in NOT_FOLLOWED and isinstance(v, str)}


def publish_now() -> None:
    """Publish what this lecturer's view shows (cheap; the version moves only on a change)."""
    lect = lecturing()
    if not lect:
        return
    sec = st.query_params.get("sec", "")
    slug = current_slug()
    if lect.get("chapter") not in (None, slug):
        # a new chapter: the room's question of the last one is put away
        v = store().lecturer_view(lect["code"], lect["secret"])
        q = qs.by_id(v.question.id) if v.ok and v.question else None
        if q is not None and q.chapter != slug:
            store().close_question(lect["code"], lect["secret"])
    lect["chapter"] = slug
    settings = lecturer_settings()
    if lect.get("revealed"):
        settings[REVEALED] = ",".join(sorted(lect["revealed"]))
    r = store().publish(lect["code"], lect["secret"], slug, sec if sec.isdigit() else "", settings)
    if not r.ok and r.reason in ("ended", "not_found", "wrong_secret"):
        st.session_state.pop(LECT, None)
        _note("ended" if r.reason != "not_found" else _vanished(lect.get("epoch")))


def _vanished(epoch: str | None) -> str:
    """Why a class the store no longer knows is gone: the store restarted without its data (a
    Redis restart without persistence), or the class ended so long ago it was forgotten."""
    return "store_restarted" if store().lost(epoch) else "lecturer_gone"


def _start_class() -> None:
    c = store().create_class(browser=browser(), address=client_address())
    if c.ok:
        st.session_state[LECT] = {"code": c.code, "secret": c.secret, "epoch": c.epoch}
        st.session_state.pop(NOTE, None)
    else:
        _note(c.reason)


def _move_to_lecture() -> None:
    st.session_state[MOVING] = True


def _reload_as_lecturer() -> None:
    """Reload this tab as a presenter link that starts the class (``?present=1&start=1``): its
    HTML hands out the lecture cookie, and nginx takes the new session to the lecture replica. A
    browser that refuses the cookie lands on a room replica again, which starts the class there."""
    st.caption(t("class.moving"))
    st.html(f"<script>var u=new URL(window.location.href);u.searchParams.set('present','1');"
            f"u.searchParams.set('{START}','1');window.location.replace(u.toString());</script>",
            unsafe_allow_javascript=True)


def _end_class() -> None:
    lect = st.session_state.pop(LECT, None)
    if lect:
        store().end_class(lect["code"], lect["secret"])
        _note("ended_by_lecturer")


def _student_link(code: str) -> str:
    """The link of the QR code: the class, and the lecturer's model when it is not the shipped one
    (``?model=``, so a student's first page already loads it; the shipped model's link stays
    short, and a short link's QR code has larger modules)."""
    from urllib.parse import quote

    from lmviz.hf import DEFAULT_ID

    try:
        u = urlsplit(st.context.url or "")
        base = f"{u.scheme}://{u.netloc}/" if u.scheme and u.netloc else "/"
    except Exception:  # noqa: BLE001 - a missing context (AppTest) gives a relative link
        base = "/"
    model = st.query_params.get(MODEL_PARAM)
    extra = f"&{MODEL_PARAM}={quote(model, safe='')}" if model and model != DEFAULT_ID else ""
    return f"{base}?follow={code}{extra}"


def lecturer_bar() -> None:
    """Presenter mode: "Start a class", or the running class's code, link, room and "End"."""
    lect = lecturing()
    if not lect and st.query_params.get(START) is not None:
        del st.query_params[START]          # a reload of the page starts no second class
        if st.session_state.get("present"):
            _start_class()
            lect = lecturing()
    if not lect:
        if st.session_state.pop(MOVING, False):
            _reload_as_lecturer()
        elif st.session_state.get("present"):
            st.button(t("class.start"), key="class_start", icon=":material/groups:", help=t("class.start_help"),
                      on_click=_move_to_lecture if lectures_elsewhere() else _start_class)
        return
    publish_now()   # the full run's state (a new chapter or section) goes out at once
    if not lecturing():
        st.rerun(scope="app")   # the class is gone: show the note (drawn above) at once
    _lecturer_tick()


def _code_html(code: str) -> str:
    """The class code in type large enough to read from the back of a hall."""
    import html

    return (f'<div class="lmviz-class-code" style="font-size:clamp(2.5rem,5vw,5rem);font-weight:700;'
            f'letter-spacing:.12em;line-height:1.1;font-family:monospace">{html.escape(code)}</div>')


def qr_img(link: str) -> str:
    """A QR code of the student link as an ``<img>`` with an SVG data URI (segno, offline; cached
    per link). ``st.html`` sanitises with DOMPurify, which drops an inline ``<svg>`` (the code was
    an empty box of height 0) but keeps an image's data URI. Its side is 30 % of the window's
    height (216 px at 720p, 324 px at 1080p): a 33-module code then has modules of 6.5-10 px,
    which a phone's camera reads from the back rows of a hall off a projector. A phone's camera
    opens the link; the link still works when typed."""
    return _qr_img(link)


@st.cache_data(max_entries=64, show_spinner=False)
def _qr_img(link: str) -> str:
    import segno

    uri = segno.make(link, error="m").svg_data_uri(scale=1, border=2, dark="#000", light="#fff")
    return (f'<img class="lmviz-qr" src="{_attr(uri)}" alt="{_attr(t("class.qr_alt", link=link))}" '
            'style="width:min(30vh,100%);height:auto;aspect-ratio:1;image-rendering:pixelated;'
            'display:block">')


def _attr(text: str) -> str:
    import html

    return html.escape(text, quote=True)


@st.fragment(run_every=TICK_S)
def _lecturer_tick() -> None:
    lect = lecturing()
    if not lect:
        return
    if in_fragment_rerun():
        publish_now()   # heartbeat, and any setting a fragment changed since
        lect = lecturing()
        if not lect:
            st.rerun(scope="app")
    view = store().lecturer_view(lect["code"], lect["secret"])
    if not view.ok and view.reason != "store_unavailable":
        st.session_state.pop(LECT, None)
        if view.reason == "not_found":
            _note(_vanished(lect.get("epoch")))
        else:
            _note(view.reason if view.reason in ("ended_by_lecturer", "lecturer_gone", "too_long",
                                                 "reclaimed") else "ended")
        st.rerun(scope="app")
    with st.container(border=True):
        # the code and the link on the left, in a column wide enough for the code's seven letters
        # at their largest (the link's box ran over the code's last letter beside a 3:5 split)
        left, mid, right = st.columns([5, 3, 2], vertical_alignment="center")
        link = _student_link(lect["code"])
        with left:
            st.markdown(t("class.code", cls=lect["code"]))
            st.html(_code_html(lect["code"]))
            st.code(link, language=None)
            if view.ok:
                st.caption(t("class.followers", n=view.followers))
            else:
                st.caption(t(f"class.reason.{view.reason}"))
            if MODEL_PARAM not in st.query_params:      # a model of this session (ui.session.model_menu)
                st.caption(t("class.own_model"))
        mid.html(qr_img(link))
        right.button(t("class.end"), key="class_end", on_click=_end_class, icon=":material/stop_circle:")


# ------------------------------------------------------------------------ follower ------------
def _apply(view: FollowView, f: dict) -> None:
    """Take the lecturer's settings and chapter (called on a new version, not paused)."""
    from ui.chapters import by_slug, registered

    st.session_state[PENDING] = dict(view.settings)
    if view.section:
        st.session_state["lmviz_follow_section"] = view.section
    files = {c.slug: c.file for c in registered()}
    f["expect"] = view.chapter if view.chapter in files else current_slug()
    if view.chapter in files and view.chapter != current_slug():
        st.switch_page(by_slug(view.chapter).file)
    if in_fragment_rerun() or _sidebar_behind(view):
        f["rerun_to"] = f["expect"]    # this rerun is the class's, not the student's (follower_bar)
        st.rerun(scope="app")


def _sidebar_behind(view: FollowView) -> bool:
    """Whether this run's sidebar drew another model than the lecturer's (a model only the
    lecturer's session holds: the shipped one; a model only this session holds has no ``?model=``):
    the sidebar's model menu (ui.session.model_menu) runs before the page, where the check that
    takes the lecturer's state runs, so a student's first page run (the student link's redirect
    lands it on the lecturer's chapter, no page switch follows) runs again to take it."""
    from lmviz.hf import DEFAULT_ID

    return view.settings.get(MODEL_PARAM, DEFAULT_ID) != st.query_params.get(MODEL_PARAM)


def _step_away() -> None:
    f = follow_state()
    if f:
        f["paused"] = True
        store().leave(f["code"], sid())
        pushes().drop(sid())


def _rejoin() -> None:
    f = follow_state()
    if f:
        f["paused"] = False
        f["version"] = -1     # the next poll applies the lecturer's state at once


def _stop_following(reason: str) -> None:
    pushes().drop(sid())
    st.session_state.pop(FOLLOW, None)
    st.session_state.pop(PENDING, None)
    _note(reason)
    if "follow" in st.query_params:
        del st.query_params["follow"]


def follower_bar() -> None:
    """The follow banner and the poll; also notices a student who opened another chapter."""
    f = follow_state()
    if not f:
        return
    ours = f.pop("rerun_to", None)     # this run is the page update the follower's check asked for
    if not f["paused"] and f["expect"] is not None and current_slug() != f["expect"]:
        if ours == f["expect"]:
            # st.rerun reruns the page the check's request named, and a request sent before the
            # browser learned of an earlier switch names the page it left: not the student's
            # choice (before, bench/room_ws.py found 8-12 of 100 students "exploring" a round)
            from ui.chapters import by_slug

            st.switch_page(by_slug(f["expect"]).file)      # ends this run
        else:
            f["paused"] = True      # the student opened another chapter: exploring
            store().leave(f["code"], sid())
            pushes().drop(sid())
    st.query_params["follow"] = f["code"]
    if "followers" not in f:    # a new follower: the class's size sets how often it checks
        f["followers"] = store().follow(f["code"], sid(), -2).followers
    # the check's period, chosen at each page run from the class's size (see FOLLOW_POLLS_PER_S)
    st.fragment(run_every=follow_period(f["followers"]))(_follower_tick)()


def page_done() -> None:
    """The end of a whole page run (app.py): a follower let through the gate for it leaves now,
    so the next follower's update goes through without waiting for this one's next check."""
    f = follow_state()
    if f:
        f.pop("drawing", None)          # the page has drawn the version it was let in for
    if f and _connected():
        _leave_gate()


def follow_period(followers: int) -> float:
    """Seconds between a follower's checks of its class: FOLLOW_TICK_S, longer in a big class."""
    return min(FOLLOW_TICK_MAX_S, max(FOLLOW_TICK_S, followers / FOLLOW_POLLS_PER_S))


def known_version(f: dict, ticking: bool) -> int:
    """The class version this follower's page shows: the one it applied, once the page run it
    asked for has ended (page_done); at a check that finds that run never ended (cut short
    before the page drew the lecturer's state), none, so the state is applied again
    (tests/test_classroom.py)."""
    return -1 if ticking and f.get("drawing") is not None else f["version"]


def _follower_tick() -> None:
    f = follow_state()
    if not f:
        return
    ticking = in_fragment_rerun()
    if ticking:
        _leave_gate()   # the page run this follower was let in for has finished
    view = store().follow(f["code"], sid(), -2 if f["paused"] else known_version(f, ticking))
    if view.status in ("ended", "not_found", "bad_code", "rate_limited", "bad_session"):
        reason = view.reason or view.status
        _stop_following(_vanished(f.get("epoch")) if reason == "not_found" and f.get("epoch") else reason)
        st.rerun(scope="app")
    f["followers"] = view.followers
    with st.container(border=True):
        left, right = st.columns([7, 2], vertical_alignment="center")
        if view.status == "unavailable":
            left.warning(t("class.reason.store_unavailable"))
        elif f["paused"]:
            left.markdown(t("class.exploring", cls=f["code"]))
            right.button(t("class.rejoin"), key="class_rejoin", on_click=_rejoin, type="primary",
                         icon=":material/sync:")
        else:
            left.markdown(t("class.following", cls=f["code"]))
            right.button(t("class.step_away"), key="class_away", on_click=_step_away,
                         icon=":material/explore:")
    if view.status != "live" or f["paused"]:
        return
    target = fragment_target()
    if target is not None:
        pushes().follow(f["code"], sid(), target)     # the next move of the class reruns this check
    if view.changed:
        # a browser's tab leaves the gate when the page run ends (page_done) or at its next
        # tick; a session without a client connection (AppTest) never ticks, so it does not
        # queue there
        if _connected() and not follow_gate().enter(sid(), wait_s=FOLLOW_GATE_WAIT_S):
            return   # this replica's follower updates are all busy: woken when its turn comes
        before = f.get("view")
        f["version"] = view.version
        f["view"] = view
        fragments = _fragments_for(before, view) if ticking else None
        if fragments:
            st.session_state[PENDING] = {k: v for k, v in view.settings.items() if before.settings.get(k) != v}
            # those fragments, then this check again, which leaves the gate: one follower's
            # update at a time, as for a page run (a room's fragments at once slowed the
            # lecturer's own run 3-6 fold, bench/follow.py)
            if rerun_fragments_here([*fragments, current_fragment_id()]):
                return
        f["drawing"] = view.version
        _apply(view, f)
    elif f["view"] is not None and view.question != f["view"].question:
        f["view"] = view     # counts after a reveal (no version move): keep the latest


# ui.urlstate reaches classroom mode through these two calls: a widget of ``?param=`` about to be
# drawn asks for the lecturer's value (:func:`pending`); a setting written tells the class (:func:`published`).
def pending(param: str) -> str | None:
    """The widget of ``?param=`` is being drawn: a follower notes where (:func:`_drawn_in`) and
    takes the lecturer's raw value for it, once (None: none waiting, or not following)."""
    if not following():
        return None
    _drawn_in(param)
    return _take_pending(param)


def published(param: str) -> None:
    """``?param=`` was written (or removed): a lecturer's class sees it at once."""
    if lecturing():
        publish_now()


def _drawn_in(param: str) -> None:
    """Note where the widget of ``?param=`` is being drawn: the fragment it is in, or none (drawn
    by the page's own run). A follower whose class changed only such settings reruns just those
    fragments (:func:`_fragments_for`)."""
    st.session_state.setdefault(DRAWN_IN, {})[param] = (current_slug(), current_fragment_id())


def _fragments_for(before: FollowView | None, view: FollowView) -> list[str] | None:
    """The fragments to rerun to take the lecturer's new settings, as the lecturer's own page did
    when the lecturer moved them (a slider in a section: that section's fragment), instead of the
    whole page: when the chapter, section and question (which one, and whether revealed) are
    unchanged and every changed setting's widget was drawn in a fragment of this chapter. None for
    any other change: the page reruns (:func:`_apply`)."""
    if before is None or before.status != "live" or view.chapter != before.chapter \
            or view.chapter != current_slug() or view.section != before.section:
        return None
    q0, q1 = before.question, view.question
    if (q0 and (q0.id, q0.revealed)) != (q1 and (q1.id, q1.revealed)):
        return None
    changed = {k for k in {*before.settings, *view.settings} if before.settings.get(k) != view.settings.get(k)}
    where = st.session_state.get(DRAWN_IN, {})
    spots = [where.get(k) for k in changed]
    if not changed or any(k not in view.settings for k in changed) \
            or any(spot is None or spot[0] != view.chapter or spot[1] is None for spot in spots):
        return None
    return [spot[1] for spot in spots]


def _take_pending(param: str) -> str | None:
    """A followed raw value for ``?param=`` (once), or None."""
    waiting = st.session_state.get(PENDING)
    if not waiting or param not in waiting:
        return None
    return waiting.pop(param)


def followed_section(n: int) -> int | None:
    """The lecturer's section index (0-based) for a chapter of ``n`` sections, while following."""
    v = followed_view()
    if v is None or v.chapter != current_slug() or not v.section.isdigit():
        return None
    i = int(v.section) - 1
    return i if 0 <= i < n else None


def notes_bar() -> None:
    reason = st.session_state.get(NOTE)
    if not reason:
        return
    left, right = st.columns([8, 1], vertical_alignment="center")
    left.info(t("class.ended_note", reason=t(f"class.reason.{reason}")), icon=":material/info:")
    right.button(t("class.dismiss"), key="class_dismiss",
                 on_click=lambda: st.session_state.pop(NOTE, None))


def top() -> None:
    """Everything classroom mode draws above a page (called by app.py before the page runs)."""
    init_from_url()
    notes_bar()
    lecturer_bar()
    follower_bar()
