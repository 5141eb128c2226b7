"""/training's induction section (issue 57): an induction head forming, drawn from a run's probed
evaluations (lmviz.chapters.induction_run), the live run's or an uploaded checkpoint's (its
replay carries them: ``lmviz.replay.Replay.evals``): the probe's halves and every head's scores
over training, the sentences chosen from them, the followed head's attention before it formed and
now, the causal check on the model, and the run before this one beside it (or the button that
trains the one-layer control). The replay section's step slider shows the same head at any kept
evaluation (:func:`map_at_step`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import streamlit as st

from lmviz.chapters.claims import induction, induction_control, induction_forming, induction_loss
from ui import questions, render
from ui.i18n import t
from viz.training import attention_figure, icl_compare_figure, induction_figure


@dataclass(frozen=True)
class Source:
    evals: Any                    # the run's evaluations (lmviz.train.EvalMetrics; the probed ones are read)
    tokenizer: Any                # the run's tokenizer (labels the maps)
    model: Any                    # the model now (the causal check; None: not yet published)
    version: int                  # the model's version (caches the check)
    key: int                      # the run's identity (caches the check)
    earlier: Any = None           # the run before this one (an InductionRun), drawn beside it
    control: Callable | None = None   # trains the one-layer control (None: no button, e.g. an upload)
    control_disabled: bool = False    # a run is going: the button waits


def lh(head) -> str:
    return t("common.layer_head", layer=head[0] + 1, head=head[1] + 1)


def draw(src: Source) -> None:
    """The section, when the run probes for an induction head (TrainConfig.induction_probe)."""
    from lmviz.chapters.induction_run import answers, induction_run, probed

    run = induction_run(src.evals)
    if run is None:
        return
    questions.set_run_answers(answers(run, src.earlier))
    render.md(f"#### {t('train.ind_title')}")
    render.caption(t("train.ind_note", half=run.half, n=2 * run.half))
    forming, loss = induction_forming(run), induction_loss(run)
    mark = None
    if loss.statement in ("bump", "sudden", "smooth"):
        v = loss.values
        mark = (v["ra"], v["rb"]) if loss.statement == "bump" else (v["a"], v["b"])
    names = {"loss": t("train.ind_f_loss"), "first": t("train.ind_f_first"), "second": t("train.ind_f_second"),
             "head": t("train.ind_f_head", lh=lh(run.head)), "others": t("train.ind_f_others"),
             "previous": t("train.ind_f_previous", lh=lh(run.previous_head)),
             "uniform": t("train.ind_f_uniform", u=run.uniform), "formed": t("train.ind_f_formed"),
             "mark": t(f"train.ind_f_mark_{'bump' if loss.statement == 'bump' else 'fall'}")}
    fig = render.figure(induction_figure, run.steps, run.loss, run.first, run.second, run.prefix, run.previous,
                        head=run.head, previous_head=run.previous_head, uniform=run.uniform, names=names,
                        titles=(t("train.ind_t_loss"), t("train.ind_t_heads")), x_title=t("train.f_step"),
                        mark=mark, formed_at=run.steps[run.formed_at] if run.formed_at is not None else None)
    render.plot(fig, key="train_ind", filename="training-induction")
    render.md(render.claim(forming, lh=lh(run.head), plh=lh(run.previous_head)))
    if loss.statement != "waiting":
        render.md(render.claim(loss))
        if loss.weak:
            render.caption(t("train.ind_loss_weak", n=run.fall[0] - 1))
    _maps(run, probed(src.evals), src.tokenizer)
    _check(run, src)
    _control(run, src)


def labels(tokenizer, ids) -> list[str]:
    return [tokenizer.token(i) for i in ids] if tokenizer is not None else [str(i) for i in ids]


def head_map(run, evs, i: int, tokenizer, caption: str, key: str, filename: str) -> None:
    """The followed head's attention on the probe at kept evaluation ``i`` of ``evs``."""
    w = evs[i].induction.weights(*run.head)
    render.caption(caption)
    render.plot(render.figure(attention_figure, w, labels(tokenizer, run.ids), x_title=t("train.att_key"),
                              y_title=t("train.att_query"), hover=t("train.att_hover"), height=340),
                key=key, filename=filename)


def _maps(run, evs, tokenizer) -> None:
    """The followed head's attention on the probe before it formed (or at the first kept
    evaluation) and at the latest kept one (``evs``: the evaluations ``run`` was read from)."""
    from lmviz.induction import MAPS_MAX_BYTES

    if run.after is None:
        return
    first, name = (run.before, "before") if run.before is not None else (run.maps[0], "first")
    cols = st.columns(2)
    for col, i, name in ((cols[0], first, name), (cols[1], run.after, "now")):
        with col:
            head_map(run, evs, i, tokenizer, t(f"train.ind_map_{name}", step=run.steps[i], lh=lh(run.head),
                                              score=run.score(i)),
                     key=f"train_ind_map_{name}", filename=f"training-induction-{name}")
    render.caption(t("train.ind_map_note", start=run.half, gap=run.half - 1))
    if len(run.maps) < len(run.steps):
        render.caption(t("train.ind_maps_cut", kept=len(run.maps), n=len(run.steps), mib=MAPS_MAX_BYTES / 2 ** 20))


@st.cache_data(max_entries=8, show_spinner=False)
def _scan(ids: tuple[int, ...], half: int, version: int, run_key: int, _model):
    from lmviz.chapters.attention_induction import scan

    return scan(_model, ids, half)


def _check(run, src: Source) -> None:
    """The causal check on the model (lmviz.chapters.attention_induction.scan): the probe's second
    half with the followed head removed, and with its layer's weakest prefix matcher removed, the
    control (an attention map shows where a head looks, not what it does); then where to find the
    same kind of head in any model, this one included (/attention)."""
    from ui.chapters import by_slug

    if src.model is None:
        return
    s = _scan(run.ids, run.half, src.version, src.key, src.model)
    (bl, bh, score), (cl, ch, _) = s.top[0], s.control
    render.md(f"**{t('train.ind_check')}**")
    render.md(render.claim(induction(score, s.uniform, s.icl, s.top_rise, s.control_rise), lh=lh((bl, bh)),
                           clh=lh((cl, ch))))
    st.page_link(by_slug("attention").file, label=t("train.ind_to_attention"), icon=":material/travel_explore:")


def _control(run, src: Source) -> None:
    """The run before this one beside it (the one-layer control of a two-layer run), or the
    button that trains that control."""
    earlier = src.earlier
    if earlier is not None and len(earlier.prefix[0]) != len(run.prefix[0]):
        c = induction_control(run, earlier)
        names = [t("train.ind_layers", n=len(r.prefix[0])) for r in (run, earlier)]
        fig = render.figure(icl_compare_figure, [run.steps, earlier.steps], [run.icl, earlier.icl], names,
                            x_title=t("train.f_step"), y_title=t("train.ind_t_icl"))
        render.plot(fig, key="train_ind_compare", filename="training-induction-control")
        render.md(render.claim(c))
        if c.weak:
            render.caption(t("train.ind_control_weak", **c.values))
    elif len(run.prefix[0]) >= 2 and src.control is not None:
        st.button(t("train.ind_control"), key="train_ind_control", on_click=src.control, args=(1,),
                  disabled=src.control_disabled, help=t("train.ind_control_help"), icon=":material/science:")
