"""lmviz: see how a language model is trained and how it generates.

The entry point builds the navigation from ``ui/chapters.py`` and holds the shared sidebar
(language, presenter mode, device, chapter list). Widgets here keep their state across pages.
"""
from __future__ import annotations

# --- cold start (ui/warmup.py): torch and the default model load in the background from the
# first run on; keep this the first statement ---
from ui import warmup; warmup.start()  # noqa: E702,I001
# --- end cold start ---

from pathlib import Path  # noqa: E402

import streamlit as st  # noqa: E402

warmup.lower_if_warm_visit(st.context.headers)   # the server's own first visit runs at nice 19

from ui import follow, render, session
from ui.chapters import registered
from ui.i18n import LANG_NAMES, LANGS, device, t
from ui.runtime import finished_runs_kept, in_fragment_rerun, page_run, pages_kept, patient_reruns

patient_reruns()    # a fragment's rerun never drops the end of the run before it (ui.runtime)
pages_kept()        # a fragment's run of a page left behind is dropped (ui.runtime)
finished_runs_kept()  # a fragment's run never drops the part of a finished page run it drew (ui.runtime)

# Language and presenter mode: from the URL on a session's first run, then from the sidebar;
# always written back to the URL so a shared link opens the same way. They are plain session
# state (not the widgets' own keys): widget state can be dropped by a rerun started from a
# fragment, these must never be.
if "lang" not in st.session_state:
    wanted = st.query_params.get("lang", "en")
    st.session_state["lang"] = wanted if wanted in LANGS else "en"
if "present" not in st.session_state:
    st.session_state["present"] = st.query_params.get("present") == "1"

# the tab icon is a file of ours (scripts/make_favicon.py): a ":material/…" or emoji icon is
# fetched from a CDN by the browser, and lmviz needs no network at run time
st.set_page_config(page_title="lmviz", page_icon=str(Path(__file__).parent / "assets" / "favicon.png"), layout="wide",
                   initial_sidebar_state="collapsed" if st.session_state["present"] else "auto")


def _copy(widget_key: str, state_key: str):
    return lambda: st.session_state.__setitem__(state_key, st.session_state[widget_key])


with st.sidebar:
    st.radio("Language / 语言", LANGS, index=LANGS.index(st.session_state["lang"]), key="lang_choice",
             format_func=LANG_NAMES.get, horizontal=True, on_change=_copy("lang_choice", "lang"))
    st.toggle(t("common.present"), value=st.session_state["present"], key="present_choice",
              on_change=_copy("present_choice", "present"), help=t("common.present_help"))
st.query_params["lang"] = st.session_state["lang"]
from ui import render  # noqa: E402
render.page_chrome()   # focus rings and the phone layout, on every page
if st.session_state["present"]:
    st.query_params["present"] = "1"
    # Larger type for the back of a room and the step-by-step slides (Plotly fonts are scaled
    # in ui.render.plot)
    render.present_chrome()
elif "present" in st.query_params:
    del st.query_params["present"]
render.page_language()   # <html lang> follows the language; the charts' text twins stay unseen

chapters = registered()
# the session's pages, built once per language (st.Page resolves and checks each file: ~3 ms a
# rerun); never shared between sessions (st.navigation marks the chosen one as callable)
_nav_key = f"lmviz_nav:{st.session_state['lang']}"
if _nav_key not in st.session_state:
    st.session_state[_nav_key] = [
        st.Page(c.file, title=t(c.title_key), icon=c.icon, default=(c.slug == ""),
                **({"url_path": c.slug} if c.slug else {}))
        for c in chapters
    ]
pages = st.session_state[_nav_key]
nav = st.navigation(pages)
current = next((c for c, p in zip(chapters, pages) if p.url_path == nav.url_path), chapters[0])
st.session_state["lmviz_page_file"] = current.file

with st.sidebar:
    # The badge polls once a second only while torch is still loading in the background, then
    # reruns the app once so that the polling stops.
    polling = warmup.device_name() is None

    @st.fragment(run_every=1.0 if polling else None)
    def _device_badge() -> None:
        name = warmup.device_name()
        if name is None:
            st.caption(t("common.device_loading"))
            return
        st.caption(t("common.device", name=device(name)))
        if polling and in_fragment_rerun():
            # only from the fragment's own timer tick: a full rerun started in the middle of an
            # app run would swallow a button click of that run
            st.rerun()

    _device_badge()
    loading = session.model_menu()     # a pretrained model still loading: its progress in place of the chapter
    st.page_link(pages[0], label=t("common.chapter_list"), icon=":material/list:")


def _page_done() -> None:
    follow.page_done()    # a follower's page update has run: its place at the gate is free


with page_run(_page_done):
    if loading is None:
        nav.run()
    else:
        session.loading_page(loading, t(current.heading_key))
