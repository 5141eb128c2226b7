"""Be the language model: the room guesses the next token, and the generation chapter's own
measures compare the room with the model.

The lecturer picks a prompt; the model's most probable next tokens (at the lecture's
temperature) become the choices, plus "another token" for everything else. Each student picks
one. From the counts and the model's probabilities this module computes what the chapter teaches:

- the room's distribution over the choices, beside the model's (the model's mass on every other
  token is its "other");
- the room's entropy H(room) and the model's H(model) on the same choices, in bits;
- the model's cross-entropy on the room's answers, H(room, model) = −Σ room · log2 model: how
  many bits of surprise, per answer, the model pays for what the room said. The model's
  probabilities reach the room in thousandths (the option ids), so a choice the model all but
  ruled out arrives as 0.000, and a room that picks it would make the sum infinite: such a
  probability is counted at ``FLOOR`` (half a thousandth) and the choices it was applied to are
  named (``RoomVsModel.floored``), for the page to say so;
- the room's cross-entropy on the model, H(model, room⁺) with the room smoothed by add-one
  (a choice nobody picked would otherwise cost infinitely many bits);
- which choices the room ranks high and the model low, and the other way round;
- over several prompts of one sentence: the room's perplexity on the sentence's real next
  tokens against the model's.

Pure functions over counts and probabilities (torch only to take the model's softmax); every
result is a frozen record. Nothing here knows about Streamlit or the class store.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import torch

from lmviz.sampling import softmax_t

OTHER = "other"          # the option id of "another token" (every token not among the choices)
MAX_CHOICES = 8          # the model's top tokens offered as choices (the store allows 12 options)
FEW_ANSWERS = 10         # fewer answers than this: the room's numbers are flagged as weak evidence
SMOOTHING = 1.0          # add-one: the room's share used where a log of it is taken
GAP = 0.15               # a share this much above (below) the model's probability: the room "finds" it
FLOOR = 0.0005           # the model's probability counted for a choice shown as 0.000 (below half a
                         # thousandth) in the model's cross-entropy on the room's answers


QUESTION_PREFIX = "room."  # class-store question ids of this activity (never a lmviz.chapters.questions id)
OPTION_LEN = 32          # the class store's longest option id
QUESTION_LEN = 64        # ... and question id


def _hex_tail(text: str, max_bytes: int, keep: str = "start") -> str:
    """``text`` as hex UTF-8, cut to at most ``max_bytes`` bytes at a character boundary (its
    start kept, or its end with ``keep="end"``)."""
    out = b""
    chars = text if keep == "start" else reversed(text)
    for ch in chars:
        b = ch.encode("utf-8")
        if len(out) + len(b) > max_bytes:
            break
        out = out + b if keep == "start" else b + out
    return out.hex()


def _unhex(h: str) -> str | None:
    try:
        return bytes.fromhex(h).decode("utf-8")
    except ValueError:
        return None


def option_id(token_id: int, text: str, prob: float) -> str:
    """A choice as a class-store option id, ``t<id>.<permille>.<hex of the text>``: the option
    carries the token's text and the model's probability, so every follower draws the lecturer's
    choices and numbers whatever model its own session holds (only ``[a-z0-9_.-]``, at most 32
    characters: a long token's text is cut).

    >>> o = option_id(57, "学", 0.4243)
    >>> o, parse_option(o), parse_option(OTHER), parse_option("t1.x.zz")
    ('t57.424.e5ada6', (57, 0.424, '学'), None, None)
    """
    head = f"t{int(token_id)}.{min(1000, max(0, round(float(prob) * 1000)))}."
    return head + _hex_tail(text, (OPTION_LEN - len(head)) // 2)


def parse_option(option: object) -> tuple[int, float, str] | None:
    """(token id, probability, text) of an option id made by :func:`option_id`; None for
    ``other`` and for anything malformed."""
    if not isinstance(option, str) or len(option) > OPTION_LEN or option[:1] != "t":
        return None
    parts = option[1:].split(".")
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    text = _unhex(parts[2])
    if text is None or int(parts[1]) > 1000:
        return None
    return int(parts[0]), int(parts[1]) / 1000, text


def question_id(prompt: str, temperature: float) -> str:
    """The class-store question id of one prompt at one τ: ``room.<τ·100>.<cut>.<hex of the
    prompt's end>`` (the end is what the next token follows; ``cut`` 1 when the start did not fit
    in the id's 64 characters).

    >>> q = question_id("我喜欢学", 1.0)
    >>> q, parse_question(q), parse_question("gen_greedy")
    ('room.100.0.e68891e5969ce6aca2e5ada6', ('我喜欢学', 1.0), None)
    >>> parse_question(question_id("白日依山尽，黄河入海流", 0.8))
    ('…依山尽，黄河入海流', 0.8)
    """
    head = f"{QUESTION_PREFIX}{min(9999, max(0, round(float(temperature) * 100)))}."
    tail = _hex_tail(prompt, (QUESTION_LEN - len(head) - 2) // 2, keep="end")
    return f"{head}{int(len(tail) < 2 * len(prompt.encode('utf-8')))}.{tail}"


def parse_question(qid: object) -> tuple[str, float] | None:
    """(the prompt's end, "…" before it when its start was cut; τ) of a question id made by
    :func:`question_id`, else None."""
    if not isinstance(qid, str) or not qid.startswith(QUESTION_PREFIX) or len(qid) > QUESTION_LEN:
        return None
    parts = qid[len(QUESTION_PREFIX):].split(".")
    if len(parts) != 3 or not parts[0].isdigit() or parts[1] not in ("0", "1"):
        return None
    text = _unhex(parts[2])
    return None if text is None else ("…" * int(parts[1]) + text, int(parts[0]) / 100)


@dataclass(frozen=True)
class Choices:
    """The model's most probable next tokens for one prompt: what the room chooses among."""
    token_ids: tuple[int, ...]   # the top tokens, most probable first
    probs: tuple[float, ...]     # their probabilities under the whole vocabulary's softmax at τ
    other: float                 # 1 − sum(probs): the model's mass on every other token
    temperature: float           # τ the probabilities were taken at
    texts: tuple[str, ...] = ()  # the tokens' texts (what a student reads); "" when not given

    @property
    def options(self) -> tuple[str, ...]:
        """The option ids, in order: the tokens, then ``other``."""
        texts = self.texts or ("",) * len(self.token_ids)
        return tuple(option_id(i, s, p) for i, s, p in zip(self.token_ids, texts, self.probs)) + (OTHER,)

    @property
    def model(self) -> tuple[float, ...]:
        """The model's probability per option (``other`` last)."""
        return self.probs + (self.other,)


def choices(logits, temperature: float = 1.0, n: int = 6, text_of=None) -> Choices:
    """The ``n`` most probable next tokens of ``logits`` (V,) at ``temperature``; ``text_of``
    (token id -> str) names them.

    >>> c = choices(torch.tensor([2.0, 1.0, -1.0, 0.0]), 1.0, n=2, text_of="abcd".__getitem__)
    >>> c.token_ids, c.texts, [round(p, 3) for p in c.model]
    ((0, 1), ('a', 'b'), [0.644, 0.237, 0.119])
    """
    n = max(1, min(int(n), MAX_CHOICES - 1, int(torch.as_tensor(logits).numel()) - 1))
    p = softmax_t(torch.as_tensor(logits, dtype=torch.float64), max(float(temperature), 1e-6))
    top = torch.topk(p, n)
    ids = tuple(int(i) for i in top.indices)
    probs = tuple(float(x) for x in top.values)
    return Choices(ids, probs, max(0.0, 1.0 - sum(probs)), float(temperature),
                   tuple(str(text_of(i)) for i in ids) if text_of else ())


def from_options(options: Sequence[str], temperature: float) -> Choices | None:
    """The :class:`Choices` a question's option ids carry (the probabilities as rounded to
    permille there): what the lecturer's projector and every follower compute from. None when
    the options are not this activity's.

    >>> ch = choices(torch.tensor([2.0, 1.0, -1.0, 0.0]), 1.0, n=2, text_of="abcd".__getitem__)
    >>> back = from_options(ch.options, 1.0)
    >>> back.token_ids, back.texts, back.probs, round(back.other, 3)
    ((0, 1), ('a', 'b'), (0.644, 0.237), 0.119)
    """
    opts = list(options)
    if len(opts) < 2 or opts[-1] != OTHER:
        return None
    parsed = [parse_option(o) for o in opts[:-1]]
    if any(p is None for p in parsed):
        return None
    probs = tuple(p[1] for p in parsed)
    # "other" in thousandths too (1 − a sum of thousandths is not exactly one in floating point:
    # 2e-16 would cost 52 bits as if it were a probability)
    return Choices(tuple(p[0] for p in parsed), probs, max(0.0, round(1.0 - sum(probs), 3)),
                   float(temperature), tuple(p[2] for p in parsed))


def _bits(p: float) -> float:
    return -math.log2(p) if p > 0 else math.inf


def entropy_bits(dist: Sequence[float]) -> float:
    """H(dist) in bits (0 · log 0 = 0).

    >>> entropy_bits([0.5, 0.5]), entropy_bits([1.0, 0.0])
    (1.0, 0.0)
    """
    return float(sum(p * _bits(p) for p in dist if p > 0))


def cross_entropy_bits(truth: Sequence[float], model: Sequence[float]) -> float:
    """H(truth, model) = −Σ truth · log2 model, in bits (infinite where model is 0 and truth is not).

    >>> cross_entropy_bits([1.0, 0.0], [0.5, 0.5])
    1.0
    """
    return float(sum(t * _bits(m) for t, m in zip(truth, model) if t > 0))


def smoothed(counts: Sequence[int], alpha: float = SMOOTHING) -> tuple[float, ...]:
    """Counts as shares with ``alpha`` added to each (add-one by default): no share is 0.

    >>> smoothed([3, 0, 1])
    (0.5714285714285714, 0.14285714285714285, 0.2857142857142857)
    """
    total = sum(counts) + alpha * len(counts)
    return tuple((c + alpha) / total for c in counts)


@dataclass(frozen=True)
class RoomVsModel:
    """The room's guesses for one prompt beside the model's distribution."""
    options: tuple[str, ...]        # option ids: the model's choices, then ``other``
    counts: tuple[int, ...]         # answers per option
    room: tuple[float, ...]         # the room's share per option (counts / n; zeros when n = 0)
    model: tuple[float, ...]        # the model's probability per option (``other`` = the rest)
    n: int                          # answers counted
    room_entropy: float             # H(room), bits
    model_entropy: float            # H(model) over the same options, bits
    model_on_room: float            # H(room, model): the model's bits of surprise per room answer,
                                    # a probability below FLOOR counted as FLOOR (NaN when n = 0)
    floored: tuple[str, ...]        # options the room picked that the model gave less than FLOOR
    room_on_model: float            # H(model, room smoothed add-one), bits
    room_tops: tuple[str, ...]      # the options with the most answers (several: a tie; none when
                                    # nobody answered)
    model_top: str                  # the model's most probable option
    room_finds: tuple[str, ...]     # options the room picked more often than the model's probability
                                    # by at least ``gap``, most underrated first
    model_finds: tuple[str, ...]    # options the model rates higher than the room by ``gap``
    weak: bool                      # fewer than FEW_ANSWERS answers: the room's numbers are noisy


def compare(ch: Choices, counts: Mapping[str, int], gap: float = GAP) -> RoomVsModel:
    """The room (``counts``: option id -> answers; unknown ids are ignored) against the model.

    >>> ch = Choices((5, 9), (0.6, 0.3), 0.1, 1.0)
    >>> a, b, o = ch.options
    >>> r = compare(ch, {a: 2, b: 6, o: 2})
    >>> r.room, r.room_tops == (b,), r.model_top == a, r.room_finds == (b,), r.model_finds == (a,)
    ((0.2, 0.6, 0.2), True, True, True, True)
    >>> round(r.model_on_room, 3), r.floored, r.weak
    (1.854, (), False)
    >>> z = compare(Choices((5, 9), (0.6, 0.4), 0.0, 1.0), {o: 1, a: 1})
    >>> z.floored == (o,), round(z.model_on_room, 3), z.room_tops == (a, o)
    (True, 5.851, True)
    """
    opts = ch.options
    cnt = tuple(max(0, int(counts.get(o, 0))) for o in opts)
    n = sum(cnt)
    room = tuple(c / n for c in cnt) if n else tuple(0.0 for _ in cnt)
    model = ch.model
    top = max(cnt)
    diff = [r - m for r, m in zip(room, model)]
    room_finds = tuple(opts[i] for i in sorted(range(len(opts)), key=lambda i: -diff[i])
                       if n and diff[i] >= gap)
    model_finds = tuple(opts[i] for i in sorted(range(len(opts)), key=lambda i: diff[i])
                        if n and -diff[i] >= gap)
    return RoomVsModel(
        options=opts, counts=cnt, room=room, model=model, n=n,
        room_entropy=entropy_bits(room), model_entropy=entropy_bits(model),
        model_on_room=cross_entropy_bits(room, [max(m, FLOOR) for m in model]) if n else math.nan,
        floored=tuple(o for o, c, m in zip(opts, cnt, model) if c and m < FLOOR),
        room_on_model=cross_entropy_bits(model, smoothed(cnt)),
        room_tops=tuple(o for o, c in zip(opts, cnt) if n and c == top),
        model_top=opts[max(range(len(opts)), key=lambda i: model[i])],
        room_finds=room_finds, model_finds=model_finds, weak=n < FEW_ANSWERS)


@dataclass(frozen=True)
class SentenceScore:
    """The room and the model on the real next tokens of one sentence, prompt by prompt."""
    room_p: tuple[float, ...]       # the room's (add-one smoothed) share on each real next token
    model_p: tuple[float, ...]      # the model's probability of each real next token
    room_perplexity: float          # 2 ** mean(−log2 room_p)
    model_perplexity: float         # 2 ** mean(−log2 model_p)
    answers: tuple[int, ...]        # answers behind each step
    weak: bool                      # a step had fewer than FEW_ANSWERS answers


def sentence_score(steps: Sequence[tuple[RoomVsModel, str, float]]) -> SentenceScore:
    """Perplexity of the room and of the model on a sentence. Each step: the room at one prompt,
    the option id of the token that really comes next (``other`` when it was not a choice), and
    the model's probability of that token.

    >>> ch = Choices((1, 2), (0.5, 0.25), 0.25, 1.0)
    >>> a, b, _ = ch.options
    >>> s = sentence_score([(compare(ch, {a: 9, b: 1}), a, 0.5), (compare(ch, {b: 4}), b, 0.25)])
    >>> [round(p, 3) for p in s.room_p], s.model_perplexity, round(s.room_perplexity, 3), s.weak
    ([0.769, 0.714], 2.8284271247461903, 1.349, True)
    """
    if not steps:
        raise ValueError("a sentence needs at least one prompt")
    room_p, model_p = [], []
    for r, actual, p_model in steps:
        share = smoothed(r.counts)
        room_p.append(share[r.options.index(actual)] if actual in r.options else share[-1])
        model_p.append(float(p_model))

    def ppl(ps):
        return float(2 ** (sum(_bits(p) for p in ps) / len(ps)))

    answers = tuple(r.n for r, _, _ in steps)
    return SentenceScore(tuple(room_p), tuple(model_p), ppl(room_p), ppl(model_p), answers,
                         any(a < FEW_ANSWERS for a in answers))


# ------------------------------------------------------------------ the default question -----
OPEN_CHOICES = 6     # the choices the page offers (its default n): the ones an open question is judged on


@dataclass(frozen=True)
class OpenQuestion:
    pos: int               # tokens of the sentence the room sees (1 .. len(ids) - 1)
    entropy_bits: float    # H of the model's probabilities over the choices there (other included)
    chosen: bool           # False: no position qualified, the last one is kept


def of_language(text: str, lang: str) -> bool:
    """Whether a token's text is a word or character of the page's language: Chinese characters
    on a Chinese page, letters on an English one (a leading space allowed).

    >>> of_language("河", "zh"), of_language("p", "zh"), of_language(" the", "en"), of_language("。", "zh")
    (True, False, True, False)
    """
    s = text.strip()
    if not s:
        return False
    if lang == "zh":
        return all("\u4e00" <= ch <= "\u9fff" for ch in s)
    return s.isascii() and s.isalpha()


def open_question(model, ids: Sequence[int], text_of, lang: str, temperature: float = 1.0) -> OpenQuestion:
    """Where in ``ids`` (a sentence the room reads) the room's question is a real one: every one
    of the model's top choices a word or character of the page's language, the sentence's own
    next token among them (the reveal has an answer to show), and, of those positions, the one
    whose choices spread the model's probability most. The last position when none qualifies
    (a sentence near-certain everywhere, or tokens that are not the page's words)."""
    ids = [int(i) for i in ids]
    last = len(ids) - 1
    with torch.no_grad():
        x = torch.as_tensor(ids[:-1][-model.cfg.block_size:], dtype=torch.long, device=model.device)
        logits = model(x[None])[0][0].float().cpu()          # [T, V]: row p - 1 predicts ids[p]
    finite = torch.isfinite(logits).all(-1)                  # a broken model's rows: no question there
    best: OpenQuestion | None = None
    for pos in range(1, last + 1):
        if not finite[pos - 1]:
            continue
        ch = choices(logits[pos - 1], temperature, OPEN_CHOICES, text_of)
        if ids[pos] not in ch.token_ids or not all(of_language(s, lang) for s in ch.texts):
            continue
        h = entropy_bits(ch.model)
        if best is None or h >= best.entropy_bits:
            best = OpenQuestion(pos, h, True)
    if best is not None:
        return best
    h = entropy_bits(choices(logits[last - 1], temperature, OPEN_CHOICES).model) if finite[last - 1] else 0.0
    return OpenQuestion(last, h, False)
