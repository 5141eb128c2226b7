"""lmviz.hf_shared: one loaded copy of each pretrained folder per process, freed when no session
holds it, within a budget that counts every model loaded. Each test has its own ModelCache (the
process's MODELS is left alone) on the CPU."""
from __future__ import annotations

import gc
import math
import os
import threading
import weakref

import pytest

from lmviz import hf, hf_shared
from lmviz.checkpoint import CheckpointError
from lmviz.hf_shared import ModelCache
from tests.model_util import tiny_hf_folder

V = 300


@pytest.fixture()
def folders(tmp_path):
    return tiny_hf_folder(tmp_path, "a", vocab=V), tiny_hf_folder(tmp_path, "b", vocab=V)


def _counting():
    """hf.load, counting its calls."""
    calls = []

    def load(path, **kw):
        calls.append(str(path))
        return hf.load(path, **kw)
    return load, calls


def test_two_loads_of_one_folder_give_the_same_objects(folders):
    load, calls = _counting()
    cache = ModelCache(keep=0, device="cpu", loader=load)
    m1, t1, meta1 = cache.load(folders[0])
    m2, t2, meta2 = cache.load(str(folders[0]) + "/.")          # the same folder, spelled otherwise
    assert m1 is m2 and t1 is t2 and len(calls) == 1
    assert meta1 == meta2 and meta1 is not meta2                # the meta is each caller's own
    assert cache.usage() == hf_shared.Usage(1, hf_shared.model_bytes(m1))
    assert cache.usage().nbytes == sum(p.numel() * 4 for p in m1.parameters())   # fp32, the tied table once
    m3, *_ = cache.load(folders[1])
    assert m3 is not m1 and cache.usage().count == 2


def test_a_changed_file_is_a_new_load(folders):
    load, calls = _counting()
    cache = ModelCache(keep=0, device="cpu", loader=load)
    old, *_ = cache.load(folders[0])
    st = (folders[0] / "model.safetensors").stat()
    os.utime(folders[0] / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    new, *_ = cache.load(folders[0])
    assert new is not old and len(calls) == 2
    assert cache.load(folders[0])[0] is new and len(calls) == 2
    assert cache.usage().count == 2                             # the old copy lives while it is held


def test_a_copy_no_one_holds_is_freed_with_its_tokenizer(folders):
    cache = ModelCache(keep=0, device="cpu")
    model, tok, _ = cache.load(folders[0])
    gone = weakref.ref(model), weakref.ref(tok)
    del model, tok
    gc.collect()
    assert gone[0]() is None and gone[1]() is None
    assert cache.usage() == hf_shared.Usage(0, 0)


def test_the_most_recent_copy_is_kept_after_its_last_holder_lets_go(folders):
    load, calls = _counting()
    cache = ModelCache(keep=1, device="cpu", loader=load)
    kept = weakref.ref(cache.load(folders[0])[0])
    gc.collect()
    assert kept() is not None and cache.load(folders[0])[0] is kept() and len(calls) == 1
    cache.load(folders[1])                                      # now b is the recent one: a is let go
    gc.collect()
    assert kept() is None and cache.usage().count == 1


def _smallest_total(folder) -> int:
    """The smallest machine memory on which this folder alone fits the budget (bisected)."""
    info = hf.inspect(folder)
    lo, hi = 1, 2**40
    while lo < hi:
        mid = (lo + hi) // 2
        if [r for r in hf.budget(info, "cpu", total_bytes=mid) if r.key == "hf.budget_memory"]:
            lo = mid + 1
        else:
            hi = mid
    return lo


def test_the_budget_counts_what_is_loaded_and_refuses_with_a_sentence(folders):
    from ui.i18n import translate

    total = _smallest_total(folders[1])
    cache = ModelCache(keep=0, device="cpu", total_bytes=total)
    held = cache.load(folders[0])                               # fits alone
    with pytest.raises(CheckpointError) as e:
        cache.load(folders[1])                                  # fits alone too, not beside the first
    assert e.value.key == "hf.budget_loaded"
    assert e.value.params["count"] == 1 and e.value.params["where"] == "CPU"
    said = str(e.value)
    assert said.startswith("This model needs about ") and "the 1 pretrained model already loaded" in said
    assert "已经加载的 1 个预训练模型" in translate(e.value.key, "zh", **e.value.params)
    assert cache.load(folders[0])[0] is held[0]                 # the one loaded is still handed out
    del held
    gc.collect()
    assert cache.load(folders[1])[0] is not None                # no one holds the first: room for the second


def test_the_budget_lets_the_kept_copy_go_before_it_refuses(folders):
    cache = ModelCache(keep=1, device="cpu", total_bytes=_smallest_total(folders[1]))
    first = weakref.ref(cache.load(folders[0])[0])              # held by nobody but the cache
    assert first() is not None
    second, *_ = cache.load(folders[1])
    assert first() is None and cache.usage() == hf_shared.Usage(1, hf_shared.model_bytes(second))


def test_sessions_asking_at_once_get_one_load(folders):
    load, calls = _counting()
    cache = ModelCache(keep=0, device="cpu", loader=load)
    got, start = [], threading.Barrier(4)

    def ask():
        start.wait()
        got.append(cache.load(folders[0])[0])

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(got) == 4 and all(m is got[0] for m in got) and len(calls) == 1


class _Heard:
    """A task's context (lmviz.server.tasks.TaskContext's two calls): the progress it heard,
    and a stop once ``stop_after`` tensors were told (None: never)."""

    def __init__(self, stop_after=None):
        self.told, self.checks, self.stop_after = [], 0, stop_after

    def progress(self, done, total=None):
        self.told.append((done, total))

    def check(self):
        from lmviz.cancel import Cancelled

        self.checks += 1
        if self.stop_after is not None and len(self.told) >= self.stop_after:
            raise Cancelled("cancelled")


def test_a_load_tells_its_progress_and_a_cancelled_one_leaves_nothing(folders):
    """ModelCache.load's ``ctx`` hears, before each tensor of the plan, the parameters read so far
    of the model's (its tensors differ in size: a count of tensors jumps), and a cancel
    heard there ends the load: nothing is kept, and the next load is a whole one."""
    from lmviz.cancel import Cancelled

    load, calls = _counting()
    cache = ModelCache(keep=0, device="cpu", loader=load)
    heard = _Heard()
    model, *_ = cache.load(folders[0], heard)
    sizes = [math.prod(e.shape) for e in hf.inspect(folders[0]).entries]
    n = sum(sizes)                          # parameters read so far, before each tensor
    assert heard.told == [(sum(sizes[:i]), n) for i in range(len(sizes))] and len(sizes) >= 4
    assert heard.checks == len(sizes) and n == sum(p.numel() for p in model.parameters())
    stop = _Heard(stop_after=2)
    with pytest.raises(Cancelled):
        cache.load(folders[1], stop)
    assert stop.told == [(0, n), (sizes[0], n)] and cache.usage().count == 1
    assert cache.load(folders[1])[0] is not model and len(calls) == 3


def test_a_load_waiting_for_another_can_be_cancelled(folders):
    """A second load waits for the first (one at a time); with a ctx it keeps checking it, so a
    session that leaves while it waits stops waiting (its task ends "stopped")."""
    from lmviz.cancel import Cancelled

    cache = ModelCache(keep=0, device="cpu")
    cache._load_lock.acquire()              # a load of another session under way
    try:
        stop = _Heard(stop_after=0)
        with pytest.raises(Cancelled):
            cache.load(folders[0], stop)
        assert stop.checks == 1 and stop.told == []
    finally:
        cache._load_lock.release()


def test_quick_is_a_copy_in_the_process_or_a_small_folder(folders, monkeypatch):
    cache = ModelCache(keep=0, device="cpu")
    assert cache.quick(folders[0])                            # KiB of files
    monkeypatch.setattr(hf_shared, "QUICK_BYTES", 0)
    assert not cache.quick(folders[0])
    model, *_ = cache.load(folders[0])
    assert cache.quick(folders[0])                            # in this process now
    del model
    gc.collect()
    assert not cache.quick(folders[0])
    assert cache.quick(folders[0].parent / "nowhere")          # nothing to read: refused at once


def test_a_refused_folder_says_its_own_sentence(tmp_path):
    cache = ModelCache(keep=0, device="cpu")
    with pytest.raises(CheckpointError) as e:
        cache.load(tmp_path / "nowhere")
    assert e.value.key == "hf.err_missing" and cache.usage().count == 0


def test_doctests():
    import doctest

    from lmviz import limits

    assert doctest.testmod(hf_shared).failed == 0
    assert doctest.testmod(limits).failed == 0
