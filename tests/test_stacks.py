"""``kill -USR1`` writes every thread's stack to LMVIZ_STACKS_FILE (lmviz/server/stacks.py), and
nothing is installed without the setting."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = ("import os, signal, threading, time\n"
         "from lmviz.server import stacks\n"
         "print(stacks.install_from_env())\n"
         "threading.Thread(target=time.sleep, args=(2,), name='sleeper', daemon=True).start()\n"
         "if stacks._OPEN: os.kill(os.getpid(), signal.SIGUSR1)\n"
         "time.sleep(0.3)\n")


def _probe(env_extra: dict) -> str:
    env = {k: v for k, v in os.environ.items() if k != "LMVIZ_STACKS_FILE"} | env_extra
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60, check=True).stdout.strip()


def test_usr1_writes_every_threads_stack_to_the_named_file(tmp_path):
    out = tmp_path / "server.stacks"
    assert _probe({"LMVIZ_STACKS_FILE": str(out)}) == "True"
    dump = out.read_text()
    assert dump.count("Thread 0x") + dump.count("Current thread 0x") >= 2     # main and the sleeper
    assert "time.sleep" in dump or "<string>" in dump


def test_nothing_is_installed_without_the_setting():
    assert _probe({}) == "False"
