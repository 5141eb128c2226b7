"""/post-training in Chromium, as two students use it: a Chinese student at a desk predicts how
the question's loss will go, fine-tunes the base model (the run answers the prediction), answers
the DPO question, runs DPO on the fine-tuned model's mistakes and reads its numbers; an English
student on a phone reads the template as tokens and the mask (the fine-tune's page in English is
AppTest's, tests/test_page_post_training.py).

Screenshots (``LMVIZ_SCREENSHOTS``, default ./screenshots) ``post-training-<step>-<lang>.png``.
"""
from __future__ import annotations

import pytest

from tests.browser_util import exceptions, shot, wait_charts, wait_idle
from tests.test_browser_classroom import _page, _text, _until
from ui.i18n import translate

pytestmark = pytest.mark.browser


def _plain(text: str) -> str:
    return text.replace("**", "")


def _tail(text: str) -> str:
    """A catalogue string's words after its last placeholder (what the page shows as they are)."""
    return _plain(text.rsplit("}", 1)[-1])


def test_a_student_fine_tunes_and_runs_dpo_to_the_end(server, browser):
    from lmviz.chapters.post_training import DPO_EXAMPLE, dpo_by_hand

    Z = lambda key, **kw: translate(key, "zh", **kw)   # noqa: E731
    ctx, pg = _page(browser, height=900)
    try:
        pg.goto(server.url("post-training", lang="zh"), wait_until="domcontentloaded")
        wait_idle(pg)
        assert exceptions(pg) == []
        assert Z("pt.lesson.gap").replace("**", "") in _text(pg)           # knows the fact, not the format
        assert pg.locator("span[style*='outline']").count() > 0              # the template's characters outlined
        # the prediction the run answers: picked, then pending until the run has answered
        pg.get_by_text(Z("q.pt_prompt_loss.opt.falls_less"), exact=True).first.click()
        wait_idle(pg)
        pg.get_by_role("button", name=Z("class.check")).first.click()
        wait_idle(pg)
        pending = _plain(Z("class.run_pending_mine", answer=Z("q.pt_prompt_loss.opt.falls_less")))
        assert _until(pg, lambda: pending in _text(pg), 20_000)
        shot(pg, "post-training-before-zh")

        pg.get_by_role("button", name=Z("pt.tune", n=300)).click()
        assert _until(pg, lambda: _tail(Z("pt.sft_result")) in _text(pg), 180_000)
        wait_idle(pg)
        wait_charts(pg, every=True)
        text = _text(pg)
        assert _tail(Z("pt.unseen.none")) in text and _tail(Z("pt.sides")) in text
        # the run answered the prediction: right or not, the reveal names the run's answer
        assert _until(pg, lambda: pending not in _text(pg), 30_000)
        assert any(Z(k, answer=Z(f"q.pt_prompt_loss.opt.{o}")) in _text(pg)
                   for k in ("class.right", "class.wrong") for o in ("falls_less", "falls_like", "same", "rises"))
        shot(pg, "post-training-sft-zh")

        # the DPO question, then the steps
        r = dpo_by_hand(**DPO_EXAMPLE)
        right = f"{r.margin:g}"
        pg.get_by_text(right, exact=True).first.click()
        wait_idle(pg)
        pg.get_by_role("button", name=Z("class.check")).first.click()
        wait_idle(pg)
        assert _until(pg, lambda: pg.get_by_role("button", name=Z("pt.prefer")).count() == 1, 30_000)
        pg.get_by_role("button", name=Z("pt.prefer")).click()
        assert _until(pg, lambda: _tail(Z("pt.dpo_result")) in _text(pg), 120_000)
        wait_idle(pg)
        wait_charts(pg, every=True)
        assert Z("pt.dpo_title", n=4) in pg.content() and _tail(Z("pt.by_hand_real")) in _text(pg)
        assert exceptions(pg) == []
        shot(pg, "post-training-dpo-zh")
    finally:
        ctx.close()


def test_a_phone_reads_the_template_and_the_mask(server, browser):
    E = lambda key, **kw: translate(key, "en", **kw)   # noqa: E731
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    try:
        pg.goto(server.url("post-training", lang="en"), wait_until="domcontentloaded")
        wait_idle(pg)
        assert exceptions(pg) == []
        pg.get_by_role("button", name=E("class.skip")).first.click()     # the run's question: show me
        wait_idle(pg)
        wait_charts(pg)
        assert E("pt.lesson.gap").replace("**", "") in _text(pg)
        assert exceptions(pg) == []
        width = pg.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 390 + 1, width                                         # nothing wider than the phone
        shot(pg, "post-training-phone-en")
    finally:
        ctx.close()
