"""bench/gpu.py runs without a GPU: --quick --cpu finishes, says it is on the CPU, runs its
CUDA-vs-CPU checks' code CPU against CPU (--self-check) and ends with its verdict line. The real
CUDA run happens where a device is lent; no test needs one."""
from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_gpu_bench_runs_on_cpu_and_says_so():
    out = subprocess.run([sys.executable, "bench/gpu.py", "--quick", "--cpu", "--self-check"], cwd=ROOT, capture_output=True,
                         text=True, timeout=240, env={"LMVIZ_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert "everything runs on the CPU" in lines[0]
    assert any(line.startswith("train default") and "tokens/s" in line for line in lines)
    assert any(line.startswith("decode (") and "speed-up" in line for line in lines)
    assert any("losses vs CPU fp32: max rel. diff 0.0e+00" in line for line in lines)  # the checks ran
    assert any(line.startswith("train at scale (") and "MFU" in line for line in lines)
    assert any("greedy tokens identical" in line for line in lines)
    assert any("max |Δ attention weight| 0.00e+00" in line for line in lines)
    assert lines[-1] == "gpu bench: CPU, ok"
