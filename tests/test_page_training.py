"""The /training page in AppTest: start a tiny training, poll it a few times, stop it."""
from __future__ import annotations

import time

import pytest

from tests.apptest_util import all_text, decode, figures, open_page, poll_until
from ui.i18n import translate

pytestmark = pytest.mark.apptest
PAGE = "chapters/training.py"


def button(at, key):
    return next(b for b in at.button if b.key == key)


def _loss_x(at):
    figs = [f for f in figures(at) if f["data"] and f["data"][0].get("mode") == "lines"
            and len(f["data"]) >= 2 and f["data"][1].get("mode") == "lines+markers"]
    return decode(figs[0]["data"][0]["x"]) if figs else []


def loss_points(at) -> int:
    return len(_loss_x(at))


def last_step(at) -> float:
    """The newest step the loss curve reaches (its point count stops growing at
    viz.training.MAX_POINTS: the curve is bucketed beyond that)."""
    x = _loss_x(at)
    return float(max(x)) if len(x) else -1.0


def poll(at, until, timeout=40.0):
    return poll_until(at, until, timeout, interval=0.7)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_start_poll_stop_tiny(lang):
    at = open_page(PAGE, lang, corpus="toy", preset="tiny")
    assert translate("train.title", lang) in [x.value for x in at.title]
    assert button(at, "train_stop").disabled and not button(at, "train_start").disabled
    # the budget's estimate, stated before the start, computed from the plan
    from lmviz import limits
    from lmviz.numfmt import duration, short
    from lmviz.train import plan_training

    plan = plan_training("toy", "tiny", {"tokenizer": "char"})
    est = plan.budget.estimate
    from ui.i18n import device

    assert translate("train.plan_time", lang, device=device("cpu", lang), step_s=short(est.step_s, lang),
                     steps=plan.cfg.max_steps, total=duration(est.step_s * plan.cfg.max_steps, lang),
                     gflops=limits.TRAIN_FLOPS["cpu"] / 1e9) in all_text(at)
    button(at, "train_start").click().run()
    assert not at.exception
    assert poll(at, lambda a: loss_points(a) > 0)
    # while it runs, the page states its measured pace beside that estimate (one of the claim's
    # sentences: the words before the first number are the same in all four)
    pace_words = translate("claim.pace.faster", lang).split("{")[0]
    assert poll(at, lambda a: pace_words in all_text(a))
    s1 = last_step(at)
    assert poll(at, lambda a: last_step(a) > s1)                # the curve grows between polls
    text = all_text(at)
    assert translate("train.published", lang, step=0).split("0")[0][:6] in text
    # the trained model is what every chapter now shows
    assert at.session_state["lmviz_session_bundle"].source == "session"
    button(at, "train_stop").click().run()
    assert poll(at, lambda a: button(a, "train_start").disabled is False)
    progress = at.get("progress")[0].proto.text
    assert progress.startswith(translate("train.state_stopped", lang)) or \
        progress.startswith(translate("train.state_done", lang))
    n_final, s_final = loss_points(at), last_step(at)
    time.sleep(1.0)
    at.run()
    assert (loss_points(at), last_step(at)) == (n_final, s_final)   # stopped: no more steps
    button(at, "train_reset").click().run()
    assert "lmviz_session_bundle" not in at.session_state or at.session_state["lmviz_session_bundle"] is None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_students_run_says_it_stood_aside_for_the_lecturers_and_goes_on(lang):
    """Issue 55 item 4: a class's lecturer's task asks for the server's slot while a student's
    run holds it; the student's page says its run stood aside, from which step, and where it is
    in line (its curve stays drawn); when the lecturer's task ends, the run goes on."""
    import threading

    from lmviz.server.tasks import Task
    from ui.session import max_trainings, task_semaphore

    sem = task_semaphore()
    others = [sem.acquire(timeout=30) for _ in range(max_trainings() - 1)]   # one slot left: the student's
    try:
        at = open_page(PAGE, lang, corpus="toy", preset="tiny")
        button(at, "train_start").click().run()
        assert poll(at, lambda a: loss_points(a) > 0)
        gate = threading.Event()
        lect = Task(lambda ctx: gate.wait(60), sem, priority=0).start()
        said = translate("train.yielded", lang, step=10**9, n=1).split("1,000,000,000")[0]
        try:
            assert poll(at, lambda a: any(w.value.startswith(said) for w in a.warning))
            aside = next(w.value for w in at.warning if w.value.startswith(said))
            step = int(aside[len(said):].split()[0].replace(",", "").rstrip("步"))
            assert step > 0 and translate("train.yielded", lang, step=step, n=1) == aside   # first in line
            assert loss_points(at) > 0                                # its curve stays on the page
        finally:
            gate.set()
            assert lect.join(30)
        assert poll(at, lambda a: not any(w.value.startswith(said) for w in a.warning) and last_step(a) > 0)
        s1 = last_step(at)
        assert poll(at, lambda a: last_step(a) > s1)                  # it goes on
        button(at, "train_stop").click().run()
    finally:
        for _ in [x for x in others if x]:
            sem.release()


def test_a_followers_run_is_at_most_the_longest_presets_steps():
    """Issue 55 item 4: a student following a class trains at most FOLLOWER_MAX_STEPS steps (the
    longest preset's), says so, and a longer run is refused with the range; alone, the form's
    own range (up to 1,000,000) stands."""
    from lmviz.train import FOLLOWER_MAX_STEPS, PRESETS

    from tests.test_page_classroom import join, start_class

    assert FOLLOWER_MAX_STEPS == max(p.max_steps for p in PRESETS.values()) == 5000
    lec = open_page(PAGE, "en", present="1", corpus="toy", preset="tiny")
    code = start_class(lec)
    fol = join(code)
    assert fol.session_state["lmviz_page_file"] == PAGE
    said = translate("train.follower_steps", "en", n=FOLLOWER_MAX_STEPS)
    assert said in all_text(fol) and said not in all_text(lec)
    fol.number_input(key="train_max_steps_tiny").set_value(FOLLOWER_MAX_STEPS + 1).run()
    err = " ".join(e.value for e in fol.error)
    assert translate("train.err_range", "en", name=translate("train.k_max_steps", "en"), lo="1", hi="5,000",
                     value="5,001") in err
    assert all(b.disabled for b in fol.button if b.key == "train_start")   # no start with it
    lec.number_input(key="train_max_steps_tiny").set_value(FOLLOWER_MAX_STEPS + 1).run()
    assert not lec.error                                                      # the lecturer's range is the form's


def test_bad_custom_value_gets_a_message_not_a_traceback():
    at = open_page(PAGE, "en", preset="tiny")
    at.number_input(key="train_n_head_tiny").set_value(3).run()   # 64 is not divisible by 3
    assert not at.exception
    assert any(translate("train.err_divisible", "en", d=64, h=3) in e.value for e in at.error)
    assert button(at, "train_start").disabled


def test_own_text_needs_text():
    at = open_page(PAGE, "zh", corpus="own")
    assert not at.exception
    assert translate("train.need_text", "zh") in all_text(at)
    assert button(at, "train_start").disabled


# -- Chinese live training: the poetry corpus, both baselines, the form metric -----------------

def loss_figure_spec(at):
    figs = [f for f in figures(at) if f["data"] and f["data"][0].get("mode") == "lines"
            and len(f["data"]) >= 2 and f["data"][1].get("mode") == "lines+markers"]
    return figs[0] if figs else None


def test_chinese_defaults_to_poetry_and_draws_both_baselines_and_the_form():
    from lmviz.baselines import unigram_baseline
    from lmviz.poetry import form_share, poetry_tokenizer, training_text, vocab_facts

    at = open_page(PAGE, "zh")
    assert at.selectbox(key="train_corpus").value == "poetry"
    assert at.selectbox(key="train_preset").value == "poetry"
    assert at.selectbox(key="train_tok").disabled
    assert translate("train.vocab_reason", "zh", **vocab_facts()) in all_text(at)
    button(at, "train_start").click().run()
    assert poll(at, lambda a: (f := loss_figure_spec(a)) is not None and len(f["layout"].get("shapes", [])) >= 2
                and any(m.label == translate("train.m_form", "zh") for m in a.metric), timeout=90)
    # the two lines sit at the uniform and unigram baselines of the run's own split
    tok = poetry_tokenizer()
    text, vf = training_text()
    ids = tok.encode(text)
    n_val = int(len(ids) * vf)
    b = unigram_baseline(ids[:-n_val], ids[-n_val:], tok.vocab_size)
    ys = sorted(s["y0"] for s in loss_figure_spec(at)["layout"]["shapes"])
    assert ys == pytest.approx(sorted([b.uniform, b.unigram]), abs=1e-6)
    labels = [a["text"] for a in loss_figure_spec(at)["layout"]["annotations"]]
    assert translate("train.f_unigram", "zh", x=b.unigram) in labels
    assert translate("train.f_uniform", "zh", v=tok.vocab_size) in labels
    # the form metric is form_share of the newest sample (prompt included), and the prose says it
    newest = at.get("code")[0].value                           # samples are drawn newest first
    f = form_share(newest)
    metric = next(m for m in at.metric if m.label == translate("train.m_form", "zh"))
    assert metric.value == (f"{f.share:.0%}" if f.n_lines else "—")
    text = all_text(at)
    assert translate("train.form_note", "zh") in text
    # a perplexity is never shown without the uniform and unigram perplexities beside it
    assert translate("train.ppl_beside", "zh", ppl=0, uniform_ppl=b.uniform_ppl, unigram_ppl=0).split("。")[0][:5] in text
    assert f"{b.uniform_ppl:,.0f}" in text and f"{b.unigram_ppl:,.1f}" in text
    button(at, "train_stop").click().run()
    assert poll(at, lambda a: not button(a, "train_start").disabled)


def test_english_default_is_unchanged():
    at = open_page(PAGE, "en")
    assert at.selectbox(key="train_corpus").value == "english"
    assert at.selectbox(key="train_preset").value == "tiny"


# -- the training budget (lmviz.limits) in the form ----------------------------------------------

def _set(at, preset, **values):
    for name, v in values.items():
        at.number_input(key=f"train_{name}_{preset}").set_value(v)
    at.run()
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_over_budget_config_is_refused_with_its_reasons_and_start_is_disabled(lang):
    from lmviz import limits
    from lmviz.train import make_config

    at = open_page(PAGE, lang, corpus="english", preset="bigger")
    _set(at, "bigger", n_layer=12, d_model=1024, n_head=16, block_size=512)
    check = limits.check_budget(make_config("bigger", n_layer=12, d_model=1024, n_head=16, block_size=512),
                                limits.DEFAULT_VOCAB)
    assert not check.ok
    errors = "\n".join(e.value for e in at.error)
    assert translate("train.budget_refused", lang) in errors
    for r in check.reasons:
        assert translate(r.key, lang, **r.params) in errors
    assert button(at, "train_start").disabled


def test_a_clamped_batch_is_explained_and_the_lowered_batch_is_what_trains():
    from lmviz import limits
    from lmviz.train import make_config

    at = open_page(PAGE, "en", corpus="english", preset="default")
    _set(at, "default", batch_size=256, block_size=512)
    check = limits.check_budget(make_config("default", batch_size=256, block_size=512), limits.DEFAULT_VOCAB)
    assert check.ok and check.cfg.batch_size < 256
    warnings = "\n".join(w.value for w in at.warning)
    assert translate(check.reasons[0].key, "en", **check.reasons[0].params) in warnings
    assert at.session_state["train_setup"][2].batch_size == check.cfg.batch_size
    assert not button(at, "train_start").disabled


def test_checkpoint_uploader_states_the_one_limit():
    from lmviz import limits

    at = open_page(PAGE, "zh")
    text = at.get("file_uploader")
    labels = [u.proto.label for u in text]
    assert translate("ckpt.upload_label", "zh", mb=limits.MAX_UPLOAD_MB) in labels
    ckpt = next(u for u in text if u.proto.label == translate("ckpt.upload_label", "zh", mb=limits.MAX_UPLOAD_MB))
    assert ckpt.proto.max_upload_size_mb == limits.MAX_UPLOAD_MB


# -- input limits: said on the page, never dropped silently -------------------------------------

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_out_of_range_numbers_are_explained_and_start_is_disabled(lang):
    at = open_page(PAGE, lang, corpus="toy", preset="tiny")
    _set(at, "tiny", n_layer=40)
    errors = "\n".join(e.value for e in at.error)
    assert translate("train.err_range", lang, name=translate("train.k_n_layer", lang), lo="1", hi="12",
                     value="40") in errors
    assert button(at, "train_start").disabled
    _set(at, "tiny", n_layer=2)
    assert not at.error and not button(at, "train_start").disabled


def test_too_long_pasted_text_is_cut_with_a_message():
    limit = 200_000
    src = open(PAGE, encoding="utf-8").read()
    assert f"MAX_OWN_CHARS = {limit:_}" in src
    at = open_page(PAGE, "en", corpus="own")
    label = at.text_area(key="train_own_text").label
    assert label == translate("train.own_text", "en", n=limit)      # the limit is beside the box
    long = "abc " * (limit // 4 + 500)                              # 2,000 characters too many
    at.text_area(key="train_own_text").input(long).run()
    assert not at.exception
    assert translate("train.text_cut", "en", n=len(long), limit=limit) in all_text(at)
    assert at.session_state["train_setup"][3] == long[:limit]
    assert not button(at, "train_start").disabled
    at.text_area(key="train_own_text").input("short text " * 100).run()
    assert translate("train.text_cut", "en", n=len(long), limit=limit) not in all_text(at)


def test_the_txt_uploader_states_its_limit():
    at = open_page(PAGE, "zh", corpus="own")
    up = next(u for u in at.get("file_uploader") if u.proto.label == translate("train.upload_txt", "zh", mb=2))
    assert up.proto.max_upload_size_mb == 2


# -- a reload finds its training again (?run=<secret>) ------------------------------------------

def progress_step(at) -> int:
    bars = at.get("progress")
    if not bars:
        return -1
    import re

    m = re.search(r"(\d[\d,]*) / ", bars[0].proto.text)
    return int(m.group(1).replace(",", "")) if m else -1


def test_a_new_session_with_the_run_secret_reattaches_and_a_wrong_one_attaches_nothing():
    a = open_page(PAGE, "en", corpus="toy", preset="tiny")
    button(a, "train_start").click().run()
    secret = a.query_params["run"][0] if isinstance(a.query_params["run"], list) else a.query_params["run"]
    assert len(secret) >= 40                                     # secrets.token_urlsafe(32)
    assert poll(a, lambda x: progress_step(x) > 0)
    # session B: the same URL after a reload. AppTest gives every instance the same session id
    # (so the same session-scoped slot object): A's session ends as Streamlit ends it (the
    # slot's release hook), and the slot is emptied to be what B's fresh one would be.
    from ui import session

    entry = session.runs()._entries[secret]
    job, slot = entry.task, entry.watchers[0]
    session._release_training_slot(slot)
    assert session.runs().watchers(secret) == 0                 # released: the grace period runs
    assert job.snapshot().active                                # ... but the run goes on
    slot.__init__()
    b = open_page(PAGE, "en", run=secret)
    assert session.runs()._entries[secret].task is job
    assert translate("train.run_attached", "en") in all_text(b)
    assert poll(b, lambda x: progress_step(x) > 0)
    s1 = progress_step(b)
    assert poll(b, lambda x: progress_step(x) > s1)               # the same run, still advancing
    assert b.session_state["lmviz_session_bundle"].source == "session"   # and its model
    assert not button(b, "train_stop").disabled
    assert session.runs().watchers(secret) == 1                 # claimed: no longer on its way out
    button(b, "train_stop").click().run()
    assert job.join(10) and job.state == "stopped"               # B's Stop stopped A's run
    slot.__init__()                                              # a fresh session again (see above)
    # a wrong secret attaches nothing and says the link holds no training
    c = open_page(PAGE, "en", run=secret[:-2] + ("aa" if not secret.endswith("aa") else "bb"))
    assert translate("train.run_gone", "en") in all_text(c)
    assert progress_step(c) == -1 and button(c, "train_stop").disabled
    assert "run" not in c.query_params


def test_the_run_secret_is_not_a_chapter_setting():
    src = open("ui/urlstate.py", encoding="utf-8").read() + open(PAGE, encoding="utf-8").read()
    assert 'param="run"' not in src and "param='run'" not in src


# -- issue 28, faults 2 and 3 ----------------------------------------------------------------------

def _secret(at):
    raw = at.query_params.get("run")
    return raw[0] if isinstance(raw, list) else raw


def test_a_stranger_who_opens_and_closes_the_link_does_not_stop_the_run(monkeypatch):
    from lmviz.server.tasks import Registry
    from ui import session

    monkeypatch.setattr(session, "_RUNS", Registry(grace_s=0.05))        # a short grace period
    a = open_page(PAGE, "en", corpus="toy", preset="tiny")
    button(a, "train_start").click().run()
    secret = _secret(a)
    job = session.runs()._entries[secret].task
    assert poll(a, lambda x: progress_step(x) > 0)
    stranger = session.TrainingSlot()                   # another browser with the link ...
    assert session.runs().claim(secret, stranger) is job and session.runs().watchers(secret) == 2
    stranger.job, stranger.secret = job, secret         # (what attach_run does there)
    session._release_training_slot(stranger)            # ... closes its tab
    time.sleep(0.5)                                     # ten grace periods later
    assert job.snapshot().active and session.runs().watchers(secret) == 1
    s1 = progress_step(a)
    assert poll(a, lambda x: progress_step(x) > s1)      # the owner's tab still watches it advance
    owner = session.runs()._entries[secret].watchers[0]
    session._release_training_slot(owner)               # the last watching tab closes
    assert job.join(20) and job.state == "stopped"
    owner.__init__()                                    # AppTest's next session reuses the slot object


def test_presenter_mode_keeps_the_run_secret_out_of_the_address_bar():
    from ui import session

    at = open_page(PAGE, "en", corpus="toy", preset="tiny", present="1")       # section 1: the setup
    button(at, "lmviz_next").click().run()                                       # section 2: the run
    button(at, "train_start").click().run()
    assert "run" not in at.query_params                                 # not on the projector
    assert translate("train.run_link_hidden", "en") in all_text(at)
    job = session.runs()._entries[next(iter(reversed(session.runs()._entries)))].task
    assert poll(at, lambda x: job.snapshot().step > 0)                   # this session keeps its run
    assert not button(at, "train_stop").disabled and "run" not in at.query_params
    button(at, "train_reset").click().run()
    assert job.join(20) and job.state == "stopped" and "run" not in at.query_params


def test_a_full_registry_refuses_a_new_training_with_a_sentence(monkeypatch):
    from lmviz.server.tasks import Registry
    from tests.test_registry import forever
    from ui import session

    full = Registry(max_entries=1)
    live, _ = forever()
    full.add(live, "someone else")
    monkeypatch.setattr(session, "_RUNS", full)
    at = open_page(PAGE, "en", corpus="toy", preset="tiny")
    button(at, "train_start").click().run()
    assert not at.exception
    assert any(translate("train.run_full", "en", n=session.MAX_RUNS) == e.value for e in at.error)
    assert button(at, "train_stop").disabled and "run" not in at.query_params   # nothing started
    assert live.state == "running" and len(full) == 1                          # and nothing evicted
    live.cancel()


def test_the_current_model_can_be_fine_tuned_on_ones_own_text():
    """What the room's "fine-tune on our sentences" opens: my own text, starting from the live model."""
    at = open_page(PAGE, "zh", corpus="own", preset="tiny")
    at.text_area(key="train_own_text").input("我喜欢学习语言模型。\n" * 40).run()
    at.toggle(key="train_finetune").set_value(True).run()
    assert not at.exception
    live = at.session_state["train_setup"][4]
    assert live is not None and live.source == "default"
    cfg = live.model.cfg
    assert at.number_input(key="train_d_model_tiny_ft").disabled       # the model's shape stays
    assert at.number_input(key="train_d_model_tiny_ft").value == cfg.d_model
    assert translate("train.ft_note", "zh", params=live.model.num_params(), vocab=live.tokenizer.vocab_size,
                     **at.session_state["train_setup"][2].to_dict()) in all_text(at)
    button(at, "train_start").click().run()
    assert poll(at, lambda a: loss_points(a) > 0)
    assert poll(at, lambda a: a.session_state["lmviz_session_bundle"].meta.get("val_loss") is not None)
    tuned = at.session_state["lmviz_session_bundle"]               # the copy the chapters show now
    assert tuned.source == "session" and tuned.meta["label"] == "finetune/tiny"
    assert tuned.model.cfg == cfg and tuned.tokenizer is live.tokenizer
    assert tuned.meta["val_loss"] > 0     # scored on the held-out tail of my text (the learning: test_train)
    button(at, "train_stop").click().run()
    assert poll(at, lambda a: button(a, "train_start").disabled is False)


def test_a_finetune_on_a_text_too_short_says_so_before_start():
    """Three short lines (a room that accepted few sentences): the count in the model's tokens and
    the least a run needs, in the page's language, and Start stays disabled (before, Start raised
    an English error from the trainer)."""
    from lmviz.checkpoint import load_default
    from lmviz.train import tokens_needed

    model, tokenizer, _ = load_default()          # the model the page fine-tunes (nothing else picked)
    at = open_page(PAGE, "zh", corpus="own", preset="tiny")
    at.text_area(key="train_own_text").input("猫坐着。\n狗跑了。\n鸟飞了。").run()
    at.toggle(key="train_finetune").set_value(True).run()
    assert not at.exception
    block = model.cfg.block_size
    n = len(tokenizer.encode_lossy("猫坐着。\n狗跑了。\n鸟飞了。")[0])
    assert n < tokens_needed(block)
    said = translate("train.err_short_text", "zh", n=n, need=tokens_needed(block), block=block)
    assert said in [w.value for w in at.warning]
    assert at.session_state["train_setup"] is None and button(at, "train_start").disabled


def test_a_paused_run_has_no_timer(monkeypatch):
    """While the run is paused the live section has no timer (nothing moves but a press, here or in
    another tab, and the job's watch pushes that: test_page_replay's websocket test), and it
    polls again once resumed. (The page is a script: its constants are not
    imported here.)"""
    import streamlit as st

    paces: list[float | None] = []
    real = st.fragment

    def recording(func=None, *, run_every=None, **kw):
        paces.append(run_every)
        return real(func, run_every=run_every, **kw)

    monkeypatch.setattr(st, "fragment", recording)
    at = open_page(PAGE, "en", corpus="toy", preset="tiny")
    button(at, "train_start").click().run()
    assert poll(at, lambda a: loss_points(a) > 0)
    running = paces[-1]
    assert running is not None and running > 0
    button(at, "train_pause").click().run()
    assert paces[-1] is None
    button(at, "train_resume").click().run()
    # a timer again; not necessarily the same one: the interval follows the last run's time
    # (ui.session.poll), which depends on the machine's load (#54 item 7)
    assert paces[-1] is not None and paces[-1] > 0
    button(at, "train_stop").click().run()
    assert poll(at, lambda a: not button(a, "train_start").disabled)


def test_the_induction_preset_trains_on_its_copied_spans_from_the_page():
    """Issue 57's run, from the page: the copied-spans corpus with its preset, the preset's note
    with the run's own shape, the loss drawn from the first evaluation, stopped."""
    from lmviz.train import make_config

    at = open_page(PAGE, "zh", corpus="induction", preset="induction")
    assert not at.exception, [e.value for e in at.exception]
    cfg = make_config("induction")
    assert translate("train.preset_induction_note", "zh", **cfg.to_dict()) in all_text(at)
    button(at, "train_start").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert poll(at, lambda a: loss_points(a) > 0, timeout=90)
    button(at, "train_stop").click().run()
    assert poll(at, lambda a: button(a, "train_start").disabled is False)
    assert not at.exception


def test_the_induction_run_draws_its_heads_and_trains_its_one_layer_control_beside_it():
    """Issue 57 item 2, from the page: a short run of the preset draws the probe's halves and every
    head's scores over its evaluations, says what they show (sentences computed from the run's own
    evaluations), shows the followed head's attention at the first kept evaluation and now; the
    control button trains the one-layer run, which is then drawn beside the two-layer one."""
    from lmviz.chapters.claims import induction_control, induction_forming
    from lmviz.chapters.induction_run import induction_run
    from tests.apptest_util import fig_by_key
    from ui import session

    at = open_page(PAGE, "zh", corpus="induction", preset="induction")
    at.number_input(key="train_max_steps_induction").set_value(100).run()
    button(at, "train_start").click().run()
    assert poll(at, lambda a: not button(a, "train_start").disabled, timeout=120)
    secret = at.query_params["run"][0] if isinstance(at.query_params["run"], list) else at.query_params["run"]
    entry = session.runs()._entries[secret]
    run = induction_run(entry.task.snapshot().evals)
    assert run.steps == (0, 50, 100) and len(run.prefix[0]) == 2
    lh = lambda h: translate("common.layer_head", "zh", layer=h[0] + 1, head=h[1] + 1)  # noqa: E731
    c = induction_forming(run)
    text = all_text(at)
    assert translate(c.key, "zh", **c.values, lh=lh(run.head), plh=lh(run.previous_head)) in text
    fig = fig_by_key(at, "train_ind")
    assert [round(y, 4) for y in decode(fig["data"][2]["y"])] == [round(y, 4) for y in run.second]
    assert translate("train.ind_map_first", "zh", step=0, lh=lh(run.head), score=run.score(0)) in text
    assert translate("train.ind_map_now", "zh", step=100, lh=lh(run.head), score=run.score(2)) in text
    # the causal check on the published model: the followed head removed, and its layer's control
    from lmviz.chapters.attention_induction import scan
    from lmviz.chapters.claims import induction

    s = scan(entry.task.snapshot().model, run.ids, run.half)
    assert s.top[0][:2] == run.head
    c = induction(s.top[0][2], s.uniform, s.icl, s.top_rise, s.control_rise)
    assert translate(c.key, "zh", **c.values, lh=lh(run.head), clh=lh(s.control[:2])) in text
    # the control: one layer, the same run otherwise, beside the two-layer run
    button(at, "train_ind_control").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert poll(at, lambda a: not button(a, "train_start").disabled and "train_ind_compare" in
                [e.key for e in a.get("plotly_chart")], timeout=120)
    secret = at.query_params["run"][0] if isinstance(at.query_params["run"], list) else at.query_params["run"]
    entry = session.runs()._entries[secret]
    one = induction_run(entry.task.snapshot().evals)
    assert len(one.prefix[0]) == 1 and entry.watchers[0].earlier == run
    c = induction_control(one, run)
    assert translate(c.key, "zh", **c.values) in all_text(at)
    names = [f["name"] for f in fig_by_key(at, "train_ind_compare")["data"]]
    assert names == [translate("train.ind_layers", "zh", n=1), translate("train.ind_layers", "zh", n=2)]


def test_a_student_alone_predicts_how_the_loss_will_go_and_the_run_answers():
    """Issue 57 item 3, alone: the induction preset asks its two questions beside the run; a
    prediction waits for the run (no answer is known before it), and the run's answer (which
    ui.questions.set_run_answers keeps, as the live section does) turns it into a verdict."""
    from ui.questions import RUN_ANSWER

    at = open_page(PAGE, "en", corpus="induction", preset="induction")
    for qid in ("train_ind_loss", "train_ind_one_layer"):
        at.session_state[f"class_solo:{qid}:done"] = None          # not skipped: asked
    at.run()
    text = all_text(at)
    assert "The 2-layer model of the induction preset is about to train for 2,000 steps" in text
    at.radio(key="class_solo:train_ind_loss").set_value("bump").run()
    button(at, "class_solo:train_ind_loss:check").click().run()
    mine = translate("q.train_ind_loss.opt.bump", "en")
    assert translate("class.run_pending_mine", "en", answer=mine) in [i.value for i in at.info]
    at.session_state[RUN_ANSWER + "train_ind_loss"] = "sudden"                # what the run found
    at.run()
    right = translate("q.train_ind_loss.opt.sudden", "en")
    assert translate("class.wrong", "en", answer=right) in [e.value for e in at.error]
    assert translate("q.train_ind_loss.explain", "en") in all_text(at)
    # another preset asks neither
    at2 = open_page(PAGE, "en", corpus="toy", preset="tiny")
    assert not [r for r in at2.radio if r.key and r.key.startswith("class_solo:train_ind")]
