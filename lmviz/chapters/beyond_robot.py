"""Robot actions as tokens (the robot-actions example). A 2-D point robot, an RT-style action tokenizer, and a small
transformer that predicts the action tokens one after the other, like words.

One control step is a five-token sequence:

    [instruction] [offset-x bin] [offset-y bin] | [action-x bin] [action-y bin]
     observation prefix (given)                   predicted autoregressively

The offset is target - robot position, binned; the action (dx, dy) is continuous, clipped to
[-max_step, max_step] and cut into ``n_bins`` equal bins per dimension. Decoding a bin gives its
centre, so the round trip is off by at most half a bin. The instruction comes from a fixed set:
"reach" (go to the target), "reach slowly" (half speed) and "retreat" (move away from it).

Vocabulary layout (ids): instructions, then offset-x bins, offset-y bins, action-x bins,
action-y bins. Everything returns records (numpy arrays, dataclasses); nothing prints.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from lmviz.model import GPT, GPTConfig, init_weights
from lmviz.sampling import next_logits

__all__ = ["INSTRUCTIONS", "RobotConfig", "encode_bins", "decode_bins", "RoundTrip", "round_trip",
           "expert_action", "step_tokens", "token_label", "make_dataset", "new_policy",
           "train_policy", "StepPrediction", "predict_step", "Rollout", "rollout"]

INSTRUCTIONS = ("reach", "reach_slowly", "retreat")   # the fixed instruction set (ids 0, 1, 2)
_SPEED = {"reach": 1.0, "reach_slowly": 0.5, "retreat": -1.0}


@dataclass(frozen=True)
class RobotConfig:
    n_bins: int = 11          # action bins per dimension (RT-1 used 256 per dimension)
    max_step: float = 0.2     # largest |dx| or |dy| per step
    gain: float = 0.5         # the demonstrator moves gain * offset per step (then clips)
    n_obs_bins: int = 21      # bins of the target offset per dimension
    obs_range: float = 2.0    # offsets are clipped to [-obs_range, obs_range]
    n_samples: int = 4000     # demonstration steps to learn from
    steps: int = 300          # optimizer steps
    batch: int = 128          # demonstration steps per optimizer step
    lr: float = 3e-3          # AdamW learning rate
    d_model: int = 48         # residual width of the policy transformer
    n_layer: int = 2          # transformer blocks
    n_head: int = 2           # heads per block
    seed: int = 0             # data, weights and batches all derive from it

    @property
    def vocab_size(self) -> int:
        return len(INSTRUCTIONS) + 2 * self.n_obs_bins + 2 * self.n_bins

    @property
    def bin_width(self) -> float:
        return 2 * self.max_step / self.n_bins

    def offset(self, part: str) -> int:
        """First id of a token group: "ox", "oy", "ax" or "ay"."""
        n_i, n_o, n_a = len(INSTRUCTIONS), self.n_obs_bins, self.n_bins
        return {"ox": n_i, "oy": n_i + n_o, "ax": n_i + 2 * n_o, "ay": n_i + 2 * n_o + n_a}[part]


def encode_bins(values, lo: float, hi: float, n: int) -> np.ndarray:
    """Continuous values -> bin indices 0..n-1 (values outside [lo, hi] go to the end bins).

    >>> encode_bins([-0.2, 0.0, 0.19, 0.5], -0.2, 0.2, 4).tolist()
    [0, 2, 3, 3]
    """
    v = np.clip(np.asarray(values, dtype=np.float64), lo, hi)
    return np.minimum(((v - lo) / (hi - lo) * n).astype(np.int64), n - 1)


def decode_bins(bins, lo: float, hi: float, n: int) -> np.ndarray:
    """Bin indices -> the bins' centres.

    >>> decode_bins([0, 3], -0.2, 0.2, 4).round(2).tolist()
    [-0.15, 0.15]
    """
    return lo + (np.asarray(bins, dtype=np.float64) + 0.5) * (hi - lo) / n


@dataclass(frozen=True)
class RoundTrip:
    values: np.ndarray        # [N] continuous actions
    bins: np.ndarray          # [N] their tokens (bin indices)
    decoded: np.ndarray       # [N] the bins' centres
    error: np.ndarray         # [N] decoded - values
    half_bin: float           # the bound: |error| <= half a bin


def round_trip(values, cfg: RobotConfig = RobotConfig()) -> RoundTrip:
    """continuous -> token -> continuous for one action dimension.

    >>> r = round_trip(np.linspace(-0.2, 0.2, 101), RobotConfig(n_bins=5))
    >>> bool(np.abs(r.error).max() <= r.half_bin + 1e-12), r.half_bin
    (True, 0.04)
    """
    v = np.asarray(values, dtype=np.float64)
    b = encode_bins(v, -cfg.max_step, cfg.max_step, cfg.n_bins)
    d = decode_bins(b, -cfg.max_step, cfg.max_step, cfg.n_bins)
    return RoundTrip(v, b, d, d - v, round(cfg.bin_width / 2, 12))


def expert_action(offset, instruction: str, cfg: RobotConfig = RobotConfig()) -> np.ndarray:
    """The demonstrator: move gain * offset (times the instruction's speed), clipped per dimension.

    >>> expert_action([1.0, 0.1], "reach").tolist(), expert_action([1.0, 0.1], "retreat").tolist()
    ([0.2, 0.05], [-0.2, -0.05])
    """
    a = _SPEED[instruction] * cfg.gain * np.asarray(offset, dtype=np.float64)
    return np.clip(a, -cfg.max_step, cfg.max_step)


def _obs_bins(offset, cfg: RobotConfig) -> np.ndarray:
    return encode_bins(offset, -cfg.obs_range, cfg.obs_range, cfg.n_obs_bins)


def step_tokens(offset, instruction: str, action, cfg: RobotConfig = RobotConfig()) -> list[int]:
    """The five token ids of one control step: instruction, offset x/y, action x/y.

    >>> step_tokens([0.0, 0.0], "reach", [0.0, 0.0], RobotConfig(n_bins=3, n_obs_bins=3))
    [0, 4, 7, 10, 13]
    """
    o = _obs_bins(offset, cfg)
    a = encode_bins(action, -cfg.max_step, cfg.max_step, cfg.n_bins)
    return [INSTRUCTIONS.index(instruction), cfg.offset("ox") + int(o[0]), cfg.offset("oy") + int(o[1]),
            cfg.offset("ax") + int(a[0]), cfg.offset("ay") + int(a[1])]


def token_label(i: int, cfg: RobotConfig) -> tuple[str, int]:
    """(group, index) of a token id: ("instr", k), ("ox", bin), ("oy", bin), ("ax", bin), ("ay", bin)."""
    if i < len(INSTRUCTIONS):
        return "instr", i
    for part in ("ay", "ax", "oy", "ox"):
        if i >= cfg.offset(part):
            return part, i - cfg.offset(part)
    raise ValueError(i)


def make_dataset(cfg: RobotConfig, n: int | None = None, seed: int | None = None) -> torch.Tensor:
    """Demonstration steps as token sequences [n, 5]: random robot and target positions in the
    unit square (so offsets span it), a random instruction, the expert's action."""
    rng = np.random.default_rng(cfg.seed if seed is None else seed)
    n = cfg.n_samples if n is None else n
    offsets = rng.uniform(-cfg.obs_range, cfg.obs_range, size=(n, 2)) * rng.uniform(0, 1, size=(n, 1))
    instr = rng.integers(0, len(INSTRUCTIONS), size=n)
    rows = [step_tokens(o, INSTRUCTIONS[k], expert_action(o, INSTRUCTIONS[k], cfg), cfg)
            for o, k in zip(offsets, instr)]
    return torch.tensor(rows, dtype=torch.long)


def new_policy(cfg: RobotConfig) -> GPT:
    """The policy transformer at its seeded initial weights (eval mode): the untrained robot."""
    model = GPT(GPTConfig(vocab_size=cfg.vocab_size, block_size=5, n_layer=cfg.n_layer,
                          n_head=cfg.n_head, n_kv_head=cfg.n_head, d_model=cfg.d_model))
    init_weights(model, torch.Generator().manual_seed(cfg.seed))
    return model.eval()


def train_policy(cfg: RobotConfig = RobotConfig(), on_step: Callable[[int, float], None] | None = None,
                 cancel: Callable[[], bool] | None = None) -> tuple[GPT, list[float]]:
    """Behaviour cloning by next-token prediction: cross-entropy on the two action tokens only."""
    import lmviz

    from lmviz.train import fit_small

    lmviz.set_threads()
    data = make_dataset(cfg)                                  # [N,5]
    x = data[:, :4]                                           # [N,4] inputs
    y = data[:, 1:].clone()                                   # [N,4] next tokens
    y[:, :2] = -1                                             # the observation is given, not scored
    model = new_policy(cfg).train()
    losses = fit_small(model, x, y, steps=cfg.steps, batch=cfg.batch, lr=cfg.lr, seed=cfg.seed + 1,
                       cancel=cancel, on_step=on_step)
    return model.eval(), losses


@dataclass(frozen=True)
class StepPrediction:
    tokens: list[int]          # the five ids: prefix (3) + the chosen action tokens (2)
    px: np.ndarray             # [n_bins] p(action-x bin | prefix), over the action-x tokens only
    py: np.ndarray             # [n_bins] p(action-y bin | prefix, chosen x bin)
    action: np.ndarray         # [2] the decoded continuous action
    expert: np.ndarray         # [2] what the demonstrator would do
    expert_tokens: list[int]   # the demonstrator's five ids


@torch.no_grad()
def predict_step(model: GPT, offset, instruction: str, cfg: RobotConfig) -> StepPrediction:
    """One control step decoded greedily: x bin first, then y bin given the chosen x bin. Only
    action tokens may be chosen at action positions (constrained decoding)."""
    exp = expert_action(offset, instruction, cfg)
    ex_tokens = step_tokens(offset, instruction, exp, cfg)
    ids = ex_tokens[:3]
    probs = []
    for part in ("ax", "ay"):
        lo = cfg.offset(part)
        p = F.softmax(next_logits(model, ids)[lo:lo + cfg.n_bins], -1).numpy()   # [n_bins]
        probs.append(p)
        ids = ids + [lo + int(p.argmax())]
    bins = [ids[3] - cfg.offset("ax"), ids[4] - cfg.offset("ay")]
    action = decode_bins(bins, -cfg.max_step, cfg.max_step, cfg.n_bins)
    return StepPrediction(ids, probs[0], probs[1], action, exp, ex_tokens)


@dataclass(frozen=True)
class Rollout:
    positions: np.ndarray      # [S+1,2] the robot's path, start first
    actions: np.ndarray        # [S,2] decoded actions taken
    target: np.ndarray         # [2]
    final_distance: float      # |target - last position|
    steps: list = field(default_factory=list, repr=False)   # StepPrediction per step


def rollout(model: GPT, start, target, instruction: str, cfg: RobotConfig, n_steps: int = 20) -> Rollout:
    """Close the loop: observe, predict the action tokens, decode, move; repeat."""
    pos = np.asarray(start, dtype=np.float64)
    tgt = np.asarray(target, dtype=np.float64)
    path, acts, steps = [pos.copy()], [], []
    for _ in range(n_steps):
        sp = predict_step(model, tgt - pos, instruction, cfg)
        pos = pos + sp.action
        path.append(pos.copy())
        acts.append(sp.action)
        steps.append(sp)
    return Rollout(np.array(path), np.array(acts).reshape(-1, 2), tgt,
                   float(np.linalg.norm(tgt - pos)), steps)
