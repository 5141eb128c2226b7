"""The server wing: what one app process runs for its users beside the pages.

Background tasks on worker threads (``tasks``, with the allocator calls), trainings as tasks on a
thread, in a process of their own or on Ray (``train_job``, ``train_process``, ``train_ray``, the
last two through ``train_worker``; ``train_backend`` picks), the class store and its Redis backend
(``classroom``, ``classroom_redis``, picked by ``classroom_backend``), and serve.py's middleware that
sends Streamlit's frontend files compressed (``frontend_gzip``), and the numbers it reads from its
environment (``env``). It builds on the GPT core
(``lmviz``) and never on the chapters (``lmviz.chapters``); nothing here imports streamlit.
"""
