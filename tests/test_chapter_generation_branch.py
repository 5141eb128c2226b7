"""Branch on another token (greedy-vs-best example on a real model): greedy and a branch that forces one of a
step's top candidates, both of the same length, with sums of log-probabilities that are the model's own.
On the shipped model and on SmolLM2 (when installed) a branch beats greedy: greedy is not the most
probable sequence."""
from __future__ import annotations

import doctest

import pytest

from lmviz.chapters import generation_branch
from lmviz.chapters.generation_branch import BRANCH_LEN, branch_from, greedy_run, sequence_logprobs


def test_doctests():
    assert doctest.testmod(generation_branch).failed == 0


@pytest.fixture(scope="module")
def shipped():
    from lmviz.checkpoint import load_default

    model, tok, _ = load_default()
    return model, tok


@pytest.fixture(scope="module")
def smol():
    from tests.model_util import smollm2

    return smollm2()


def check_record(model, br, token):
    """The record's log-probabilities are the model's own (one uncached pass over each whole
    sequence), the branch's token at its step is the chosen one and both have the same length."""
    for cont in (br.greedy, br.branch):
        again = sequence_logprobs(model, br.prompt, cont.tokens)
        assert cont.logprobs == pytest.approx(again, abs=1e-4)
        assert cont.total == pytest.approx(sum(again), abs=1e-3)
    assert br.chosen == token == br.branch.tokens[br.step]
    assert len(br.branch.tokens) == len(br.greedy.tokens) == BRANCH_LEN
    assert br.branch.tokens[:br.step] == br.greedy.tokens[:br.step]
    assert br.margin == pytest.approx(br.branch.total - br.greedy.total)


def best_branch(model, run, step):
    return max((branch_from(model, run, step, c) for c in run.top[step][1:]), key=lambda b: b.margin)


def test_on_the_shipped_model_a_branch_beats_greedy(shipped):
    model, tok = shipped
    run = greedy_run(model, tok.encode_lossy("The ")[0])
    assert run.path.tokens[0] == run.top[0][0]               # greedy takes the arg-max
    br = best_branch(model, run, 0)
    check_record(model, br, br.chosen)
    assert br.chosen != run.path.tokens[0] and br.margin > 0  # a non-greedy first token, a more probable whole
    later = branch_from(model, run, 3, run.top[3][1])        # a branch later on shares greedy's first three tokens
    check_record(model, later, run.top[3][1])


def test_on_smollm2_a_branch_beats_greedy(smol):
    model, tok = smol
    run = greedy_run(model, tok.encode("The sky is"))
    br = best_branch(model, run, 0)
    check_record(model, br, br.chosen)
    assert br.margin > 0, (tok.decode(list(run.path.tokens)), tok.decode(list(br.branch.tokens)))


def test_greedys_own_choice_is_greedy_and_other_tokens_are_refused(shipped):
    model, tok = shipped
    run = greedy_run(model, tok.encode_lossy("The ")[0], n=4)
    same = branch_from(model, run, 2, run.path.tokens[2])
    assert same.branch.tokens == same.greedy.tokens and same.margin == 0
    outside = next(i for i in range(model.cfg.vocab_size) if i not in run.top[1])
    with pytest.raises(ValueError):
        branch_from(model, run, 1, outside)
    with pytest.raises(ValueError):
        branch_from(model, run, 4, run.top[0][0])
