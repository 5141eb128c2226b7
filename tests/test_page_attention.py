"""The Attention page through AppTest: the five stages on the live model, layer/head sliders,
all heads, the weighted-sum, √d_k-scaling and causal-mask examples, bad input, both languages."""
from __future__ import annotations

import numpy as np
import pytest

from tests.apptest_util import all_text, decode, figures, open_page
from ui.i18n import translate

PAGE = "chapters/attention.py"
pytestmark = pytest.mark.apptest


@pytest.fixture(autouse=True, scope="session")
def live_model():
    """The shipped default model; when the file is not there (yet), a small random stand-in so
    the pages' mechanics are still tested (numbers from a random model, same shapes)."""
    import lmviz.checkpoint as ck

    if ck.DEFAULT_PATH.exists():
        yield
        return
    import torch

    from lmviz.model import GPT, GPTConfig
    from lmviz.tokenizer import CharTokenizer

    text = "".join((ck.DEFAULT_PATH.parent.parent / "corpora" / f"{n}.txt").read_text(encoding="utf-8")
                   for n in ("english", "chinese"))
    tok = CharTokenizer(text)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=64, n_layer=2, n_head=4,
                          n_kv_head=4, d_model=64)).eval()
    original = ck.load_default
    ck.load_default = lambda: (model, tok, {"stand_in": True})
    yield
    ck.load_default = original


STAGE_FIG, HEADS_FIG, MH_FIG = 2, 3, 4   # figure order: pronoun heads, pronoun row, stage, all heads, multi-head


def no_errors(at):
    assert not at.exception, [e.value for e in at.exception]


def set_stage(at, stage: str):
    """Choose a stage through session state (the option labels are translated by format_func,
    which AppTest's selectbox helpers re-run outside the session, in English)."""
    at.session_state["att_stage"] = stage
    return at


def stage_z(at) -> np.ndarray:
    """The stage heatmap's matrix (NaN where masked)."""
    fig = figures(at)[STAGE_FIG]
    return decode(fig["data"][0]["z"]).astype(float)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_stages_layers_heads(lang):
    at = open_page(PAGE, lang)
    no_errors(at)
    assert at.title[0].value == translate("att.title", lang)
    raw = stage_z(at)
    T = raw.shape[0]
    assert raw.shape == (T, T) and T > 5 and np.isfinite(raw).all()  # QK^T: every pair scored
    set_stage(at, "scaled").run()
    no_errors(at)
    scaled = stage_z(at)
    ratio = raw[np.abs(scaled) > 1e-6] / scaled[np.abs(scaled) > 1e-6]
    assert np.allclose(ratio, ratio[0], rtol=1e-3) and ratio[0] > 1       # divided by one sqrt(d_k)
    set_stage(at, "masked").run()
    masked = stage_z(at)
    assert np.isnan(masked[np.triu_indices(T, 1)]).all()                  # future = -inf (drawn grey)
    set_stage(at, "weights").run()
    w = stage_z(at)
    assert np.allclose(w.sum(1), 1, atol=1e-5) and (w[np.triu_indices(T, 1)] == 0).all()
    # a different layer gives a different weight matrix
    at.slider(key="att_layer").set_value(2).run()
    no_errors(at)
    assert not np.allclose(stage_z(at), w)
    assert translate("att.heads_title", lang, layer=2) in all_text(at)
    # all heads of the layer side by side, one heatmap each, rows summing to 1
    heads = figures(at)[HEADS_FIG]
    assert len(heads["data"]) == at.slider(key="att_head").max
    for tr in heads["data"]:
        assert np.allclose(decode(tr["z"]).astype(float).sum(1), 1, atol=1e-5)
    at.slider(key="att_head").set_value(2).run()
    no_errors(at)
    assert np.allclose(stage_z(at), decode(figures(at)[HEADS_FIG]["data"][1]["z"]).astype(float), atol=1e-6)
    # the head output: [T, d_head]
    set_stage(at, "out").run()
    assert stage_z(at).shape[0] == T and stage_z(at).shape[1] < T * 4


def _case(model, tok, text, ref, pron, ctrl):
    """The page's pronoun test recomputed outside the page (lmviz.chapters.attention_pronoun)."""
    import torch

    from lmviz.chapters.attention_pronoun import pronoun_case, pronoun_words

    def trace(ids):
        with torch.no_grad():
            return model.forward_trace(torch.tensor(ids))
    ids = tok.encode(text)
    return pronoun_case(trace, ids, *pronoun_words(tok, ids, ref, pron, ctrl), model.cfg.block_size)


def _check_pronoun_figure(at, lang, case, text_tokens):
    """The grid is every head's referent-minus-control margin, the row the best margin head's; the
    sentences name the head that looks most at the referent and the head with the best margin."""
    from lmviz.chapters import attention as A

    p, m = case.attention, case.margin
    fig, row = figures(at)[:2]                          # every head's margin, then the best head's row
    grid = decode(fig["data"][0]["z"]).astype(float)
    np.testing.assert_allclose(grid, m.margin.numpy(), atol=1e-3)
    np.testing.assert_allclose(decode(row["data"][0]["y"]).astype(float), m.row.numpy(), atol=1e-3)
    lh = translate("common.layer_head", lang, layer=p.best[0] + 1, head=p.best[1] + 1)
    q = case.query_pos
    _, ref, pron = PRONOUN_DEFAULT[lang]
    want = translate("att.why_result", lang, pron=pron, q=q + 1, qtok=text_tokens[q], p=f"{case.p_pronoun:.2f}",
                     ref=ref, lh=lh, best=f"{p.best_share:.2f}", n=grid.size, mean=f"{p.mean:.2f}", k=q + 1,
                     unif=f"{p.uniform:.2f}")
    assert want in all_text(at)
    assert abs(decode(row["data"][0]["y"]).astype(float).sum() - 1) < 1e-3   # one attention row
    lhm = translate("common.layer_head", lang, layer=m.best[0] + 1, head=m.best[1] + 1)
    f = lambda x: f"{x:.2f}"  # noqa: E731
    ctrl = CONTROL_DEFAULT[lang]
    verdict = translate(f"att.why_margin.{m.verdict}", lang, n=grid.size, ref=ref, ctrl=ctrl, pron=pron, lh=lhm,
                        share=f(float(m.referent[m.best])), control=f(float(m.control[m.best])),
                        margin=f(m.best_margin), hi=f(A.MARGIN_EVIDENCE), lo=f(A.MARGIN_WEAK),
                        null_n=A.NULL_SENTENCES, null_hi=A.NULL_AT_EVIDENCE, null_lo=A.NULL_AT_WEAK,
                        null_below=A.NULL_SENTENCES - A.NULL_AT_WEAK, null_model=A.NULL_MODEL,
                        null_heads=A.NULL_HEADS)
    assert verdict in all_text(at)
    return lhm


from chapters.attention import CONTROL as CONTROL_DEFAULT, PRONOUN as PRONOUN_DEFAULT  # noqa: E402


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_pronoun_and_multi_head(lang):
    """Why attention: from the position that writes the pronoun, the share onto the referent, as
    the caption says, on the pronoun toy (the default) and on the live model; multi-head: heads
    side by side, concatenated, projected, equal to the model's own sublayer output."""
    from lmviz.chapters.attention_heads import multi_head, sublayer_output
    from lmviz.chapters.attention_pronoun import load_toy
    from chapters.attention import CONTROL, DEFAULT_TEXT, PRONOUN
    from ui.session import default_bundle

    b = default_bundle()
    toy = load_toy()
    at = open_page(PAGE, lang)
    no_errors(at)
    text, ref, pron = PRONOUN[lang]
    case = _case(toy.model, toy.tokenizer, text, ref, pron, CONTROL[lang])
    _check_pronoun_figure(at, lang, case, [toy.tokenizer.token(i) for i in case.ids])
    text_all = all_text(at)
    assert translate("att.why_toy_note", lang, layers=2, heads=4, vocab=toy.tokenizer.vocab_size, n=6000, m=100,
                     acc_en="100%", acc_zh="100%") in text_all
    at.radio(key="att_p_src").set_value("live").run()
    no_errors(at)
    live = _case(b.model, b.tokenizer, text, ref, pron, CONTROL[lang])
    from lmviz.chapters.embedding import encode_for_model
    _check_pronoun_figure(at, lang, live, encode_for_model(b.tokenizer, text, b.model.cfg.block_size).tokens)
    at.radio(key="att_p_src").set_value("toy").run()
    # multi-head: shapes, the figure's panels, the check against the model's own output
    cfg = b.model.cfg
    mids = b.tokenizer.encode(DEFAULT_TEXT[lang])
    T, H, dh, d = len(mids), cfg.n_head, cfg.d_model // cfg.n_head, cfg.d_model
    codes = [c.value for c in at.code]
    assert any(f"[{H} × {T} × {dh}]" in c and c.count(f"[{T} × {d}]") == 3 for c in codes)
    mh_fig = figures(at)[MH_FIG]
    assert len(mh_fig["data"]) == H + 2
    panels = [decode(tr["z"]).astype(float) for tr in mh_fig["data"]]
    assert all(x.shape == (T, dh) for x in panels[:H]) and panels[H].shape == (T, d)
    np.testing.assert_allclose(np.concatenate(panels[:H], axis=1), panels[H], atol=1e-6)
    mh = multi_head(b.model, mids, 0)
    err = float((mh.projected - sublayer_output(b.model, mids, 0)).abs().max())
    assert err < 1e-4
    np.testing.assert_allclose(panels[H + 1], mh.projected.numpy(), atol=1e-5)
    assert translate("att.mh_check", lang, err=err) in text_all
    assert translate("att.mh_caption", lang, layer=1, t=T, h=H, dh=dh, d=d, dh_last=dh - 1) in text_all
    at.slider(key="att_mh_layer").set_value(cfg.n_layer).run()
    no_errors(at)
    assert translate("att.mh_caption", lang, layer=cfg.n_layer, t=T, h=H, dh=dh, d=d, dh_last=dh - 1) in all_text(at)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_worked_examples(lang):
    at = open_page(PAGE, lang)
    codes = " ".join(c.value for c in at.code)
    assert "[1.2, 1.6]" in codes                                        # weighted-sum example
    table = at.dataframe[0].value                                       # √d_k-scaling example
    var = table[translate("att.col.var_raw", lang)].to_numpy()
    dks = table["d_k"].to_numpy()
    assert np.all(np.abs(var / dks - 1) < 0.15)
    assert np.all(np.abs(table[translate("att.col.var_scaled", lang)].to_numpy() - 1) < 0.15)
    text = all_text(at)
    assert translate("att.mask_caption", lang, zeros=10, future=10, n=5) in text  # causal-mask example
    one = [f for f in figures(at) if f["data"] and f["data"][0]["type"] == "bar"][-1]
    raw, scaled = (decode(tr["y"]).astype(float) for tr in one["data"])
    assert raw.max() > scaled.max()
    at.select_slider(key="att_dk").set_value(4).run()
    no_errors(at)


def test_bad_and_long_input():
    at = open_page(PAGE, "en")
    at.text_input(key="att_text").input("☃☃☃").run()
    no_errors(at)
    assert at.warning and translate("att.empty", "en") in [w.value for w in at.warning]
    at.text_input(key="att_text").input("<b>x</b> ☃ " + "abc " * 40).run()
    no_errors(at)
    assert any("☃" in w.value for w in at.warning)
    assert stage_z(at).shape[0] <= 64


def test_pronoun_text_is_not_markdown():
    """User text in the pronoun sentence is shown as text: no link, no HTML."""
    at = open_page(PAGE, "en")
    at.radio(key="att_p_src").set_value("live").run()    # the live model reads any character
    link = "[a](http://h.ex)"     # within the 20-character box
    at.text_input(key="att_p_text").input(f"{link} said that he <b>was</b> here").run()
    at.text_input(key="att_p_ref").input(link).run()
    at.text_input(key="att_p_pron").input("he").run()
    no_errors(at)
    # a chart's text twin is an HTML block (<p class="lmviz-twin">, CommonMark's HTML block 6: no
    # Markdown inside it), its text HTML-escaped: only the Markdown paragraphs could make a link
    md = " ".join(m.value for m in at.markdown if 'class="lmviz-twin"' not in m.value)
    assert r"\[a\]\(http\:" in md and "[a](http" not in md
    at.text_input(key="att_p_ref").input("<b>x</b>").run()
    no_errors(at)
    assert any(r"\<b\>x\</b\>" in w.value for w in at.warning)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_pronoun_claim_is_tested_against_a_control_and_the_look_back(lang):
    """The pronoun sentence is chosen by lmviz.chapters.claims.pronoun from the best head's share on the
    referent, the same head on the sentence with the control word in the referent's place, and
    the head's own look-back the same distance from every other position. On the toy the
    referent beats both; with the referent itself as the control it cannot."""
    from lmviz.chapters.attention_pronoun import load_toy
    from lmviz.chapters.claims import pronoun
    from chapters.attention import CONTROL, PRONOUN

    toy = load_toy()
    at = open_page(PAGE, lang)
    no_errors(at)
    text, ref, pron = PRONOUN[lang]
    case = _case(toy.model, toy.tokenizer, text, ref, pron, CONTROL[lang])
    c, m = case.control, case.margin
    claim = pronoun(c.referent, c.control, c.recency, c.uniform)
    assert claim.key == "claim.pronoun.referent"
    lh = translate("common.layer_head", lang, layer=m.best[0] + 1, head=m.best[1] + 1)   # the margin's head
    fmt = lambda cl, ctrl: translate(cl.key, lang, **{**dict(cl.values), "ref": ref, "ctrl": ctrl,  # noqa: E731
                                                       "pron": pron, "lh": lh, "dist": c.distance})
    assert fmt(claim, CONTROL[lang]) in all_text(at)
    at.text_input(key="att_p_ctrl").input(ref).run()
    no_errors(at)
    same_case = _case(toy.model, toy.tokenizer, text, ref, pron, ref)
    same = same_case.control
    assert same_case.margin.best_margin == 0 and same_case.margin.verdict == "none"
    lh_same = translate("common.layer_head", lang, layer=same_case.margin.best[0] + 1,
                        head=same_case.margin.best[1] + 1)
    same_claim = pronoun(same.referent, same.control, same.recency, same.uniform)
    assert same_claim.statement != "referent"
    assert translate(same_claim.key, lang, **{**dict(same_claim.values), "ref": ref, "ctrl": ref, "pron": pron,
                                              "lh": lh_same, "dist": same.distance}) in all_text(at)
    assert translate("claim.pronoun.referent", lang, **{**dict(claim.values), "ref": ref, "ctrl": ref, "pron": pron,
                                                          "lh": lh, "dist": c.distance}) not in all_text(at)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_heads_map_is_a_task_the_page_waits_for(lang, monkeypatch):
    """Removing every head takes seconds on a pretrained model (SmolLM2's 270: 115-137 s when the
    page did it inline): it is one background task per model and sentence, the page shows its
    progress and draws the map once it is done. Here the work waits until the test lets it go."""
    import threading

    import lmviz.chapters.attention_heads as H
    from tests.apptest_util import TASK_TIMEOUT, TIMEOUT, poll_until
    from ui import room

    go, real = threading.Event(), H.head_effects
    monkeypatch.setattr(H, "head_effects", lambda *a, **k: go.wait(TIMEOUT) and real(*a, **k))
    monkeypatch.setattr(room, "INLINE_WAIT_S", 0.0)
    room._effects_task.clear()
    try:
        at = open_page(PAGE, lang, text="The heads are mapped here.")
        assert not at.exception, [e.value for e in at.exception]
        from tests.apptest_util import fig_by_key

        def the_map(a):
            try:
                return fig_by_key(a, "att_heads_map")
            except (AssertionError, StopIteration, KeyError):
                return None

        shown = all_text(at) + " ".join(p.text for p in at.get("progress"))
        # its place in line, or its progress (a busy machine's other tasks may run first)
        said = [translate("att.hm_computing", lang, step=0, n=4, total=16).split("：")[0].split(":")[0],
                translate("att.hm_queued", lang, n=1, cap=1, total=16).split("（")[0].split("(")[0]]
        assert any(s in shown for s in said), shown
        assert the_map(at) is None                   # not drawn before the task is done
        go.set()
        assert poll_until(at, lambda a: the_map(a) is not None, timeout=TASK_TIMEOUT)
    finally:
        go.set()
        room._effects_task.clear()


def _induction_section(at, lang: str):
    from tests.apptest_util import fig_by_key

    text = all_text(at)
    spec = fig_by_key(at, "att_ind_map")
    z = decode(spec["data"][0]["z"]).astype(float)
    return text, z


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_induction_heads_on_the_shipped_model_are_absent_and_said_so(lang):
    """Issue 57 item 4 on the shipped model: a layer x head map of prefix-matching scores, and
    the claim the scan's numbers choose (this 4-layer character model of poems copies nothing)."""
    from lmviz.checkpoint import load_default
    from lmviz.chapters.claims import induction
    from lmviz.chapters.attention_induction import probe_half, repeated_tokens, scan

    at = open_page(PAGE, lang)
    no_errors(at)
    text, z = _induction_section(at, lang)
    m, tok, _ = load_default()
    assert z.shape == (m.cfg.n_layer, m.cfg.n_head)
    half = probe_half(m.num_params(), m.cfg.block_size)
    s = scan(m, repeated_tokens(tok.vocab_size, half, 1), half)      # the slider's first run
    assert np.allclose(z, np.array(s.prefix), atol=1e-6)
    c = induction(s.top[0][2], s.uniform, s.icl, s.top_rise, s.control_rise)
    assert c.statement == "none"
    assert translate("claim.induction.none", lang, lh="", score=0, uniform=0, icl=0, rise=0)[:12] in text
    assert f"{s.icl:+.2f} nat" in [m.value for m in at.metric]
    # the head's map is not described as an induction head's (it was, whatever the scan found)
    captions = [c.value for c in at.caption]
    assert translate("att.ind_attn_caption_none", lang, start=half + 1, end=2 * half, gap=half - 1,
                     score=f"{s.top[0][2]:.3f}", uniform=f"{s.uniform:.3f}") in captions
    assert not [c for c in captions if c == translate("att.ind_attn_caption", lang, start=half + 1, end=2 * half,
                                                      gap=half - 1)]


def test_induction_heads_of_smollm2_are_found_named_and_removed():
    """The same section with SmolLM2 current (Chinese page): a head that copies, named with its
    layer and head, and the causal check's numbers in the sentence."""
    from tests.apptest_util import smollm2_page

    at = smollm2_page(PAGE, "zh")
    no_errors(at)
    text, z = _induction_section(at, "zh")
    assert z.shape == (30, 9) and float(np.nanmax(z)) > 0.5
    sentence = next(line for line in text.splitlines() if "是一个归纳头" in line)
    layer, head = np.unravel_index(int(np.nanargmax(z)), z.shape)
    assert translate("common.layer_head", "zh", layer=layer + 1, head=head + 1) in sentence
    # this head's map is described as an induction head's: the diagonal offset by the run
    assert translate("att.ind_attn_caption", "zh", start=1, end=2, gap=3).split("（")[0] in \
        " ".join(c.value for c in at.caption)
