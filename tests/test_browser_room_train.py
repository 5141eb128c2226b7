"""Train on the room, as a class: the lecturer (presenter mode, English) starts a class on the
tokenization chapter's corpus "the room's sentences", an English student at a desk and a Chinese
student on a phone each send a sentence, the lecturer accepts both, the projector learns BPE on
them, and its fine-tune button takes the lecturer to /training, where the run on the room's
sentences goes.

Before, the accept pressed in the queue (a fragment) reran the queue alone: it read "0 waiting,
2 accepted" above "no sentence accepted yet", and neither merges nor the fine-tune button came.

Screenshots (``LMVIZ_SCREENSHOTS``, default ./screenshots) ``room-train-<who>-<step>-<lang>.png``.
"""
from __future__ import annotations

import re

import pytest

from tests.browser_util import end_class, exceptions, own_browser, own_server, shot, wait_idle  # noqa: F401 - own_browser, own_server: this module's fixtures
from tests.test_browser_classroom import _page, _text, _until
from ui.i18n import translate

pytestmark = pytest.mark.browser


# long enough together for a fine-tune of the shipped model (its 64-token windows need at least
# 130 tokens of text; two short lines stop the run with that sentence)
SENTENCES = {"en": "the cat sat on the mat and the dog sat on the log, and then the cat and the dog sat on the rug together",
             "zh": "我喜欢学习语言模型，也喜欢学习中文。老师说，模型每次只预测下一个字，一个字接一个字，就写出了一整句话。"}


def _first_merge(corpus: str) -> str:
    """The projector's first step, as the page words it in English: BPE as the page learns it
    (characters, split at spaces, the room's 60 merges by default)."""
    from lmviz.bpe import train_bpe

    h = train_bpe(corpus, 60, level="char", split_words=True).history[0]
    return translate("tok.step_msg", "en", k=1, a=h.pair[0], b=h.pair[1], tok=h.token, id=h.new_id,
                     c=h.count).replace("**", "")


def _visible_button(pg, name: str):
    """A button on the slide the page shows (presenter mode marks the others data-lmviz-off)."""
    return pg.locator("button:not([data-lmviz-off] *)").filter(has_text=name)


def test_the_room_learns_merges_from_its_sentences_and_fine_tunes_on_them(server, browser):
    L = lambda key, **kw: translate(key, "en", **kw)    # noqa: E731
    lctx, lec = _page(browser)
    ectx, en = _page(browser)
    zctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    zh = zctx.new_page()
    zh.set_default_timeout(90_000)
    try:
        lec.goto(server.url("tokenization", present=1, lang="en", corpus="room"), wait_until="domcontentloaded")
        wait_idle(lec)
        lec.get_by_role("button", name=L("class.start")).click()
        lec.wait_for_selector("[data-testid=stCode]")
        code = re.search(r"follow=([A-Z0-9]+)", lec.locator("[data-testid=stCode]").first.inner_text()).group(1)
        wait_idle(lec)
        assert L("tok.room_none_yet") in _text(lec)

        # each student opens the student link and sends one sentence
        for pg, lg in ((en, "en"), (zh, "zh")):
            pg.goto(server.url("", follow=code, lang=lg), wait_until="domcontentloaded")
            box = pg.locator(".st-key-tok_room_sentence input")
            following = translate("class.following", lg, cls=code).replace("**", "")
            assert _until(pg, lambda: "/tokenization" in pg.url and box.count() > 0
                          and following in _text(pg), 30_000), lg
            wait_idle(pg)
            box.first.fill(SENTENCES[lg])
            box.first.press("Enter")
            wait_idle(pg)
            send = pg.locator(".st-key-tok_room_send button")
            assert send.inner_text().strip().endswith(translate("tok.room_send", lg))
            send.click()
            assert _until(pg, lambda: translate("tok.room_state_pending", lg) in _text(pg), 20_000), \
                (lg, box.count() and box.first.input_value(), _text(pg)[-1500:])
        shot(zh, "room-train-follower-sent-zh")

        # the lecturer accepts both: the queue, the corpus and its merges follow
        accept = _visible_button(lec, L("tok.room_accept"))
        assert _until(lec, lambda: accept.count() == 2, 20_000)
        for left in (1, 0):
            accept.first.click()
            assert _until(lec, lambda: accept.count() == left, 20_000)
        wait_idle(lec)
        corpus = "\n".join(SENTENCES[lg] for lg in ("en", "zh"))     # oldest first
        caption = L("tok.room_corpus", n=2, chars=len(corpus) - 1)
        assert _until(lec, lambda: caption in _text(lec), 20_000)
        assert L("tok.room_none_yet") not in _text(lec)
        # the merges' section answers the chapter's first question: the lecturer shows it
        show = _visible_button(lec, L("class.show_answer"))
        for _ in range(6):                     # presenter mode: step to the question's slide
            if show.count():
                break
            lec.keyboard.press("PageDown")
            lec.wait_for_timeout(500)
        show.first.click()
        wait_idle(lec)
        assert _until(lec, lambda: _first_merge(corpus) in _text(lec), 30_000), _text(lec)[-3000:]
        train = _visible_button(lec, L("tok.room_train"))
        assert train.count() >= 1
        assert exceptions(lec) == []

        # one press: /training with the room's sentences as the text, the shown model as the start
        train.first.click()
        assert _until(lec, lambda: "/training" in lec.url, 30_000)
        wait_idle(lec)
        # the setup (section 1) holds the room's sentences as the text, fine-tuning the model shown
        assert lec.locator("textarea").first.input_value() == corpus
        assert lec.locator(".st-key-train_finetune input").first.is_checked()
        # the clicker steps to the run's slide and presses Start there (ui.render.CLICKER_KEYS)
        start = lec.locator(".st-key-train_start button:not([data-lmviz-off] *)")
        for _ in range(12):    # section 1's steps; the learning-rate question: asked, revealed
            if start.count() and start.first.is_enabled():
                break
            lec.keyboard.press("PageDown")
            lec.wait_for_timeout(600)
            wait_idle(lec)
        assert start.count() and start.first.is_enabled()
        lec.keyboard.press("PageDown")
        # the progress line's step part, its numbers as patterns (they are formatted with commas)
        step = L("train.progress", state="", step=1111, total=2222, tps="", eta="").split(" · ")[1]
        run = re.compile(f"(?:{L('train.state_running')}|{L('train.state_done')}) · "
                         + re.escape(step).replace("1,111", r"[\d,]+").replace("2,222", r"[\d,]+"))
        assert _until(lec, lambda: run.search(_text(lec)) is not None, 60_000), _text(lec)[-3000:]
        wait_idle(lec)
        assert exceptions(lec) == []
        shot(lec, "room-train-projector-training-en")

        # the students: taken along to /training, each in its own language
        for pg, lg in ((en, "en"), (zh, "zh")):
            assert _until(pg, lambda: "/training" in pg.url and translate("train.title", lg) in _text(pg),
                          30_000), lg
            wait_idle(pg)
            assert translate("class.following", lg, cls=code).replace("**", "") in _text(pg)
            assert exceptions(pg) == []
        shot(zh, "room-train-follower-end-zh")
        shot(en, "room-train-follower-end-en")
    finally:
        end_class(lec, "en")
        for ctx in (lctx, ectx, zctx):
            ctx.close()
