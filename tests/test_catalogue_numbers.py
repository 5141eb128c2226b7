"""No catalogue string types a result that a page computes: the worked examples' results are
computed here by the same core functions the pages call, and none of them may appear, in any
common spelling, inside assets/i18n/*.json (prose gets them through placeholders)."""
from __future__ import annotations

import re

import pytest

from ui.i18n import LANGS, catalogue


def _spellings(x: float, digits: int) -> set[str]:
    s = f"{x:.{digits}f}"
    out = {s, s.replace("-", "−")}
    if float(x).is_integer() and abs(x) >= 1000:
        out |= {f"{int(x)}", f"{int(x):,}"}
    return out


def computed_results() -> dict[str, set[str]]:
    """worked example -> the spellings of its results (computed, never typed here). A name
    "prefix: ..." limits the check to that chapter's keys (0.80 is also the SGD example's input)."""
    from lmviz.chapters.embedding import TOY_P3, add_position, toy_embedding
    from lmviz.chapters.loss_and_gradients import cross_entropy, one_param_step, sgd_step
    from lmviz.kv_cache import kv_cache_bytes
    from lmviz.sampling import softmax_t, top_p_filter

    res: dict[str, set[str]] = {}
    res["softmax [2, 1, -1]"] = set().union(*(_spellings(p, 3) for p in softmax_t([2.0, 1.0, -1.0]).tolist()))
    ce = cross_entropy([2.0, 1.0, -1.0], 1)
    res["cross-entropy"] = _spellings(ce.loss, 2) | _spellings(ce.loss, 3)
    res["one SGD step"] = _spellings(sgd_step().new, 2)
    s = one_param_step()
    res["one-parameter model"] = _spellings(s.w_new, 1) | _spellings(s.y_hat_new, 1) | _spellings(s.loss_new, 2)
    v = add_position(toy_embedding().E[3], TOY_P3).tolist()
    res["robot + P3"] = _spellings(v[0], 2) | _spellings(v[2], 2)
    res["KV cache size"] = _spellings(kv_cache_bytes(1, 32, 16384, 8, 128, 2), 0)
    probs = (0.50, 0.30, 0.15, 0.05)
    kept = top_p_filter(probs, 0.9).kept
    res["gen.: top-p mass"] = _spellings(sum(probs[i] for i in kept[:-1]), 2) | _spellings(sum(probs[i] for i in kept), 2)
    return res


def _contains_number(text: str, number: str) -> bool:
    return re.search(rf"(?<![\d.,]){re.escape(number)}(?![\d]|[.,]\d)", text) is not None


def test_the_results_are_what_the_notes_say():
    r = computed_results()
    assert {"0.705", "0.259", "0.035"} <= r["softmax [2, 1, -1]"]
    assert "1.35" in r["cross-entropy"] and "0.77" in r["one SGD step"]
    assert {"1.8", "3.6", "2.88"} <= r["one-parameter model"]
    assert {"0.85", "−0.20"} <= r["robot + P3"] and "2,147,483,648" in r["KV cache size"]


@pytest.mark.parametrize("lang", LANGS)
def test_no_catalogue_string_types_a_computed_result(lang):
    bad = [(key, example, n) for example, numbers in computed_results().items()
           for key, text in catalogue(lang).items()
           if ": " not in example or key.startswith(example.split(": ")[0])
           for n in numbers if _contains_number(text, n)]
    assert not bad, bad
