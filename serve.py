"""lmviz as an ASGI app: ``streamlit run serve.py`` serves ``app.py`` exactly as
``streamlit run app.py`` does, and warms torch and the default model as soon as the server
starts (ui/warmup.py), before the first visitor's request instead of during it.

Streamlit finds the ``st.App`` below and runs it with uvicorn; its lifespan starts the warm-up
(a background task that returns at once), so the server reports healthy right away.
"""
from contextlib import asynccontextmanager

import streamlit as st


@asynccontextmanager
async def lifespan(_app):
    import numpy  # noqa: F401 - before the warm-up thread (see app.py)

    from ui import warmup

    warmup.start()
    yield


app = st.App("app.py", lifespan=lifespan)
