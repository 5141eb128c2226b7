"""One loaded copy of each pretrained folder per process, shared by every session.

Each session used to keep the copy it had loaded: six sessions alternating two 85M-parameter
folders took a server from 567 to 4,791 MB, still 4,597 MB after they closed. Here
:func:`load_shared` (the process's :data:`MODELS`) hands every session that asks for one folder
the same loaded objects (model, tokenizer), and

- **key**: the folder's resolved path, the device, and the name, mtime and size of each file
  ``lmviz.hf.load`` reads (config.json, tokenizer.json, the shard index, every ``*.safetensors``;
  of a GGUF file, the file itself):
  a changed file is a new load; the old copy lives on only while a session still shows it;
- **eviction**: the cache holds a model by a weak reference, so a copy no session holds is freed
  (its tokenizer with it), plus the ``keep`` most recently asked-for ones strongly (below);
- **budget**: before a load, ``lmviz.limits.pretrained_budget`` counts the bytes of every model
  loaded now (weights and buffers) beside the new folder's need, within MAX_MODEL_SHARE of the
  machine; over it, the strongly kept ones are let go first, then the load is refused with a
  sentence (``hf.budget_loaded``: ``lmviz.checkpoint.CheckpointError``);
- **threads**: the sessions of a server run on threads. A lookup takes a short lock; loads run
  one at a time under a second lock, so the budget sees every load before it and two sessions
  asking for one folder at once get one load (a second load beside the first would only share the
  cores and double the peak memory). The app loads a folder that does not come at once
  (:meth:`ModelCache.quick`) on a task (``ui.session.pretrained_load``), which hears the load's
  progress and may stop it (``ctx``): no session's script thread waits on a load.

A shared model is read-only: every chapter computes under ``no_grad`` or takes gradients with
``torch.autograd.grad`` (no ``.grad`` written), removes a head by calling the modules in turn
(``lmviz.chapters.attention_heads.forward_without_head``), attaches no hook, and a fine-tune
trains ``lmviz.train.copy_model``'s copy. ``GPT.forward_trace`` and ``corpus_likelihood`` set
``eval()`` and restore the mode, which is eval already.
"""
from __future__ import annotations

import functools
import gc
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

KEEP_RECENT = 1     # models kept loaded after their last session lets go: a lecturer flipping the
#                     menu between two models (or a session leaving one and coming back) would
#                     otherwise wait for a whole reload each time (an 85M-parameter folder: seconds
#                     of reading and converting on a 2-core server); one such idle copy at most,
#                     counted by the budget and let go first when a load needs the room
QUICK_BYTES = 16 << 20   # a folder this small loads in tens of milliseconds (4 M fp32 parameters); SmolLM2's
#                          GGUF file (94 MiB) takes 1.2-3 s of reading and dequantising on a 2-core server
READ_FILES = ("config.json", "tokenizer.json", "model.safetensors.index.json")   # + every *.safetensors


@dataclass(frozen=True)
class Usage:
    """What the pretrained models loaded in this process take now."""
    count: int      # models loaded (held by a session or kept as recent)
    nbytes: int     # their weights and buffers, in bytes (a tied table once)


@dataclass(frozen=True)
class _Entry:
    """One loaded folder: the model weakly, what lives and dies with it strongly."""
    ref: weakref.ref    # the GPT (the callback removes this entry when it is freed)
    tokenizer: object   # its HFTokenizer
    meta: dict          # lmviz.hf.load's meta
    nbytes: int         # model_bytes(model)


def folder_key(path, device) -> tuple:
    """The cache key of a folder: (resolved path, device, ((file, mtime_ns, size), ...)) of the
    files a load reads. A folder that cannot be read gets a key of its path alone (the load
    that follows refuses it with its sentence)."""
    try:
        root = Path(path).resolve()
        if root.is_file():                       # a GGUF file (lmviz.gguf_model): the one file it reads
            st = root.stat()
            return (str(root), str(device), ((root.name, st.st_mtime_ns, st.st_size),))
        names = sorted({*(n for n in READ_FILES if (root / n).is_file()),
                        *(p.name for p in root.glob("*.safetensors"))})
        stats = tuple((n, st.st_mtime_ns, st.st_size) for n in names for st in ((root / n).stat(),))
    except (OSError, RuntimeError):              # RuntimeError: a symlink loop (Python < 3.13)
        return (str(path), str(device), None)
    return (str(root), str(device), stats)


def model_bytes(model) -> int:
    """Bytes of a model's parameters and buffers, each storage once (a tied table is one).

    >>> from lmviz.model import GPT, GPTConfig
    >>> model_bytes(GPT(GPTConfig(vocab_size=10, block_size=4, n_layer=1, n_head=1, n_kv_head=1, d_model=2)))
    392
    """
    seen, total = set(), 0
    for t in [*model.parameters(), *model.buffers()]:
        s = t.untyped_storage()
        if s.data_ptr() not in seen:
            seen.add(s.data_ptr())
            total += s.nbytes()
    return total


class ModelCache:
    """Pretrained folders loaded once per process (see the module's docstring).

    ``keep``: models kept strongly after their last holder lets go; ``device``, ``total_bytes``:
    lmviz.device() and the machine's memory when None (tests pass their own); ``loader``:
    ``lmviz.hf.load``'s signature.
    """

    def __init__(self, keep: int = KEEP_RECENT, device=None, total_bytes: int | None = None, loader=None):
        self.keep, self.device, self.total_bytes, self.loader = keep, device, total_bytes, loader
        self._lock = threading.RLock()      # the table; re-entrant: a model freed while it is held
        #                                     runs _gone in the same thread
        self._load_lock = threading.Lock()  # one load at a time
        self._table: dict[tuple, _Entry] = {}
        self._recent: list[tuple] = []      # (key, model) kept strongly, most recent last

    def load(self, path, ctx=None):
        """(GPT, tokenizer, meta) of the folder: the copy already loaded in this process, or a
        new load within the budget; raises ``lmviz.checkpoint.CheckpointError`` when refused.
        ``meta`` is a fresh dict each call (the model and tokenizer are shared: read-only).

        ``ctx`` (a ``lmviz.server.tasks`` TaskContext or InlineContext), when given, hears the
        load's progress (parameters read of the plan's) and is checked while the load waits for
        another one and after each tensor: a cancelled task, or an inline try past its budget,
        stops there (``Cancelled``) and leaves nothing behind."""
        device = self._device()
        key = folder_key(path, device)
        hit = self._hit(key)
        if hit is not None:
            return hit
        self._acquire_load(ctx)
        try:
            hit = self._hit(key)                     # another session loaded it meanwhile
            if hit is not None:
                return hit
            from .checkpoint import CheckpointError

            try:
                return self._load(key, path, device, ctx)
            except CheckpointError as e:
                if e.key != "hf.budget_loaded" or not self._recent:
                    raise
            self._let_go_recent()                    # the idle copies make room, then once more
            return self._load(key, path, device, ctx)
        finally:
            self._load_lock.release()

    def quick(self, path) -> bool:
        """Whether the folder comes at once: its copy is in this process, or its files are at
        most QUICK_BYTES (read in tens of milliseconds). A caller decides by it where to load
        (the app's menu: on the script's thread, or on a task)."""
        key = folder_key(path, self._device())
        if self._hit(key) is not None:
            return True
        return key[2] is not None and sum(size for _, _, size in key[2]) <= QUICK_BYTES

    def usage(self) -> Usage:
        """The models loaded now and their bytes."""
        with self._lock:
            live = [e for e in list(self._table.values()) if e.ref() is not None]
        return Usage(len(live), sum(e.nbytes for e in live))

    # -- inside --------------------------------------------------------------------------------
    def _device(self):
        if self.device is not None:
            return self.device
        from . import device

        return device()

    def _hit(self, key):
        with self._lock:
            e = self._table.get(key)
            model = e.ref() if e is not None else None
            if model is None:
                return None
            self._remember(key, model)
            return model, e.tokenizer, dict(e.meta)

    def _acquire_load(self, ctx) -> None:
        """Take the one-load-at-a-time lock; with ``ctx``, checking it while another load runs."""
        if ctx is None:
            self._load_lock.acquire()
            return
        while not self._load_lock.acquire(timeout=0.05):
            ctx.check()

    def _load(self, key, path, device, ctx=None):
        from .hf import load

        use = self.usage()
        heard = {} if ctx is None else {"progress": functools.partial(_heard, ctx)}
        model, tok, meta = (self.loader or load)(path, device=device, total_bytes=self.total_bytes,
                                                 loaded_bytes=use.nbytes, loaded_count=use.count, **heard)
        entry = _Entry(weakref.ref(model, functools.partial(self._gone, key)), tok, dict(meta), model_bytes(model))
        with self._lock:
            self._table[key] = entry
            self._remember(key, model)
        return model, tok, dict(meta)

    def _remember(self, key, model) -> None:
        """Make ``key`` the most recent of the strongly kept (called with the lock held)."""
        recent = [r for r in self._recent if r[0] != key]
        self._recent = (recent + [(key, model)])[-self.keep:] if self.keep > 0 else []

    def _let_go_recent(self) -> None:
        with self._lock:
            self._recent = []
        gc.collect()                                 # a model in a reference cycle, freed now

    def _gone(self, key, ref) -> None:
        """The model of ``key`` was freed: forget its entry (and so its tokenizer)."""
        with self._lock:
            e = self._table.get(key)
            if e is not None and e.ref is ref:
                del self._table[key]


def _heard(ctx, done: int, total: int) -> None:
    """A load's progress, told to its task (``ModelCache.load``'s ``ctx``), which may stop it."""
    ctx.progress(done, total)
    ctx.check()


MODELS = ModelCache()     # the process's one cache: every session loads pretrained folders through it


def load_shared(path, ctx=None):
    """(GPT, tokenizer, meta) of a pretrained folder, one copy per process (:data:`MODELS`;
    ``ctx``: see :meth:`ModelCache.load`)."""
    return MODELS.load(path, ctx)
