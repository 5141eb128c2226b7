"""The chapters wing: every lesson computation, and the questions (ARCHITECTURE.md).

A module is named after its chapter's stem (the page ``chapters/<stem>.py``, the figures
``viz/<stem>.py``); a chapter with several modules prefixes them with its stem
(``beyond_structure``, ``beyond_robot``). Each holds the worked examples and the measurements its
chapter draws, as pure functions returning records. It builds on the GPT core (``lmviz``) and
never on the server (``lmviz.server``).
"""
