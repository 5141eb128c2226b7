"""The /post-training page in AppTest, both languages: the base model's facts and answers as its
records give them, a city picked, the mask's numbers; the fine-tune run to its end (its sentences
are the run's record, the room's question answered by it), stopped midway; β picked for the hand
computation; the DPO steps on the fine-tuned model's mistakes, their sentences from their record."""
from __future__ import annotations

import pytest

from tests.apptest_util import all_text, figures, open_page, poll_until, title_of
from ui.i18n import sentences, translate as tr

PAGE = "chapters/post_training.py"
pytestmark = pytest.mark.apptest
STEPS = 100           # the shortest fine-tune the page offers (ui: STEP_CHOICES)


def _n(x: float) -> str:
    return f"{x:.4g}".replace("-", "−")


def _q(text: str) -> str:
    from viz.tokenization import visible

    return visible(text)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_runs_sft_and_dpo_to_their_end(lang):
    from lmviz.chapters import post_training as pt
    from ui.questions import RUN_ANSWER
    from ui.session import shared_results

    at = open_page(PAGE, lang)
    text = all_text(at)
    base, cfg = pt.load_base(lang), pt.BaseTrainConfig()
    corpus = pt.base_corpus(lang)
    assert tr("pt.template_md", lang, layers=base.model.cfg.n_layer, heads=base.model.cfg.n_head,
              d=base.model.cfg.d_model, n=f"{cfg.sentences:,}", steps=f"{cfg.steps:,}",
              example=corpus.sentences[0]) in text
    split = pt.sft_split(lang, corpus, 0.6, 0)
    at.selectbox(key="pt_city").set_value(1).run()
    pair = split.held[1]
    read, asked = (pt.ask(base.model, base.tokenizer, p, lang) for p in (pt.as_statements((pair,), lang)[0], pair))
    text = all_text(at)
    assert tr("pt.said", lang, text=_q(read.text), verdict=tr("pt.right", lang)) in text
    assert tr("pt.said", lang, text=_q(asked.text), verdict=tr("pt.wrong", lang, answer=_q(pair.answer))) in text
    assert tr("pt.lesson.gap", lang) in text
    # the mask, on the first fine-tune pair
    (g,) = pt.graded_losses(base.model, base.tokenizer, split.train[:1], 48)
    assert tr("pt.mask_note", lang, k=sum(g.graded), n=len(g.graded), masked=f"{g.masked:.3f}",
              unmasked=f"{g.unmasked:.3f}") in text
    assert tr("pt.graded_title", lang, q=split.train[0].prompt) in [title_of(f) for f in figures(at)]
    assert tr("pt.dpo_needs_sft", lang, sec=2) in text
    # β picked: the hand computation follows
    at.selectbox(key="pt_beta").set_value(0.5).run()
    r = pt.dpo_by_hand(**{**pt.DPO_EXAMPLE, "beta": 0.5})
    assert f"0.5 × (2 − (−2)) = **{_n(r.margin)}**" in all_text(at) and f"**{r.loss:.4f}**" in all_text(at)

    # a fine-tune stopped midway says so, and a new press starts again
    at.select_slider(key="pt_steps").set_value(300).run()
    at.button(key="pt_tune").click().run()
    at.button(key="pt_sft_stop").click().run()
    assert tr("pt.sft_stopped", lang) in all_text(at)
    at.select_slider(key="pt_steps").set_value(STEPS).run()
    at.button(key="pt_tune").click().run()
    assert poll_until(at, lambda a: any(b.key == "pt_prefer" for b in a.button), 240), "the fine-tune never ended"
    ft = shared_results("pt-sft").get(("pt-sft", (lang, STEPS)))
    run, last = ft.run, ft.run.counted[-1]
    text = all_text(at)
    assert tr("pt.sft_result", lang, steps=STEPS, held=len(split.held), a0=0, a1=round(last[1] * len(split.held)),
              p0="0", p1=f"{100 * last[1]:.0f}") in text
    assert tr("pt.sides", lang, n=len(split.train), p0=f"{run.before.prompt:.2f}", p1=f"{run.after.prompt:.2f}",
              a0=f"{run.before.answer:.2f}", a1=f"{run.after.answer:.3f}") in text
    assert at.session_state[RUN_ANSWER + "pt_prompt_loss"] == pt.prompt_loss_moved(run)
    lr = pt.learned(run)
    assert sentences(tr("pt.learned_note", lang, n=len(split.held), never=lr.never),
                     tr("pt.learned.lost" if lr.lost else "pt.learned.kept", lang, lost=lr.lost), code=lang) in text
    assert tr("pt.acc_title", lang) in [title_of(f) for f in figures(at)]

    at.button(key="pt_prefer").click().run()
    assert poll_until(at, lambda a: tr("pt.dpo_title", lang, n=4) in [title_of(f) for f in figures(a)], 120)
    res = shared_results("pt-dpo").get(("pt-dpo", ((lang, STEPS), 0.5)))
    s = res.steps[-1]
    text = all_text(at)
    assert sentences(tr("pt.dpo_result", lang, steps=s.step, n=len(res.prefs), m=_n(s.margin),
                        loss0=f"{res.steps[0].loss:.3f}", loss1=f"{s.loss:.3f}", dw=_n(s.chosen_shift),
                        dl=_n(s.rejected_shift), kl=f"{s.kl:.2f}"), tr(f"pt.dpo_how.{pt.dpo_how(s)}", lang),
                     code=lang) in text
    assert f"= **{_n(res.first.margin)}**" in text
