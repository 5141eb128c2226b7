"""bench/room.py's three activities on a small room: every answer counted exactly once, hostile
ones refused (what the benchmark checks beside its timings; no timing is asserted here)."""
from __future__ import annotations

import sys

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))


def test_a_room_of_40_through_the_store_loses_and_doubles_nothing():
    import room

    from lmviz.checkpoint import load_default

    model, tok, _ = load_default()
    for run in (lambda s: room.be_the_model(s, 40, model, tok), lambda s: room.map_heads(s, 40, model),
                lambda s: room.train_on_room(s, 40)):
        rate, lag, exact = run(room.make_store(None, 40))
        assert exact and rate > 0 and lag >= 0
