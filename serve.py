"""lmviz as an ASGI app: ``streamlit run serve.py`` serves ``app.py`` exactly as
``streamlit run app.py`` does, and adds three things for a room's lecture:

- it warms torch and the default model as soon as the server starts (ui/warmup.py), before the
  first visitor's request instead of during it: Streamlit finds the ``st.App`` below and runs it
  with uvicorn; its lifespan starts the warm-up (a background task that returns at once), so the
  server reports healthy right away;
- each training runs in a process of its own beside the server (``LMVIZ_TRAIN_PROCESS`` defaults
  to 1 here; ``LMVIZ_TRAIN_PROCESS=0`` keeps it on a thread of the server, as ``streamlit run
  app.py`` does), so that a room moving sliders cannot starve it of the interpreter: the lifespan
  starts the fork server the trainings' processes come from (lmviz/server/train_process.py), from
  this thread, so that they run at the server's own priority, not the warm-up task's nice 19;
- each chapter's URL answers with Streamlit's page plus the chapter's title and a "loading" line
  in the link's language (ui/first_paint.py), painted before Streamlit's frontend has loaded;
- Streamlit's frontend files go to a browser gzip-compressed, about a third of their 9 MB
  (lmviz/server/frontend_gzip.py; Streamlit sends them uncompressed);
- every response leaves at once (TCP_NODELAY, lmviz/server/nodelay.py): Streamlit's listening
  socket left Nagle's algorithm on, and each response on a kept-alive connection waited ~40 ms;
- a chapter's HTML hand-out is served by a route of lmviz's own (``/handout/<token>/<name>``,
  ui/handout.py), made from the page's record when the browser asks for it.
"""
import os
from contextlib import asynccontextmanager

import streamlit as st

from lmviz.server import nodelay, stacks
from ui import first_paint, handout

nodelay.install()                 # uvicorn imports this module before it accepts a connection
stacks.install_from_env()         # kill -USR1: every thread's stack, when LMVIZ_STACKS_FILE is set
os.environ.setdefault("LMVIZ_TRAIN_PROCESS", "1")     # before any session: trainings in their own process


@asynccontextmanager
async def lifespan(_app):
    from lmviz.server.train_backend import own_process
    from ui import warmup

    if own_process():
        from lmviz.server.train_process import warm

        warm()
    warmup.start()
    yield


def _middleware() -> list:
    from starlette.middleware import Middleware
    from streamlit import file_util

    from lmviz.server.frontend_gzip import FrontendGzip

    return [Middleware(FrontendGzip, directory=file_util.get_static_dir())]


app = st.App("app.py", lifespan=lifespan, routes=first_paint.routes() + handout.routes(),
             middleware=_middleware())
