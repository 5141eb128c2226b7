"""Robot actions as tokens: action binning, the token layout of one step, and a policy trained by next-token loss."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmviz.chapters.beyond_robot import (INSTRUCTIONS, RobotConfig, expert_action, new_policy, predict_step,
    round_trip, rollout, step_tokens, token_label, train_policy)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 64), st.lists(st.floats(-0.2, 0.2), min_size=1, max_size=50))
def test_round_trip_within_half_a_bin(n_bins, values):
    r = round_trip(values, RobotConfig(n_bins=n_bins))
    assert np.all(np.abs(r.error) <= r.half_bin + 1e-12)
    assert r.bins.min() >= 0 and r.bins.max() < n_bins


def test_step_tokens_layout():
    cfg = RobotConfig(n_bins=7, n_obs_bins=5)
    ids = step_tokens([0.3, -1.9], "retreat", expert_action([0.3, -1.9], "retreat", cfg), cfg)
    groups = [token_label(i, cfg)[0] for i in ids]
    assert groups == ["instr", "ox", "oy", "ax", "ay"]
    assert token_label(ids[0], cfg)[1] == INSTRUCTIONS.index("retreat")
    assert token_label(ids[2], cfg)[1] == 0                  # offset -1.9: lowest y bin
    assert token_label(ids[3], cfg)[1] < 3                   # retreat: move left (x offset > 0)
    assert max(ids) < cfg.vocab_size


def test_trained_policy_reaches_the_target_and_untrained_does_not():
    cfg = RobotConfig()
    model, losses = train_policy(cfg)
    assert losses[-1] < losses[0] / 3
    start, target = [-0.8, -0.6], [0.7, 0.5]
    trained = rollout(model, start, target, "reach", cfg, n_steps=20)
    untrained = rollout(new_policy(cfg), start, target, "reach", cfg, n_steps=20)
    d0 = float(np.linalg.norm(np.subtract(target, start)))
    assert trained.final_distance < 0.25 * d0
    assert untrained.final_distance > trained.final_distance
    away = rollout(model, start, target, "retreat", cfg, n_steps=5)
    assert away.final_distance > d0                           # the instruction changes the action
    sp = predict_step(model, [1.0, 0.0], "reach", cfg)
    assert sp.px.shape == (cfg.n_bins,) and sp.px.sum() == pytest.approx(1.0, abs=1e-5)
