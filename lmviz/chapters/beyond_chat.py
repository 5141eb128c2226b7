"""The chat template (/beyond, after pre-training): how an instruct model is asked a question.

An instruct model was fine-tuned on conversations written in one format, its *chat template*
(SmolLM2's: ``<|im_start|>user`` … ``<|im_end|>``, special tokens that are never split). The same
question asked as plain text and inside the template, each answered greedily:

- the template of the model's own records, rendered for one question    -> :func:`templated`
- the end-of-turn token the template writes after a message             -> :func:`end_of_turn`
- a short greedy answer that stops at end-of-turn / end-of-text        -> :func:`greedy_answer`

The template is a Jinja text from the model's file: it is rendered in Jinja's immutable sandbox,
only when what it can do is bounded by its own length (see ``_checked``: no macro, one pass over
the messages, small numbers, filters and string methods that do not grow text, no ``set`` chain
that doubles a string) and its output is short; otherwise :class:`TemplateRefused` (a sentence).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from lmviz.limits import SaidError

MAX_TEMPLATE_CHARS = 16_384     # a chat template longer than this is not rendered
MAX_PROMPT_CHARS = 4_096        # nor one whose output for one short question is longer
MAX_NEW_TOKENS = 24             # the longest answer generated (a bounded demo, not a chat)
SENTINEL = "\x00lmviz-message\x00"   # the message the end-of-turn probe renders (no template writes it)


class TemplateRefused(SaidError, ValueError):
    """A chat template lmviz does not render; ``key`` says why in the page's language."""


BIG = 10_000         # the largest number a template may write or compute (a width, a count)
# the filters a chat template may use: none of them makes a string much longer than its input
FILTERS = frozenset({"trim", "upper", "lower", "capitalize", "title", "length", "count", "string", "first", "last",
                     "default", "d", "join", "list", "items", "selectattr", "rejectattr", "map", "select", "reject",
                     "tojson", "escape", "e", "safe", "int", "float", "abs", "round", "unique", "sort", "reverse",
                     "dictsort", "attr", "striptags", "min", "max", "sum", "bool"})
# string methods that may grow a string far past its length (a width or a repetition)
GROWING = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs", "replace", "format", "format_map", "join"})


def _checked(template: str):
    """The parsed template, or TemplateRefused. What it may do is bounded by its own length:
    no macro, call block or import; each loop a single pass over a name (``messages``) or its
    item, never nested nor recursive, never over a range; no number above BIG written or computed;
    only FILTERS; no GROWING string method; no ``set`` that grows a value another ``set`` made
    (a chain of ``set b = a ~ a`` doubles at each step); no ``*`` or ``**`` on strings or lists,
    and no ``+`` that makes a string longer than MAX_PROMPT_CHARS."""
    from jinja2 import nodes
    from jinja2.exceptions import TemplateSyntaxError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    if not isinstance(template, str) or not template.strip():
        raise TemplateRefused("bey.chat_err_none")
    if len(template) > MAX_TEMPLATE_CHARS:
        raise TemplateRefused("bey.chat_err_long", n=len(template), limit=MAX_TEMPLATE_CHARS)

    def refuse(*_args, **_kwargs):
        raise TemplateRefused("bey.chat_err_shape")

    class Bounded(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "+", "-", "%", "/", "//"})

        def call_binop(self, context, operator, left, right):
            numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (left, right))
            if operator != "+" and not numbers:
                refuse()                                   # "ab" * 9999, "%99999s" % x: strings that grow
            if operator == "**" and (abs(left) > BIG or abs(right) > 64):
                refuse()
            out = super().call_binop(context, operator, left, right)
            if isinstance(out, (int, float)) and abs(out) > BIG:
                refuse()
            if isinstance(out, (str, list, tuple)) and len(out) > MAX_PROMPT_CHARS:
                raise TemplateRefused("bey.chat_err_long", n=len(out), limit=MAX_PROMPT_CHARS)
            return out

        def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 - jinja2's own signature
            if getattr(__obj, "__name__", "") in GROWING and isinstance(getattr(__obj, "__self__", None), str) or \
                    any(isinstance(a, (int, float)) and abs(a) > BIG for a in (*args, *kwargs.values())):
                refuse()
            return super().call(__context, __obj, *args, **kwargs)

    env = Bounded(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    for name in ("range", "lipsum", "cycler", "joiner"):       # what could loop or write text of its own
        env.globals.pop(name, None)

    def raise_exception(message=""):              # what transformers gives a template to refuse a conversation
        raise TemplateRefused("bey.chat_err_render")

    env.globals["raise_exception"] = raise_exception
    try:
        ast = env.parse(template)
    except (TemplateSyntaxError, RecursionError):
        raise TemplateRefused("bey.chat_err_syntax") from None
    if any(True for _ in ast.find_all((nodes.Macro, nodes.CallBlock, nodes.Extends, nodes.Include, nodes.Import,
                                       nodes.FromImport, nodes.FilterBlock))):
        refuse()
    for loop in ast.find_all(nodes.For):
        if loop.recursive or any(True for _ in loop.find_all(nodes.For)) or \
                not isinstance(loop.iter, (nodes.Name, nodes.Getattr, nodes.Getitem)):
            refuse()
    for c in ast.find_all(nodes.Const):
        if isinstance(c.value, (int, float)) and not isinstance(c.value, bool) and abs(c.value) > BIG:
            refuse()
    for f in ast.find_all(nodes.Filter):
        if f.name not in FILTERS:
            refuse()
    sets = [*ast.find_all(nodes.Assign), *ast.find_all(nodes.AssignBlock)]
    made = {n.name for a in sets for n in (a.target, *a.target.find_all((nodes.Name, nodes.NSRef)))
            if isinstance(n, (nodes.Name, nodes.NSRef))}
    for a in sets:
        value = a.node if isinstance(a, nodes.Assign) else nodes.Output(a.body)
        grows = isinstance(a, nodes.AssignBlock) or isinstance(value, (nodes.Concat, nodes.Add, nodes.Mul)) or \
            any(True for _ in value.find_all((nodes.Concat, nodes.Add, nodes.Mul)))
        if grows and any(n.name in made for n in (value, *value.find_all(nodes.Name)) if isinstance(n, nodes.Name)):
            refuse()
    return env.from_string(template)


def templated(template: str, question: str, bos: str = "", eos: str = "") -> str:
    """The text of a one-question conversation in ``template`` with the assistant's turn opened
    (``add_generation_prompt``), as transformers' ``apply_chat_template`` renders it.

    >>> templated("{% for m in messages %}<|user|>{{ m['content'] }}<|end|>{% endfor %}"
    ...           "{% if add_generation_prompt %}<|assistant|>{% endif %}", "Hi?")
    '<|user|>Hi?<|end|><|assistant|>'
    """
    from jinja2.exceptions import TemplateError

    tpl = _checked(template)
    try:
        out = tpl.render(messages=[{"role": "user", "content": question}], add_generation_prompt=True,
                         bos_token=bos, eos_token=eos)
    except TemplateRefused:
        raise
    except (TemplateError, TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError,
            OverflowError, MemoryError):
        raise TemplateRefused("bey.chat_err_render") from None
    if len(out) > MAX_PROMPT_CHARS:
        raise TemplateRefused("bey.chat_err_long", n=len(out), limit=MAX_PROMPT_CHARS)
    return out


def end_of_turn(template: str, special: dict[str, int]) -> int | None:
    """The id of the special token the template writes right after a message's text (its
    end-of-turn token, SmolLM2's ``<|im_end|>``), None when none follows it.

    >>> end_of_turn("{% for m in messages %}<|u|>{{ m['content'] }}<|end|>\\n{% endfor %}", {"<|end|>": 7})
    7
    """
    text = templated(template, SENTINEL)
    at = text.find(SENTINEL)
    if at < 0:
        return None
    after = text[at + len(SENTINEL):]
    hits = [c for c in special if after.startswith(c)]
    return special[max(hits, key=len)] if hits else None


def stop_ids(meta: dict, special: dict[str, int] | None) -> tuple[int, ...]:
    """The ids that end a model's text, from its own records: its end-of-sequence id and the
    end-of-turn token its chat template writes after a message (SmolLM2: both ``<|im_end|>``, id
    2). () for a model whose records name neither (the shipped character model). A template lmviz
    does not render leaves only the eos.

    >>> stop_ids({"eos_token_id": 7, "chat_template": "{% for m in messages %}{{ m['content'] }}<|e|>{% endfor %}"},
    ...          {"<|e|>": 5})
    (5, 7)
    >>> stop_ids({}, None)
    ()
    """
    out = set()
    eos = meta.get("eos_token_id")
    if isinstance(eos, int) and not isinstance(eos, bool) and eos >= 0:
        out.add(eos)
    template = meta.get("chat_template")
    if template and isinstance(special, dict) and special:
        try:
            eot = end_of_turn(template, special)
        except TemplateRefused:
            eot = None
        if eot is not None:
            out.add(eot)
    return tuple(sorted(out))


@dataclass(frozen=True)
class ChatAnswer:
    prompt_ids: tuple[int, ...]   # what the model read
    answer_ids: tuple[int, ...]   # its greedy answer, the stop token included when it wrote one
    first_prob: float             # the probability of the answer's first token (softmax at τ = 1)
    stopped: bool                 # True when it ended at a stop token, False when cut at max_new


def cached_step(model, max_len: int):
    """A ``step_fn`` for :func:`lmviz.sampling.generate` that reads only the new ids each call,
    through one KV cache (prefill once, then one token a step)."""
    from lmviz.kv_cache import KVCache

    cache = KVCache.for_model(model, batch=1, max_len=max_len)
    seen: list[int] = []

    @torch.no_grad()
    def step(ids: list[int]) -> torch.Tensor:
        if ids[:len(seen)] != seen:
            raise ValueError("cached_step follows one growing sequence")
        new = ids[len(seen):]
        logits = model.forward_cached(torch.tensor([new], dtype=torch.long, device=model.device), cache)[0, -1]
        seen.extend(new)
        return logits.float().cpu()

    return step


def greedy_answer(model, prompt_ids, stop_ids=(), max_new: int = MAX_NEW_TOKENS, cancel=None,
                  on_token=None) -> ChatAnswer:
    """The model's greedy continuation of ``prompt_ids``: at most ``max_new`` tokens, ended after
    a token of ``stop_ids``. ``on_token(k)`` is told after each token; ``cancel`` asked before each.

    >>> from lmviz.model import GPT, GPTConfig
    >>> m = GPT(GPTConfig(vocab_size=7, block_size=16, n_layer=1, n_head=1, n_kv_head=1, d_model=8)).eval()
    >>> a = greedy_answer(m, [1, 2], max_new=3)
    >>> len(a.answer_ids), a.stopped, 0 < a.first_prob <= 1
    (3, False, True)
    """
    from lmviz.sampling import generate

    prompt = [int(i) for i in prompt_ids]
    n = max(0, min(int(max_new), model.cfg.block_size - len(prompt)))
    out, first = [], 0.0
    step = cached_step(model, len(prompt) + n)
    for s in generate(step, prompt, n, torch.Generator(), temperature=0, stop_ids=tuple(stop_ids), cancel=cancel):
        if not out:
            first = s.prob_raw
        out.append(s.token)
        if on_token is not None:
            on_token(len(out))
    return ChatAnswer(tuple(prompt), tuple(out), round(float(first), 6), bool(out) and out[-1] in set(stop_ids))


def both_answers(model, plain_ids, chat_ids, stop_ids=(), max_new: int = MAX_NEW_TOKENS, cancel=None,
                 progress=None) -> tuple[ChatAnswer, ChatAnswer]:
    """The same question answered greedily as plain text (``plain_ids``) and inside the chat
    template (``chat_ids``); ``progress(done, total)`` counts the tokens of both (2 * max_new)."""
    tell = (lambda base: (lambda k: progress(base + k, 2 * max_new))) if progress is not None else (lambda base: None)
    plain = greedy_answer(model, plain_ids, stop_ids, max_new, cancel, tell(0))
    chat = greedy_answer(model, chat_ids, stop_ids, max_new, cancel, tell(max_new))
    return plain, chat
