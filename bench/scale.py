"""Scale benchmark: the load bench's slider p95 on one replica vs two replicas behind nginx,
with the trainings on Ray, side by side in one run.

    python bench/scale.py --sessions 10 --trainings 2 [--moves 5] [--time-limit 120]

For each layout (1 replica, then 2 replicas) it starts the local cluster of deploy/
(``deploy/local-cluster.sh up``: redis, a Ray head with ``--ray-cpus`` CPUs, the replicas, nginx;
127.0.0.1 and free ports only, its own run folder), warms every replica with one visit, then runs
bench/load.py's sessions through nginx: T sessions press Start on /training (their trainings run
on the Ray head, not in the replicas) and N sessions move one slider each ``--moves`` times; a
move is timed from the message leaving the client to the end of the rerun. Then ``down``.
Websocket clients without a routing cookie get a fresh key per connection, so nginx spreads the
sessions over the replicas as it spreads new browsers.

Prints, per layout, p50/p95/max, errors and the CPU seconds of the replicas and of the Ray head's
processes; its last line reads
``scale slider p95: 1 replica X s, 2 replicas Y s, sessions N, trainings T on Ray``.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from load import cpu_s, mover, pct, rss_mb, trainer  # noqa: E402
from ui.headless import Session  # noqa: E402

SCRIPT = ROOT / "deploy" / "local-cluster.sh"


def tree_cpu_s(root_pid: int) -> float:
    """CPU seconds of a process and all its descendants that are alive now."""
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d.name))
    total, todo = 0.0, [root_pid]
    while todo:
        p = todo.pop()
        try:
            total += cpu_s(p)
        except OSError:
            pass
        todo.extend(kids.get(p, []))
    return total


class LocalCluster:
    """deploy/local-cluster.sh in a run folder of its own: ``replicas`` for the room, a Ray head
    with ``ray_cpus`` CPUs (0: none) and, with ``lecture``, the lecturers' own replica."""

    def __init__(self, replicas: int, ray_cpus: int = 0, lecture: bool = False) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=f"lmviz-scale-{replicas}-"))
        self.env = dict(os.environ, LMVIZ_CLUSTER_DIR=str(self.dir), LMVIZ_PYTHON=sys.executable,
                        LMVIZ_REPLICAS=str(replicas), LMVIZ_THREADS="1", LMVIZ_RAY="1" if ray_cpus else "0",
                        LMVIZ_RAY_CPUS=str(max(1, ray_cpus)), LMVIZ_LECTURE_REPLICA="1" if lecture else "0")
        self.ray = ray_cpus > 0

    def sh(self, cmd: str) -> None:
        r = subprocess.run(["bash", str(SCRIPT), cmd], env=self.env, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"local-cluster.sh {cmd} failed:\n{r.stdout}\n{r.stderr}")

    def start(self) -> "LocalCluster":
        self.sh("up")
        state = dict(line.split("=", 1) for line in (self.dir / "state").read_text().split())
        self.port = int(state["NGINX_PORT"])
        self.replica_ports = [int(p.read_text().strip().rsplit(":", 1)[1]) for p in sorted(self.dir.glob("replica-*.addr"))]
        self.pid_of = {p.stem.removeprefix("replica-"): int(p.read_text()) for p in self.dir.glob("replica-*.pid")}
        self.replica_pids = [self.pid_of[name] for name in sorted(self.pid_of)]
        self.ray_pid = int((self.dir / "ray.pid").read_text()) if self.ray else None
        return self

    def stop(self) -> None:
        try:
            self.sh("down")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


async def measure(c: LocalCluster, args, seed: int) -> dict:
    for port in c.replica_ports:                       # warm each replica (torch, default model)
        warm = Session(port, "attention", "lang=en", auto_rerun=False)
        await warm.__aenter__()
        await warm.wait_idle(timeout=180)
        await warm.close()
    rng = random.Random(seed)
    lat: list[float] = []
    errors: list[str] = []
    cpu0 = [tree_cpu_s(p) for p in c.replica_pids]
    ray0 = tree_cpu_s(c.ray_pid)
    t0 = time.perf_counter()
    started: list[float] = []
    trainers = [await trainer(c.port, i, started, errors) for i in range(args.trainings)]
    deadline = time.perf_counter() + args.time_limit
    sessions = await asyncio.gather(*(mover(c.port, i, args.moves, lat, errors, rng, deadline)
                                      for i in range(args.sessions)))
    wall = time.perf_counter() - t0
    cpu = [tree_cpu_s(p) - a for p, a in zip(c.replica_pids, cpu0)]
    ray_cpu = tree_cpu_s(c.ray_pid) - ray0
    rss = [rss_mb(p) for p in c.replica_pids]
    errors.extend(f"training: {a[:80]}" for s in trainers for a in s.alerts if "error" in a.lower())
    for s in list(sessions) + trainers:
        if s is not None:
            await s.close()
    return {"lat": lat, "errors": errors, "wall": wall, "cpu": cpu, "ray_cpu": ray_cpu, "rss": rss,
            "polls": [s.runs for s in trainers]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--trainings", type=int, default=2)
    ap.add_argument("--moves", type=int, default=5)
    ap.add_argument("--ray-cpus", type=int, default=2, help="CPUs of the local Ray head (= concurrent trainings)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=120, help="stop moving sliders after this (s), per layout")
    args = ap.parse_args()
    if not (0 < args.sessions <= 60 and 0 <= args.trainings <= 8 and 0 < args.moves <= 20):
        ap.error("sessions 1-60, trainings 0-8, moves 1-20")
    results = {}
    for n in (1, 2):
        with LocalCluster(n, args.ray_cpus) as c:
            results[n] = asyncio.run(asyncio.wait_for(measure(c, args, args.seed), args.time_limit + 400))
        r = results[n]
        lat = r["lat"]
        print(f"{n} replica{'s' if n > 1 else ''}: moves timed {len(lat)}, errors {len(r['errors'])}; "
              f"slider p50 {pct(lat, 0.5):.2f} s, p95 {pct(lat, 0.95):.2f} s, max {max(lat, default=float('nan')):.2f} s; "
              f"replica CPU {' + '.join(f'{x:.1f}' for x in r['cpu'])} s, Ray head {r['ray_cpu']:.1f} s "
              f"over {r['wall']:.1f} s; replica RSS {', '.join(f'{x:.0f}' for x in r['rss'])} MB; "
              f"training polls {r['polls']}", flush=True)
        for e in sorted(set(r["errors"]))[:10]:
            print(f"  error: {e} (x{r['errors'].count(e)})")
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs; "
          "other work on this machine counts in it)")
    p = {n: pct(results[n]["lat"], 0.95) for n in results}
    print(f"scale slider p95: 1 replica {p[1]:.2f} s, 2 replicas {p[2]:.2f} s, sessions {args.sessions}, "
          f"trainings {args.trainings} on Ray")


if __name__ == "__main__":
    main()
