"""Watch it learn: light snapshots of a model while it trains, to replay training afterwards.

At log-spaced steps (:class:`SnapshotSchedule`: dense early, where the pictures change fastest,
sparse late) :func:`take_snapshot` keeps three small things about the model:

(a) the attention weights of every head of one layer on a fixed probe sentence, [H, T, T]
    (plus, for every layer and head, the mean weight on the previous token, [L, H], so the page
    can point at the head where a previous-token pattern appears);
(b) the token embeddings projected to 2-D by PCA, [P, 2] (the first P = min(V, max_points) ids);
(c) the next-token distribution at a fixed prompt: top-k ids and probabilities, and the entropy
    of the full distribution.

**Same axes across snapshots.** Each snapshot stores its embeddings in its *own* PCA basis (two
columns, not the [V, d] table: 2 numbers per token instead of d). :func:`aligned_embeddings`
then rotates (or reflects) every snapshot onto the final one with orthogonal Procrustes, the
2 × 2 orthogonal R minimising ‖Y_t R − Y_final‖. Rotations and reflections keep distances, so
clusters are what the model made, and the axes stay put while the lecturer scrubs (PCA's axes
are otherwise free to flip sign or swap). The alternative, fixing the basis from the final
table and reprojecting earlier tables onto it, would need every snapshot's full [V, d] table
(d / 2 = 64 times the memory for the default model); we chose the small record.

**Bounded memory.** :class:`SnapshotStore` holds at most ``max_count`` snapshots and
``max_bytes`` bytes of payload (tensor bytes + 8 per scalar); when either would be exceeded it
drops the interior snapshot whose neighbours are closest in log-step, so the replay keeps its
log spacing, its first and its last snapshot. The schedule alone already bounds the count.

**Travels with the checkpoint.** :func:`snapshots_to_tensors` packs a run's snapshots into a few
stacked tensors (keys ``replay.*``) and one metadata string, which fit inside a safetensors file
beside the weights; :func:`snapshots_from_tensors` reads them back, exactly, and checks them.

The Trainer hook: build a :class:`Recorder` before the loop, call ``recorder.start(model,
tokenizer)`` before the first step and ``recorder.after_step(model, tokenizer, step, loss)``
right after each optimizer step (it snapshots only on scheduled steps). A worker that steps in
chunks caps each chunk with ``recorder.steps_to_next(step)`` so it stops on scheduled steps.
``lmviz.server.train_job.TrainingJob`` does exactly this for every run (its ``snapshot().replay`` is a
:class:`Replay`), and ``lmviz.checkpoint.save_checkpoint(..., replay=...)`` /
``load_checkpoint_with_replay`` carry it in the checkpoint file.
"""
from __future__ import annotations

import json
import math
import unicodedata
from dataclasses import asdict, dataclass

import torch

__all__ = ["Probe", "default_probe", "Replay", "uniform_previous_token", "SnapshotSchedule", "Snapshot", "take_snapshot", "SnapshotStore",
           "Recorder", "pick", "strongest_previous_token_head",
           "aligned_embedding", "aligned_embeddings", "procrustes", "token_classes", "class_separation", "snapshots_to_tensors",
           "snapshots_from_tensors", "read_group", "PREFIX", "DEFAULT_MAX_COUNT", "DEFAULT_MAX_BYTES"]

PREFIX = "replay."                 # key prefix of the replay tensors inside a checkpoint
DEFAULT_MAX_COUNT = 32             # snapshots kept at most
DEFAULT_MAX_BYTES = 4 * 2 ** 20    # payload bytes kept at most (4 MiB)
_FORMAT = "lmviz-replay-1"


# -----------------------------------------------------------------------------
# what to look at, and when

@dataclass(frozen=True)
class Probe:
    sentence: str               # fixed sentence whose attention is kept (cut to max_tokens tokens)
    prompt: str                 # fixed prompt whose next-token distribution is kept
    layer: int = 0              # the layer whose heads' attention maps are kept
    top_k: int = 10             # next-token candidates kept
    max_tokens: int = 32        # the probe sentence keeps at most this many tokens (and block_size)
    max_points: int = 1024      # embedding rows projected: ids 0 .. min(V, max_points) - 1

    def __post_init__(self):
        for name in ("layer", "top_k", "max_tokens", "max_points"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < (0 if name == "layer" else 1):
                raise ValueError(f"{name} must be a whole number >= {0 if name == 'layer' else 1}, got {v!r}")
        if not isinstance(self.sentence, str) or not isinstance(self.prompt, str):
            raise ValueError("sentence and prompt must be text")


def default_probe(text: str, prompt: str, max_chars: int = 32, **kw) -> Probe:
    """A probe for a run on ``text``: the first line of its held-out tail (the last tenth, which
    the Trainer never trains on) with at least 12 characters, cut at a space near ``max_chars``
    when there is one; the Trainer's fixed ``prompt``. Other Probe fields via ``kw``.

    >>> default_probe("The cat sat on the mat.\\n" * 10, "The ").sentence
    'The cat sat on the mat.'
    """
    start = int(len(text) * 0.9)
    tail = text[start:]
    lines = [ln.strip() for ln in tail.splitlines()]
    if start > 0 and text[start - 1] != "\n" and len(lines) > 1:
        lines = lines[1:]  # the tail begins inside a line: skip that partial line
    line = next((ln for ln in lines if len(ln) >= 12), tail.strip() or text.strip())
    if len(line) > max_chars:
        cut = line.rfind(" ", max_chars // 2, max_chars)
        line = line[:cut if cut > 0 else max_chars]
    return Probe(sentence=line, prompt=prompt, **kw)


@dataclass(frozen=True)
class SnapshotSchedule:
    max_steps: int                   # the run's last step (always snapshotted)
    per_octave: int = 2              # snapshots per doubling of the step: 1 gives 0, 1, 2, 4, 8, ...
    max_count: int = DEFAULT_MAX_COUNT  # at most this many steps in all (step 0 included)

    def __post_init__(self):
        if not isinstance(self.max_steps, int) or self.max_steps < 0:
            raise ValueError(f"max_steps must be a whole number >= 0, got {self.max_steps!r}")
        if self.per_octave < 1 or self.max_count < 2:
            raise ValueError("per_octave must be >= 1 and max_count >= 2")

    @property
    def steps(self) -> tuple[int, ...]:
        """Step 0, then steps spaced evenly in log(step) up to max_steps, at most max_count.

        >>> SnapshotSchedule(100, per_octave=1).steps
        (0, 1, 2, 4, 8, 16, 32, 64, 100)
        >>> len(SnapshotSchedule(10**6, per_octave=4, max_count=12).steps)
        12
        """
        n = self.max_steps
        if n == 0:
            return (0,)
        j_max = math.floor(math.log2(n) * self.per_octave + 1e-9)
        pts = sorted({round(2 ** (j / self.per_octave)) for j in range(j_max + 1)} | {n})
        if len(pts) > self.max_count - 1:  # too many: max_count - 1 points evenly in log(step)
            k = self.max_count - 1
            pts = sorted({round(n ** (i / (k - 1))) for i in range(k)} | {1, n})
        return (0, *pts)

    def due(self, step: int) -> bool:
        return step in self._set()

    def _set(self) -> frozenset:
        s = self.__dict__.get("_cache")
        if s is None:
            s = frozenset(self.steps)
            object.__setattr__(self, "_cache", s)
        return s


# -----------------------------------------------------------------------------
# one snapshot

@dataclass(frozen=True, eq=False)
class Snapshot:
    step: int                    # optimizer steps taken when the snapshot was taken (0: untrained)
    loss: float | None           # the training loss reported at that step (None: not given)
    layer: int                   # the layer of `attention`
    probe_ids: tuple[int, ...]   # the probe sentence's token ids, [T]
    attention: torch.Tensor      # [H, T, T] float32 weights of each head of `layer` (rows: queries)
    prev_token: torch.Tensor     # [L, H] float32 mean weight each head puts on the previous token
    emb_xy: torch.Tensor         # [P, 2] float32 token embeddings in this snapshot's own PCA basis
    emb_var: torch.Tensor        # [2] float32 fraction of the embeddings' variance on each axis
    prompt_ids: tuple[int, ...]  # the prompt's token ids (its last block_size), [Tp]
    top_ids: torch.Tensor        # [k] int64 most probable next tokens, most probable first
    top_probs: torch.Tensor      # [k] float32 their probabilities
    entropy: float               # entropy of the full next-token distribution, nats

    @property
    def nbytes(self) -> int:
        """Payload bytes: tensor storage + 8 bytes per scalar and per id (the memory bound's unit)."""
        t = sum(x.numel() * x.element_size() for x in (self.attention, self.prev_token, self.emb_xy,
                                                        self.emb_var, self.top_ids, self.top_probs))
        return t + 8 * (4 + len(self.probe_ids) + len(self.prompt_ids))

    def head(self, h: int) -> torch.Tensor:
        """[T, T] the attention of head h."""
        return self.attention[h]


def _ids(tokenizer, text: str) -> list[int]:
    return list(tokenizer.encode_lossy(text)[0])


@torch.no_grad()
def take_snapshot(model, tokenizer, probe: Probe, step: int, loss: float | None = None) -> Snapshot:
    """Snapshot ``model`` now (eval mode, no gradients; the mode is restored). CPU results.

    ValueError when the probe sentence has fewer than two known tokens, the prompt none, or the
    layer does not exist.
    """
    cfg = model.cfg
    if probe.layer >= cfg.n_layer:
        raise ValueError(f"probe layer {probe.layer} does not exist (the model has {cfg.n_layer})")
    ids = _ids(tokenizer, probe.sentence)[: min(probe.max_tokens, cfg.block_size)]
    if len(ids) < 2:
        raise ValueError("the probe sentence needs at least two tokens the tokenizer knows")
    pids = _ids(tokenizer, probe.prompt)[-cfg.block_size:]
    if not pids:
        raise ValueError("the probe prompt needs at least one token the tokenizer knows")
    trace = model.forward_trace(torch.tensor(ids, dtype=torch.long))      # eval inside, mode restored
    w = torch.stack([lt.weights for lt in trace.layers]).float().cpu()    # [L,H,T,T] (CPU, also on CUDA)
    prev = torch.diagonal(w, offset=-1, dim1=-2, dim2=-1).mean(-1)        # [L,H] mean of w[i, i-1]

    was_training = model.training
    model.eval()
    try:
        logits = model(torch.tensor([pids], dtype=torch.long, device=model.device))[0][0, -1]  # [V]
    finally:
        model.train(was_training)
    from .sampling import softmax_t

    p = softmax_t(logits.float().cpu(), 1.0)                              # [V] float64
    nz = p[p > 0]
    entropy = float(-(nz * nz.log()).sum())
    top = torch.topk(p, min(probe.top_k, p.numel()))

    E = model.wte.weight.detach()[: probe.max_points].double().cpu()     # [P,d]
    Ec = E - E.mean(0, keepdim=True)
    _, S, Vh = torch.linalg.svd(Ec, full_matrices=False)                 # Ec = U S Vh
    xy = Ec @ Vh[:2].T                                                    # [P,2] ([P,1] if P or d is 1)
    var = (S[:2] ** 2) / max(float((S ** 2).sum()), 1e-300)              # [2] (or [1])
    if xy.shape[1] < 2:                                                   # a 1-token vocabulary: pad
        xy = torch.cat([xy, torch.zeros(xy.shape[0], 2 - xy.shape[1], dtype=xy.dtype)], dim=1)
        var = torch.cat([var, torch.zeros(2 - var.numel(), dtype=var.dtype)])
    return Snapshot(step=int(step), loss=None if loss is None else float(loss), layer=probe.layer,
                    probe_ids=tuple(ids), attention=w[probe.layer].float().contiguous(),
                    prev_token=prev.float().contiguous(), emb_xy=xy.float().contiguous(),
                    emb_var=var.float().contiguous(), prompt_ids=tuple(pids),
                    top_ids=top.indices.long().contiguous(), top_probs=top.values.float().contiguous(),
                    entropy=entropy)


# -----------------------------------------------------------------------------
# the bounded container and the Trainer hook

class SnapshotStore:
    """At most ``max_count`` snapshots and ``max_bytes`` payload bytes, in step order.

    ``add`` builds a new tuple and swaps it in with one assignment, so a reader in another thread
    (the page, drawing while the worker trains) always sees a complete, sorted tuple.
    """

    def __init__(self, max_count: int = DEFAULT_MAX_COUNT, max_bytes: int = DEFAULT_MAX_BYTES):
        if max_count < 2 or max_bytes < 1:
            raise ValueError("a store holds at least 2 snapshots and 1 byte")
        self.max_count, self.max_bytes = int(max_count), int(max_bytes)
        self._snaps: tuple[Snapshot, ...] = ()

    @property
    def snapshots(self) -> tuple[Snapshot, ...]:
        return self._snaps

    @property
    def nbytes(self) -> int:
        return sum(s.nbytes for s in self._snaps)

    def __len__(self) -> int:
        return len(self._snaps)

    def add(self, snap: Snapshot) -> tuple[int, ...]:
        """Keep ``snap`` (replacing one of the same step); returns the steps dropped to stay bounded."""
        if 2 * snap.nbytes > self.max_bytes:
            raise ValueError(f"one snapshot takes {snap.nbytes:,} bytes; a store of {self.max_bytes:,} "
                             "bytes must hold at least two (fewer max_points or a shorter probe)")
        snaps = sorted([s for s in self._snaps if s.step != snap.step] + [snap], key=lambda s: s.step)
        dropped = []
        while len(snaps) > 2 and (len(snaps) > self.max_count or sum(s.nbytes for s in snaps) > self.max_bytes):
            gaps = [math.log1p(snaps[i + 1].step) - math.log1p(snaps[i - 1].step) for i in range(1, len(snaps) - 1)]
            i = 1 + min(range(len(gaps)), key=lambda j: (gaps[j], j))
            dropped.append(snaps.pop(i).step)
        self._snaps = tuple(snaps)
        return tuple(dropped)


@dataclass(frozen=True, eq=False)
class Replay:
    """What a page replays: a run's snapshots so far and what they looked at."""
    snapshots: tuple             # Snapshot, in step order (a complete tuple: safe to read while training)
    probe: Probe | None = None   # the probe sentence and prompt (None: not recorded)
    evals: tuple = ()            # the run's evaluations that probed for an induction head, in step order
    #                              (lmviz.train.EvalMetrics with an lmviz.induction.InductionPoint; read back
    #                              from a checkpoint as lmviz.induction.ProbedEvaluation): a checkpoint carries
    #                              them (a live run's page reads its job's own evaluations instead)

    def __len__(self) -> int:
        return len(self.snapshots)

    def upto(self, step: int, evals=None) -> "Replay":
        """The snapshots up to ``step`` (the replay of a checkpoint taken at that step), with the
        probed evaluations up to it (of ``evals``, the run's evaluations, when given)."""
        evs = self.evals if evals is None else [e for e in evals if getattr(e, "induction", None) is not None]
        return Replay(tuple(s for s in self.snapshots if s.step <= step), self.probe,
                      tuple(e for e in evs if e.step <= step))


class Recorder:
    """Schedule + store + probe: the one object the training loop calls.

        rec = Recorder(Probe("the cat sat", "the "), max_steps=cfg.max_steps)
        rec.start(model, tok)                              # before the first step: step 0
        while not tr.done:                                 # the worker's loop
            n = min(chunk, rec.steps_to_next(tr.steps_done) or chunk)
            for m in tr.step(n):                           # the last of these may be scheduled
                rec.after_step(tr.model, tok, m.step, m.loss)

    after_step must see the model *at* that step: call it right after the step, never after a
    chunk of steps that went past it (steps_to_next gives the chunk size that stops there).
    """

    def __init__(self, probe: Probe, max_steps: int, per_octave: int = 2,
                 max_count: int = DEFAULT_MAX_COUNT, max_bytes: int = DEFAULT_MAX_BYTES):
        self.probe = probe
        self.schedule = SnapshotSchedule(max_steps, per_octave, max_count)
        self.store = SnapshotStore(max_count, max_bytes)

    def start(self, model, tokenizer) -> Snapshot:
        snap = take_snapshot(model, tokenizer, self.probe, 0)
        self.store.add(snap)
        return snap

    def steps_to_next(self, step: int) -> int | None:
        """Steps from ``step`` to the next scheduled snapshot after it (None: no more). A worker
        that calls ``Trainer.step(n)`` in chunks caps n by this, so every scheduled step is seen
        with the model as it was at that step."""
        later = [s for s in self.schedule.steps if s > step]
        return later[0] - step if later else None

    def replay(self) -> Replay:
        """The snapshots so far (one read of the store's tuple: consistent from any thread)."""
        return Replay(self.store.snapshots, self.probe)

    def after_step(self, model, tokenizer, step: int, loss: float | None = None) -> Snapshot | None:
        if not self.schedule.due(step):
            return None
        snap = take_snapshot(model, tokenizer, self.probe, step, loss)
        self.store.add(snap)
        return snap


def pick(snaps, lo: float, hi: float) -> Snapshot | None:
    """The snapshot for a selected stretch [lo, hi] of the loss curve (steps): the last one inside
    it, else the one nearest to it (None for no snapshots). Pure: the page's linked selection.

    >>> class S: pass
    >>> snaps = [S() for _ in range(4)]
    >>> for s, k in zip(snaps, (0, 1, 8, 64)): s.step = k
    >>> pick(snaps, 2, 10).step, pick(snaps, 20, 30).step, pick(snaps, 100, 200).step
    (8, 8, 64)
    """
    snaps = list(snaps)
    if not snaps:
        return None
    lo, hi = min(lo, hi), max(lo, hi)
    inside = [s for s in snaps if lo <= s.step <= hi]
    if inside:
        return max(inside, key=lambda s: s.step)
    return min(snaps, key=lambda s: (min(abs(s.step - lo), abs(s.step - hi)), -s.step))


def uniform_previous_token(T: int) -> float:
    """The previous-token score of a head that spreads its weight evenly over the causal past:
    query i puts 1/(i+1) on token i-1, averaged over i = 1..T-1 (the baseline the page quotes).

    >>> round(uniform_previous_token(2), 3), round(uniform_previous_token(32), 3)
    (0.5, 0.099)
    """
    return sum(1.0 / (i + 1) for i in range(1, T)) / (T - 1) if T > 1 else 0.0


def strongest_previous_token_head(snap: Snapshot) -> tuple[int, int, float]:
    """(layer, head, mean weight on the previous token) of the head that looks back one token the
    most. For comparison: uniform causal attention over T tokens gives mean_i 1/(i+1), ~0.1 at T=32."""
    L, H = snap.prev_token.shape
    i = int(snap.prev_token.argmax())
    return i // H, i % H, float(snap.prev_token.view(-1)[i])


# -----------------------------------------------------------------------------
# the same axes across snapshots

def procrustes(Y: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """The orthogonal R [2, 2] minimising ‖Y R − ref‖ (rotation or reflection; no scaling).

    >>> Y = torch.tensor([[1.0, 0.0], [0.0, 2.0], [-1.0, -2.0]])
    >>> turn = torch.tensor([[0.0, -1.0], [1.0, 0.0]])
    >>> torch.allclose(Y @ procrustes(Y, Y @ turn), Y @ turn, atol=1e-6)
    True
    """
    U, _, Vh = torch.linalg.svd(Y.double().T @ ref.double())
    return (U @ Vh).to(Y.dtype)


def aligned_embedding(snap: Snapshot, ref: Snapshot) -> torch.Tensor:
    """``snap``'s [P, 2] embeddings turned onto the axes of ``ref``'s with :func:`procrustes`
    (``ref`` itself is returned unchanged). One snapshot's alignment: a replay's step shows one."""
    if snap.emb_xy.shape != ref.emb_xy.shape:
        raise ValueError("snapshots project different numbers of tokens")
    return snap.emb_xy if snap is ref else snap.emb_xy @ procrustes(snap.emb_xy, ref.emb_xy)


def aligned_embeddings(snaps, ref: int = -1) -> list[torch.Tensor]:
    """Every snapshot's [P, 2] embeddings turned onto the axes of snapshot ``ref`` (the final
    one by default): :func:`aligned_embedding` of each."""
    snaps = list(snaps)
    return [aligned_embedding(s, snaps[ref]) for s in snaps] if snaps else []


def token_classes(tokenizer, n: int) -> list[str]:
    """A coarse class per token id 0..n-1, to colour the embedding scatter: "space", "digit",
    "upper", "lower", "cjk" (Han characters), "punct", "mixed" (multi-character tokens of
    several kinds) or "other"."""
    def one(c: str) -> str:
        if c.isspace():
            return "space"
        if c.isdigit():
            return "digit"
        if c.isalpha():
            if "CJK" in unicodedata.name(c, ""):
                return "cjk"
            return "upper" if c.isupper() else "lower" if c.islower() else "other"
        return "punct" if unicodedata.category(c)[0] in "PS" else "other"

    out = []
    for i in range(n):
        t = tokenizer.token(i)
        kinds = {one(c) for c in t} if t else {"other"}
        out.append(kinds.pop() if len(kinds) == 1 else "mixed")
    return out


def class_separation(xy: torch.Tensor, classes) -> float:
    """The share of the points' spread that lies between classes: Σ_c n_c ‖μ_c − μ‖² / Σ_i ‖x_i − μ‖²
    (0: the classes are mixed, 1: each class is a single point). It rises as letters, digits,
    spaces and punctuation (:func:`token_classes`) pull apart in the embedding picture; it does not
    depend on rotation, so aligned or not gives the same number.

    >>> round(class_separation(torch.tensor([[0., 0.], [0., 1.], [5., 0.], [5., 1.]]), "aabb"), 3)
    0.962
    """
    x = xy.double()
    classes = list(classes)
    if x.shape[0] != len(classes):
        raise ValueError("one class per point")
    mu = x.mean(0)
    total = float(((x - mu) ** 2).sum())
    if total == 0.0:
        return 0.0
    between = 0.0
    for c in set(classes):
        m = torch.tensor([k == c for k in classes])
        between += int(m.sum()) * float(((x[m].mean(0) - mu) ** 2).sum())
    return between / total


# -----------------------------------------------------------------------------
# to and from checkpoint tensors

def snapshots_to_tensors(snaps, probe: Probe | None = None) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """Stack a run's snapshots into tensors ``replay.*`` and metadata {"replay": JSON string}.

    Dtypes are kept (int64 steps and ids, float64 loss and entropy, float32 maps), so the round
    trip is exact: store the tensors as they are (no fp16/fp32 cast). All snapshots must share
    the probe (same ids, layer and shapes). An empty run gives ({}, {}).
    """
    snaps = sorted(snaps, key=lambda s: s.step)
    if not snaps:
        return {}, {}
    s0 = snaps[0]
    for s in snaps[1:]:
        if (s.probe_ids, s.prompt_ids, s.layer) != (s0.probe_ids, s0.prompt_ids, s0.layer) or any(
                getattr(s, f).shape != getattr(s0, f).shape
                for f in ("attention", "prev_token", "emb_xy", "top_ids")):
            raise ValueError("snapshots of one run must share the probe (ids, layer and shapes)")
    stack = lambda f: torch.stack([getattr(s, f) for s in snaps]).contiguous()  # noqa: E731
    t = {
        "step": torch.tensor([s.step for s in snaps], dtype=torch.int64),                # [N]
        "loss": torch.tensor([math.nan if s.loss is None else s.loss for s in snaps],
                             dtype=torch.float64),                                          # [N]
        "entropy": torch.tensor([s.entropy for s in snaps], dtype=torch.float64),          # [N]
        "attention": stack("attention"),                                                   # [N,H,T,T]
        "prev_token": stack("prev_token"),                                                 # [N,L,H]
        "emb_xy": stack("emb_xy"),                                                         # [N,P,2]
        "emb_var": stack("emb_var"),                                                       # [N,2]
        "top_ids": stack("top_ids"),                                                       # [N,k]
        "top_probs": stack("top_probs"),                                                   # [N,k]
        "probe_ids": torch.tensor(s0.probe_ids, dtype=torch.int64),                        # [T]
        "prompt_ids": torch.tensor(s0.prompt_ids, dtype=torch.int64),                      # [Tp]
    }
    meta = {"format": _FORMAT, "layer": s0.layer, "count": len(snaps),
            "probe": asdict(probe) if probe is not None else None}
    return {PREFIX + k: v for k, v in t.items()}, {"replay": json.dumps(meta, ensure_ascii=False)}


_SPEC = {  # name: (dtype, number of dims)
    "step": (torch.int64, 1), "loss": (torch.float64, 1), "entropy": (torch.float64, 1),
    "attention": (torch.float32, 4), "prev_token": (torch.float32, 3), "emb_xy": (torch.float32, 3),
    "emb_var": (torch.float32, 2), "top_ids": (torch.int64, 2), "top_probs": (torch.float32, 2),
    "probe_ids": (torch.int64, 1), "prompt_ids": (torch.int64, 1),
}


def read_group(tensors: dict, metadata: dict, key: str, prefix: str, spec: dict, fmt: str):
    """(metadata dict, name -> tensor) of one group a checkpoint stores beside its weights (this
    replay's, ``prefix`` "replay."; the induction record's, lmviz.induction): its JSON metadata
    string ``key`` of format ``fmt`` and every tensor ``spec`` names, of its dtype and rank. None
    when the file has no such group; ValueError with a plain message when it is malformed."""
    raw = (metadata or {}).get(key)
    if raw is None:
        return None
    try:
        meta = json.loads(raw)
    except (TypeError, ValueError, RecursionError):   # RecursionError: JSON nested thousands deep
        raise ValueError(f"the {key} metadata is not JSON") from None
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        raise ValueError(f"the {key} metadata has an unknown format")
    t = {}
    for name, (dtype, dims) in spec.items():
        v = tensors.get(prefix + name)
        if not isinstance(v, torch.Tensor) or v.dtype != dtype or v.dim() != dims:
            raise ValueError(f"{key} tensor {name} is missing or has the wrong type or shape")
        t[name] = v
    return meta, t


def snapshots_from_tensors(tensors: dict, metadata: dict,
                           vocab_size: int | None = None) -> tuple[list[Snapshot], Probe | None]:
    """Read back what :func:`snapshots_to_tensors` wrote (other keys are ignored). A file with no
    replay gives ([], None); a malformed one raises ValueError with a plain message. Pass the
    checkpoint's ``vocab_size`` to check that every stored token id is one of its ids."""
    got = read_group(tensors, metadata, "replay", PREFIX, _SPEC, _FORMAT)
    if got is None:
        return [], None
    meta, t = got
    n, T = t["step"].shape[0], t["probe_ids"].shape[0]
    H = t["attention"].shape[1] if n else 0
    k = t["top_ids"].shape[1] if n else 0
    layer, count = meta.get("layer"), meta.get("count")
    whole = lambda v: isinstance(v, int) and not isinstance(v, bool)   # noqa: E731 - True is no layer
    ok = (whole(count) and n == count and n >= 1
          and all(t[f].shape[0] == n for f in ("loss", "entropy", "attention", "prev_token", "emb_xy",
                                               "emb_var", "top_ids", "top_probs"))
          and t["attention"].shape[2:] == (T, T) and t["emb_xy"].shape[2] == 2
          and t["emb_var"].shape[1] == 2 and t["top_probs"].shape[1] == k
          and whole(layer) and 0 <= layer < t["prev_token"].shape[1]
          and t["prev_token"].shape[2] == H)
    if not ok:
        raise ValueError("the replay tensors do not fit together")
    steps = t["step"].tolist()
    if steps != sorted(set(steps)) or steps[0] < 0:
        raise ValueError("the replay steps are not increasing")
    if vocab_size is not None:
        ids = torch.cat([t["top_ids"].reshape(-1), t["probe_ids"], t["prompt_ids"]])
        if (ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size)) or t["emb_xy"].shape[1] > vocab_size:
            raise ValueError("the replay refers to token ids the tokenizer does not have")
    probe_ids, prompt_ids = tuple(t["probe_ids"].tolist()), tuple(t["prompt_ids"].tolist())
    snaps = []
    for i in range(n):
        loss = float(t["loss"][i])
        snaps.append(Snapshot(
            step=int(t["step"][i]), loss=None if math.isnan(loss) else loss, layer=meta["layer"],
            probe_ids=probe_ids, attention=t["attention"][i].clone(), prev_token=t["prev_token"][i].clone(),
            emb_xy=t["emb_xy"][i].clone(), emb_var=t["emb_var"][i].clone(), prompt_ids=prompt_ids,
            top_ids=t["top_ids"][i].clone(), top_probs=t["top_probs"][i].clone(),
            entropy=float(t["entropy"][i])))
    probe = None
    if isinstance(meta.get("probe"), dict):
        try:
            probe = Probe(**meta["probe"])
        except (TypeError, ValueError):
            raise ValueError("the replay probe is malformed") from None
    return snaps, probe
