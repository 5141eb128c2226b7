"""The server wing: what one app process runs for its users beside the pages.

Background tasks on worker threads (``tasks``, with the allocator calls), trainings as tasks and
their Ray backend (``train_job``, ``train_ray``), the class store and its Redis backend
(``classroom``, ``classroom_redis``, picked by ``classroom_backend``). It builds on the GPT core
(``lmviz``) and never on the chapters (``lmviz.chapters``); nothing here imports streamlit.
"""
