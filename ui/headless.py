"""A headless Streamlit client over the app's own websocket: the server's own first visit of every
chapter at start (ui/warmup.py), and the load benchmarks (bench/) and deploy/warm.py.

It speaks the protocol the browser speaks (``/_stcore/stream``, protobuf ``BackMsg`` /
``ForwardMsg``): it opens a page, records the widgets the server sends, answers the server's
auto-rerun requests (``st.fragment(run_every=...)``) as the browser does, and changes a slider
by sending a rerun with the new widget state — the fragment's id included when the slider lives
in a fragment, so the server does exactly the work a browser's slider drag causes. It draws
nothing, so a benchmark on a 2-core machine measures the server, not Chromium.

    async with Session(port, "generation", "lang=zh") as s:
        await s.wait_idle()
        ms = await s.move_slider(s.sliders()[0], 0.5)     # seconds until the rerun finished

Only 127.0.0.1 is ever contacted.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.Slider_pb2 import Slider as SliderProto

FINISHED_OK = (0, 3)            # ScriptFinishedStatus: whole run, fragment run (in that order)
FINISHED_RERUN = 2              # stopped early because another rerun was requested


@dataclass
class Widget:
    id: str                     # the widget id the server gave it
    kind: str                   # "slider", "button", ...
    label: str
    fragment_id: str            # "" when not inside a fragment
    lo: float = 0.0             # slider range
    hi: float = 0.0
    value: list | None = None   # slider value as the server sent it (option labels for a select slider)
    disabled: bool = False      # greyed out when the server last drew it (a button)
    options: list | None = None  # a select slider's option labels (None: a numeric slider)


class Session:
    """One browser-like session on ``127.0.0.1:port`` showing page ``page`` (URL path)."""

    def __init__(self, port: int, page: str, query: str = "", auto_rerun: bool = True,
                 headers: dict[str, str] | None = None) -> None:
        self.port, self.page, self.query, self.auto_rerun = port, page, query, auto_rerun
        self.headers = headers or {}           # sent with the websocket's opening request
        self.widgets: dict[str, Widget] = {}
        self.states: dict[str, list] = {}      # slider id -> value we last sent (floats, or labels)
        self.strings: dict[str, str] = {}      # radio id -> the option label we last sent
        self.errors: list[str] = []            # exception elements seen
        self.alerts: list[str] = []            # st.error/warning/info texts seen
        self.page_hash = ""
        self.texts: list[str] = []             # markdown, code and progress texts seen (latest last, capped)
        self.text_log: list[tuple[float, str]] = []   # (perf_counter, markdown text) as they arrive, capped
        self.progress_texts: list[str] = []    # progress bars' texts seen (a training's state and step; capped):
                                               # a page's whole run can push them out of ``texts``
        self.slider_log: list[tuple[float, str, list]] = []   # (perf_counter, slider id, value) per slider drawn
        self._ws = None
        self._reader: asyncio.Task | None = None
        self._timers: dict[str, asyncio.Task] = {}    # fragment id -> its auto-rerun loop
        self._registered: set[str] = set()             # fragments the current run registered
        self._labelled: set[str] = set()               # select sliders: state sent as option labels
        self._finished = asyncio.Event()
        self.runs = 0
        self.whole_runs = 0                            # of them, runs of the whole page
        self.finished_status: int | None = None        # ScriptFinishedStatus of the last run that ended
        self.last_msgs: list[tuple[float, str]] = []   # (perf_counter, message kind) of the latest messages (capped)
        self.sent: list[tuple[float, str]] = []        # (perf_counter, "whole" / fragment id) of the latest reruns asked

    async def __aenter__(self) -> "Session":
        url = f"ws://127.0.0.1:{self.port}/_stcore/stream"
        self._ws = await websockets.connect(url, subprotocols=["streamlit"], max_size=2**27,
                                            origin=f"http://127.0.0.1:{self.port}",
                                            open_timeout=60, ping_interval=None,
                                            additional_headers=self.headers)
        self._reader = asyncio.create_task(self._read())
        await self._rerun(page_name=self.page)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self) -> None:
        for t in self._timers.values():
            t.cancel()
        if self._reader:
            self._reader.cancel()
        if self._ws is not None:
            await self._ws.close()
            self._ws = None

    # ------------------------------------------------------------------ protocol --------
    async def _send(self, msg: BackMsg) -> None:
        await self._ws.send(msg.SerializeToString())

    async def _rerun(self, *, page_name: str = "", fragment_id: str = "", auto: bool = False,
                     trigger: str | None = None) -> None:
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query
        cs.page_script_hash = self.page_hash
        cs.page_name = page_name
        cs.fragment_id = fragment_id
        cs.is_auto_rerun = auto
        for wid, value in self.states.items():
            w = cs.widget_states.widgets.add()
            w.id = wid
            if wid in self._labelled:
                # a select slider's state is its option labels, as the browser sends it; numbers
                # there make the server store the widget as a double array, and serialising its
                # labels into one then fails ("must be real number, not str")
                w.string_array_value.data.extend(value)
            else:
                w.double_array_value.data.extend(value)
        for wid, value in self.strings.items():
            w = cs.widget_states.widgets.add()
            w.id = wid
            w.string_value = value             # a radio's state: its formatted option, as the browser sends it
        if trigger:
            w = cs.widget_states.widgets.add()
            w.id = trigger
            w.trigger_value = True
        if not fragment_id:
            self._registered = set()           # a whole run: the fragments it calls register anew
        self._finished.clear()
        self.sent.append((time.perf_counter(), fragment_id or "whole"))
        del self.sent[:-20]
        await self._send(msg)

    async def _read(self) -> None:
        try:
            async for data in self._ws:
                fm = ForwardMsg()
                fm.ParseFromString(data)
                kind = fm.WhichOneof("type")
                self.last_msgs.append((time.perf_counter(), f"{kind}:{fm.script_finished}" if kind == "script_finished"
                                       else kind))
                del self.last_msgs[:-30]
                if kind == "navigation":
                    # st.navigation names the page this run shows (new_session may name app.py)
                    self.page_hash = fm.navigation.page_script_hash or self.page_hash
                elif kind == "new_session":
                    self._registered = set()
                elif kind == "page_info_changed":
                    self.query = fm.page_info_changed.query_string   # the URL the page wrote
                elif kind == "delta":
                    self._on_delta(fm.delta)
                elif kind == "auto_rerun" and self.auto_rerun:
                    fid = fm.auto_rerun.fragment_id
                    self._registered.add(fid)
                    if fid not in self._timers:     # one timer per fragment, as the browser keeps
                        self._timers[fid] = asyncio.create_task(self._auto(fm.auto_rerun.interval, fid))
                elif kind == "stop_auto_rerun":
                    # Streamlit 1.67 names every evicted fragment in one message (fragment_ids)
                    for fid in fm.stop_auto_rerun.fragment_ids:
                        timer = self._timers.pop(fid, None)
                        if timer:
                            timer.cancel()
                        self._registered.discard(fid)
                elif kind == "script_finished":
                    self.finished_status = fm.script_finished
                    if fm.script_finished == 0:
                        # a whole-script run ended: fragments it did not register are gone
                        for fid in set(self._timers) - self._registered:
                            self._timers.pop(fid).cancel()
                    if fm.script_finished in FINISHED_OK:
                        self.runs += 1
                        self.whole_runs += fm.script_finished == FINISHED_OK[0]
                        self._finished.set()
        except (websockets.ConnectionClosed, asyncio.CancelledError):
            pass
        except Exception as e:  # noqa: BLE001 - a protocol surprise must not hang the bench
            self.errors.append(f"client: {type(e).__name__}: {e}")
            self._finished.set()

    def _on_delta(self, d) -> None:
        if d.WhichOneof("type") != "new_element":
            return
        el = d.new_element
        ek = el.WhichOneof("type")
        if ek == "exception":
            self.errors.append(el.exception.message[:200])
        elif ek == "alert":
            self.alerts.append(el.alert.body[:200])
        elif ek == "slider":
            s = el.slider
            if s.type == SliderProto.Type.SELECT_SLIDER:
                # Streamlit >= 1.5x: a select slider's value travels as option labels (raw_value)
                self._labelled.add(s.id)
                options = list(s.options)
                sent = list(s.raw_value)
                default = [options[int(i)] for i in s.default if 0 <= int(i) < len(options)]
            else:
                options, sent, default = None, list(s.value), list(s.default)
            value = sent if s.set_value else list(self.states.get(s.id) or default)
            if s.set_value:
                # the server set the value (session state): a browser takes it as the widget's state
                self.states[s.id] = value
            self.widgets[s.id] = Widget(s.id, "slider", s.label, d.fragment_id, s.min, s.max, value,
                                        options=options)
            self.slider_log.append((time.perf_counter(), s.id, value))
            del self.slider_log[:-200]
        elif ek in ("markdown", "code"):
            self.texts.append(el.markdown.body if ek == "markdown" else el.code.code_text)
            del self.texts[:-200]
            if ek == "markdown":
                self.text_log.append((time.perf_counter(), el.markdown.body))
                del self.text_log[:-400]
        elif ek == "progress":
            self.texts.append(el.progress.text)          # e.g. a training's state and step
            del self.texts[:-200]
            self.progress_texts.append(el.progress.text)
            del self.progress_texts[:-200]
        elif ek == "radio":
            r = el.radio
            self.widgets[r.id] = Widget(r.id, "radio", r.label, d.fragment_id, options=list(r.options))
        elif ek == "button":
            b = el.button
            self.widgets[b.id] = Widget(b.id, "button", b.label, d.fragment_id, disabled=b.disabled)

    async def _auto(self, interval: float, fragment_id: str) -> None:
        try:
            while True:
                await asyncio.sleep(max(interval, 0.1))
                if self._ws is None:
                    return
                await self._rerun(fragment_id=fragment_id, auto=True)
        except (asyncio.CancelledError, websockets.ConnectionClosed):
            pass

    def diagnosis(self) -> str:
        """One line for a session that did not get what a benchmark waited for: its timers, runs,
        the last run's end, and the latest messages and rerun requests (seconds ago)."""
        now = time.perf_counter()
        msgs = " ".join(f"{k}@{now - t:.1f}" for t, k in self.last_msgs[-8:])
        sent = " ".join(f"{k[:8]}@{now - t:.1f}" for t, k in self.sent[-5:])
        texts = " | ".join(f"{x[:50]!r}@{now - t:.1f}" for t, x in self.text_log[-3:])
        return (f"timers {sorted(f[:8] for f in self._timers)}, runs {self.runs}, last finish "
                f"{self.finished_status}; messages (s ago) {msgs}; asked {sent}; latest texts {texts}")

    # ------------------------------------------------------------------ API -------------
    async def wait_idle(self, timeout: float = 120) -> None:
        """Wait until the current run has finished successfully."""
        await asyncio.wait_for(self._finished.wait(), timeout)

    def sliders(self) -> list[Widget]:
        return [w for w in self.widgets.values() if w.kind == "slider"]

    def button(self, key_suffix: str) -> Widget | None:
        return next((w for w in self.widgets.values()
                     if w.kind == "button" and w.id.endswith(key_suffix)), None)

    async def skip_questions(self, timeout: float = 60) -> int:
        """Press every predict-then-reveal question's "skip" button (``...:skip``), as a student who
        wants the whole chapter does, so the sections they hold back are drawn; returns how many."""
        n = 0
        for _ in range(6):
            w = next((w for w in self.widgets.values() if w.kind == "button" and w.id.endswith(":skip")
                      and not w.disabled), None)
            if w is None:
                break
            self.widgets.pop(w.id, None)
            await self.click(w, timeout=timeout)
            n += 1
        return n

    async def move_slider(self, w: Widget, value: float, timeout: float = 60) -> float:
        """Set slider ``w`` to ``value`` (a select slider: the index of an option, ``w.lo``..``w.hi``);
        seconds until the server finished the rerun."""
        if w.options is not None:
            self.states[w.id] = [w.options[min(max(int(round(value)), 0), len(w.options) - 1)]]
        else:
            self.states[w.id] = [float(value)]
        t0 = time.perf_counter()
        await self._rerun(fragment_id=w.fragment_id)
        await asyncio.wait_for(self._finished.wait(), timeout)
        return time.perf_counter() - t0

    def radio(self, key_suffix: str) -> Widget | None:
        return next((w for w in self.widgets.values() if w.kind == "radio" and w.id.endswith(key_suffix)), None)

    async def choose_and_click(self, radio: Widget, index: int, button: Widget, timeout: float = 60) -> float:
        """Pick option ``index`` of ``radio``, then press ``button``: two reruns, as a phone sends
        them (a Send button that the pick enables is pressed once the page has redrawn it);
        seconds until the second run finished."""
        self.strings[radio.id] = radio.options[index]
        t0 = time.perf_counter()
        await self._rerun(fragment_id=radio.fragment_id)
        await asyncio.wait_for(self._finished.wait(), timeout)
        return time.perf_counter() - t0 + await self.click(button, timeout)

    async def click(self, w: Widget, timeout: float = 60) -> float:
        t0 = time.perf_counter()
        await self._rerun(fragment_id=w.fragment_id, trigger=w.id)
        await asyncio.wait_for(self._finished.wait(), timeout)
        return time.perf_counter() - t0
