import doctest

import pytest
import torch

import lmviz.data as D
from lmviz.data import available_corpora, get_batch, load_corpus, split


def test_doctests():
    assert doctest.testmod(D).failed == 0


def test_corpora_listing_and_loading():
    names = available_corpora()
    assert names == sorted(names)
    for n in names:
        assert isinstance(load_corpus(n), str)
    with pytest.raises(ValueError, match="unknown corpus"):
        load_corpus("../../etc/passwd")


def test_split_keeps_order_and_sizes():
    tr, va = split(torch.arange(100), 0.1)
    assert len(tr) == 90 and len(va) == 10
    assert torch.equal(torch.cat([tr, va]), torch.arange(100))
    with pytest.raises(ValueError):
        split([1, 2], 1.0)


def test_get_batch_targets_are_shifted_by_one():
    data = torch.arange(50)
    g = torch.Generator().manual_seed(0)
    x, y = get_batch(data, 4, 8, g)
    assert x.shape == y.shape == (4, 8)
    assert torch.equal(y, x + 1)                       # data[i] = i, so the next token is i + 1
    assert int(y.max()) <= 49
    g2 = torch.Generator().manual_seed(0)
    assert torch.equal(get_batch(data, 4, 8, g2)[0], x)   # same seed, same batch
    with pytest.raises(ValueError):
        get_batch(torch.arange(5), 2, 8)
