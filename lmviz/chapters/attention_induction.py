"""Induction heads: a head that attends from a token to the token *after* an earlier copy of it
([A][B] ... [A] -> it reads [B] and copies it forward), the circuit behind in-context learning
(Olsson et al. 2022, "In-context Learning and Induction Heads").

The probe is theirs, scaled down: a run of random tokens, then the same run again. The first
half cannot be predicted from context; in the second half each token can be read off its earlier
copy, so a model with induction heads predicts it and its loss falls. The in-context-learning
score here is the mean next-token loss on the second half minus that on the first (nats;
negative when the repeat is used). The paper's own score is the loss of the 500th token minus
that of the 50th, on natural text; a probe of a few dozen tokens compares its two halves instead.

Per head, from its attention weights on that sequence:

- **prefix matching**: the mean attention from each second-half position i to position
  i - half + 1, the token just after i's earlier copy (1 for a perfect induction head);
- **previous token**: the mean attention from each position to the one before it (1 for a
  perfect previous-token head, the circuit's first half, usually a layer earlier).

A head that spreads its attention evenly gives position i a weight of 1 / (i + 1) on every key:
:func:`uniform_prefix` is that baseline for the prefix score. An attention map is not an
explanation, so :func:`scan` also makes the causal check: the second-half loss with the top head
removed (it should rise) and with a control head removed (the head of lowest prefix score in the
top head's layer).

    >>> import torch
    >>> w = torch.zeros(1, 8, 8)
    >>> for i in range(8): w[0, i, i - 4 + 1 if i >= 4 else 0] = 1.0    # a perfect induction head
    >>> float(prefix_matching(w, 4)[0])
    1.0
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from lmviz.induction import (InductionPoint, halves_loss, measure, prefix_matching, previous_token, repeated_tokens,
                             uniform_prefix)

__all__ = ["HALF_MIN", "HALF_MAX", "InductionScan", "probe_half", "repeated_tokens", "prefix_matching",
           "previous_token", "uniform_prefix", "halves_loss", "scan"]

HALF_MIN = 8      # the shortest run of random tokens a probe repeats (fewer: a handful of points)
HALF_MAX = 64     # the longest (the scores settle well before; a longer run costs a longer trace)


def probe_half(params: int, block_size: int, device: str = "cpu") -> int:
    """The length of the random run a probe repeats, sized to the model: the trace and two
    ablated passes over 2 x half tokens within the view budget (lmviz.limits.view_tokens), at
    least HALF_MIN, at most HALF_MAX, and the whole probe inside the model's context.

    >>> probe_half(1_310_000, 64), probe_half(134_515_008, 2048)
    (32, 24)
    """
    from lmviz.limits import view_tokens

    by_budget = view_tokens(params, device) // 6            # 3 passes of 2 x half tokens
    return max(2, min(HALF_MAX, block_size // 2, max(HALF_MIN, by_budget)))


@dataclass(frozen=True)
class InductionScan:
    """Every head of a model probed on one repeated random run, with the causal check."""
    point: InductionPoint                       # the heads' scores and the halves' losses (lmviz.induction)
    uniform: float                              # the prefix score of a head attending evenly
    nll: tuple[float, ...]                      # [2 half - 1] next-token loss at each position, nats
    top: tuple[tuple[int, int, float], ...]     # (layer, head, score) of the best prefix matchers, best first
    control: tuple[int, int, float]             # (layer, head, score): the top head's layer's lowest prefix matcher
    top_removed: float                          # second-half loss with the top head removed
    control_removed: float                      # second-half loss with the control head removed
    top_weights: torch.Tensor                   # [T, T] the top head's attention on the probe

    # the point's own records, read through
    half = property(lambda self: self.point.half)                # tokens in the random run
    ids = property(lambda self: self.point.ids)                  # the probe: the run, then the run again
    prefix = property(lambda self: self.point.prefix)            # [L][H] prefix-matching scores
    previous = property(lambda self: self.point.previous)        # [L][H] previous-token scores
    first_loss = property(lambda self: self.point.first_loss)    # mean loss on the first half
    second_loss = property(lambda self: self.point.second_loss)  # mean loss on the second half
    icl = property(lambda self: self.point.icl)                  # second_loss - first_loss (< 0: used)
    best_previous = property(lambda self: self.point.best_previous)   # (layer, head, score)

    @property
    def top_rise(self) -> float:
        """How much the second-half loss rises when the top head is removed (nats)."""
        return self.top_removed - self.second_loss

    @property
    def control_rise(self) -> float:
        """The same for the control head: the size of a rise that means nothing."""
        return self.control_removed - self.second_loss


@torch.no_grad()
def scan(model, ids, half: int, n_top: int = 3) -> InductionScan:
    """Probe every head of ``model`` on ``ids`` (a run of ``half`` tokens, then the same run:
    :func:`repeated_tokens`): prefix-matching and previous-token scores, the loss on each half,
    and the second-half loss with the top head and with the control head removed."""
    from lmviz.chapters.attention_heads import forward_without_head

    idx = torch.tensor(list(ids), dtype=torch.long)
    tr, prefix, previous, nll = measure(model, idx, half)
    target = idx[1:]
    H = prefix.shape[1]
    order = torch.argsort(prefix.flatten(), descending=True).tolist()
    top = tuple((j // H, j % H, float(prefix.flatten()[j])) for j in order[:n_top])
    # the control: the top head's neighbour in its own layer with the lowest prefix score (the
    # lowest of the whole model was a head every position leans on in SmolLM2: removing it
    # raised the loss by 5.3 nats, which says nothing about copying)
    layer = top[0][0]
    low = int(torch.argmin(prefix[layer]))
    control = (layer, low, float(prefix[layer, low]))

    def second_without(layer: int, head: int) -> float:
        was = model.training
        model.eval()
        try:
            logits = forward_without_head(model, idx[None].to(model.device), layer, head)[0].float().cpu()
        finally:
            model.train(was)
        return halves_loss(F.cross_entropy(logits[:-1], target, reduction="none"), half)[1]

    best = top[0]
    return InductionScan(
        point=InductionPoint.of(idx, half, prefix, previous, nll), uniform=uniform_prefix(half),
        nll=tuple(nll.tolist()), top=top, control=control, top_removed=second_without(best[0], best[1]),
        control_removed=second_without(control[0], control[1]),
        top_weights=tr.layers[best[0]].weights[best[1]].clone())
