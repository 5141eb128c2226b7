"""Shared by the replay tests (AppTest and browser): a tiny training run with its replay, saved
as a checkpoint blob."""
from __future__ import annotations


def replay_checkpoint(steps: int, induction: int = 0):
    """Train a tiny English model for `steps` steps while recording its replay (seconds on CPU);
    return the saved checkpoint bytes and the Recorder (its store holds the snapshots).
    ``induction``: the run probes for an induction head (TrainConfig.induction_probe) at an
    evaluation every 10 steps, and the checkpoint carries that record too."""
    from lmviz.checkpoint import save_checkpoint
    from lmviz.replay import Recorder, default_probe
    from lmviz.train import Trainer, corpus_text, make_config

    text = corpus_text("english")[:30_000]
    tr = Trainer(text, make_config("tiny", max_steps=steps, d_model=32, block_size=16, batch_size=8,
                                   induction_probe=induction, eval_every=10), device="cpu", prompt="The ")
    rec = Recorder(default_probe(text, "The "), max_steps=steps)
    rec.start(tr.model, tr.tokenizer)
    evals = [tr.evaluate()] if induction else []
    while not tr.done:
        n = min(10 - tr.steps_done % 10, rec.steps_to_next(tr.steps_done) or 10)
        for m in tr.step(n):
            rec.after_step(tr.model, tr.tokenizer, m.step, m.loss)
        if induction and tr.steps_done % 10 == 0:
            evals.append(tr.evaluate())
    return save_checkpoint(tr.model, tr.tokenizer, {"steps": steps}, replay=rec.replay().upto(steps, evals)), rec
