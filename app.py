"""lmviz: see how a language model is trained and how it generates.

The entry point builds the navigation from ``ui/chapters.py`` and holds the shared sidebar
(language, device, chapter list). Widgets here keep their state across pages.
"""
from __future__ import annotations

import streamlit as st

from ui import glue
from ui.chapters import registered
from ui.i18n import LANG_NAMES, LANGS, t

st.set_page_config(page_title="lmviz", page_icon=":material/school:", layout="wide")

# Language: from the URL on first load, then from the sidebar widget; always written back to
# the URL so a shared link opens in the same language.
if "lang" not in st.session_state:
    wanted = st.query_params.get("lang", "en")
    st.session_state["lang"] = wanted if wanted in LANGS else "en"



def _set_lang() -> None:
    st.session_state["lang"] = st.session_state["lang_choice"]


# "lang" is plain session state (not the widget's own key): widget state can be dropped by a
# rerun started from a fragment, the chosen language must never be.
with st.sidebar:
    st.radio("Language / 语言", LANGS, index=LANGS.index(st.session_state["lang"]), key="lang_choice",
             format_func=LANG_NAMES.get, horizontal=True, on_change=_set_lang)
st.query_params["lang"] = st.session_state["lang"]

pages = [
    st.Page(c.file, title=t(c.title_key), icon=c.icon, default=(c.slug == ""),
            **({"url_path": c.slug} if c.slug else {}))
    for c in registered()
]
nav = st.navigation(pages)

with st.sidebar:
    # The badge polls once a second only while torch is still loading in the background, then
    # reruns the app once so that the polling stops.
    polling = glue.device_info() is None

    @st.fragment(run_every=1.0 if polling else None)
    def _device_badge() -> None:
        name = glue.device_info()
        if name is None:
            st.caption(t("common.device_loading"))
        elif polling:
            st.rerun()
        else:
            st.caption(t("common.device", name=name))

    _device_badge()
    st.page_link(pages[0], label=t("common.chapter_list"), icon=":material/list:")

nav.run()
glue.start_warmup()
