"""Build assets/corpora/english.txt and assets/corpora/code.txt from CPython's standard library.

Both corpora come from the Python standard library that ships with the interpreter running this
script (we built them with CPython 3.11.7). The standard library is (c) Python Software
Foundation, released under the PSF License Agreement (https://docs.python.org/3/license.html);
see assets/README.md.

english.txt: module / class / function docstrings of a fixed list of modules, found by walking
each file's syntax tree with `ast` (no module is imported), split into paragraphs, whitespace
normalised, and kept only when a paragraph reads as plain-ASCII prose: no doctest lines (`>>>`),
no tables, no parameter lists or code-looking lines, a capital at the start and a full stop at the
end. Exact duplicates are dropped. The output is deterministic for a given Python version.

code.txt: the source of a fixed list of small pure-Python modules, comments kept, concatenated
with a one-line header per file.

poetry.txt.gz + poetry.json: Tang poems in the regular forms (五言/七言 绝句 and 律诗), in
simplified characters, from the npm package chinese-poetry 2.0.1 (MIT licence, fetched with
`npm pack`, the only step that needs the network). See `build_poetry` for the steps and
assets/README.md for the numbers. Needs OpenCC (PyPI `opencc` 1.4.x) for traditional ->
simplified: a dependency of this script only, not of the app (`pip install 'opencc>=1.4,<1.5'`).

Usage:
    .venv/bin/python scripts/make_corpora.py            # writes all corpora
    .venv/bin/python scripts/make_corpora.py --only poetry --tarball /tmp/chinese-poetry-2.0.1.tgz
    .venv/bin/python scripts/make_corpora.py --check    # prints sizes, writes nothing
"""
from __future__ import annotations

import argparse
import ast
import collections
import gzip
import io
import json
import random
import re
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "assets" / "corpora"
STDLIB = Path(sysconfig.get_paths()["stdlib"])

# Modules whose docstrings make up english.txt, in this order (paths relative to the stdlib).
# Chosen for long, explanatory docstrings; modules missing in some Python version are skipped.
PROSE_MODULES = [
    "argparse.py", "optparse.py", "textwrap.py", "string.py", "functools.py",
    "collections/__init__.py", "heapq.py", "bisect.py", "random.py", "statistics.py",
    "fractions.py", "_pydecimal.py", "datetime.py", "calendar.py", "os.py", "pathlib.py",
    "shutil.py", "tempfile.py", "glob.py", "fnmatch.py", "filecmp.py", "fileinput.py",
    "subprocess.py", "threading.py", "queue.py", "sched.py", "selectors.py",
    "concurrent/futures/_base.py", "concurrent/futures/process.py",
    "concurrent/futures/thread.py", "multiprocessing/pool.py", "multiprocessing/managers.py",
    "multiprocessing/process.py", "asyncio/events.py", "asyncio/tasks.py",
    "asyncio/futures.py", "asyncio/streams.py", "asyncio/base_events.py", "asyncio/locks.py",
    "asyncio/queues.py", "asyncio/transports.py", "asyncio/protocols.py",
    "logging/__init__.py", "logging/handlers.py", "logging/config.py", "warnings.py",
    "traceback.py", "inspect.py", "typing.py", "abc.py", "enum.py", "dataclasses.py",
    "contextlib.py", "copy.py", "pickle.py", "shelve.py", "csv.py", "configparser.py",
    "json/__init__.py", "json/decoder.py", "json/encoder.py", "zipfile.py", "tarfile.py",
    "gzip.py", "bz2.py", "lzma.py", "socket.py", "socketserver.py", "ssl.py",
    "http/client.py", "http/server.py", "http/cookiejar.py", "http/cookies.py",
    "urllib/parse.py", "urllib/request.py", "urllib/robotparser.py", "smtplib.py",
    "ftplib.py", "imaplib.py", "poplib.py", "mailbox.py", "email/message.py",
    "email/feedparser.py", "email/utils.py", "email/header.py", "mimetypes.py",
    "xml/dom/minidom.py", "xml/etree/ElementTree.py", "xml/sax/handler.py",
    "sqlite3/__init__.py", "difflib.py", "pprint.py", "reprlib.py", "weakref.py",
    "numbers.py", "operator.py", "codecs.py", "locale.py", "gettext.py", "tokenize.py",
    "ast.py", "dis.py", "trace.py", "pdb.py", "bdb.py", "cmd.py", "shlex.py", "timeit.py",
    "profile.py", "pstats.py", "cProfile.py", "doctest.py", "unittest/case.py",
    "unittest/mock.py", "unittest/loader.py", "unittest/suite.py", "unittest/runner.py",
    "pydoc.py", "importlib/__init__.py", "importlib/abc.py", "importlib/_bootstrap.py",
    "importlib/_bootstrap_external.py", "pkgutil.py", "site.py", "sysconfig.py",
    "platform.py", "ipaddress.py", "uuid.py", "hmac.py", "secrets.py", "base64.py",
    "hashlib.py", "plistlib.py", "netrc.py", "wave.py", "colorsys.py", "turtle.py",
    "graphlib.py", "zoneinfo/_zoneinfo.py", "tracemalloc.py", "stat.py", "posixpath.py",
    "genericpath.py", "linecache.py", "types.py", "keyword.py", "getopt.py", "getpass.py",
    "webbrowser.py", "_pyio.py", "io.py", "codeop.py", "code.py", "runpy.py",
    "modulefinder.py", "compileall.py", "py_compile.py", "zipimport.py", "symtable.py",
]

# Small pure-Python modules whose source makes up code.txt, in this order.
CODE_MODULES = [
    "textwrap.py", "heapq.py", "bisect.py", "colorsys.py", "fnmatch.py", "glob.py",
    "shlex.py", "string.py", "queue.py", "graphlib.py", "reprlib.py", "copy.py",
    "numbers.py", "keyword.py", "fractions.py", "statistics.py", "sched.py", "netrc.py",
    "getopt.py", "linecache.py", "filecmp.py", "calendar.py", "dataclasses.py", "difflib.py",
]

ENGLISH_MAX_BYTES = 560_000  # stop adding paragraphs past this size (target 300-600 KB)
CODE_MAX_BYTES = 190_000  # stop adding files past this size (target 100-200 KB)
MIN_PARAGRAPH_CHARS = 40  # shorter paragraphs are mostly terse one-liners like "Return x."
MIN_WORDS = 7  # a prose paragraph has at least this many words


@dataclass(frozen=True)
class CorpusStats:
    path: str  # where the corpus was written
    n_bytes: int  # size in bytes (UTF-8)
    n_units: int  # paragraphs (english) or files (code)
    sources: tuple[str, ...]  # the stdlib files that contributed


def docstrings(source: str) -> list[str]:
    """Module, class and function docstrings of a source text, in file order.

    >>> docstrings("'''Mod.'''\\ndef f():\\n    '''Fun.'''\\n")
    ['Mod.', 'Fun.']
    """
    tree = ast.parse(source)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                out.append((getattr(node, "lineno", 0), doc))
    out.sort(key=lambda x: x[0])  # ast.walk is breadth-first; file order reads better
    return [d for _, d in out]


_CODEY = re.compile(
    r"(>>>|\.\.\.\s|::|==|!=|->|=>|\{|\}|\[|\]|`|\$|@|\\|#|~|\|"  # code / markup symbols
    r"|\w\(|\w_\w|\w\.\w+\(|<\w|\w>"  # calls, snake_case, attribute calls, tags
    r"|https?:|www\.|\.py\b|XXX|TODO|%|(?<!\w)/\w)"  # links, format strings, paths
)


def is_prose(par: str) -> bool:
    """True when a whitespace-normalised paragraph reads as plain English prose.

    >>> is_prose("Return a new list of the words in the string, using sep as the separator.")
    True
    >>> is_prose("Return f(x) for each x in the list, see foo_bar and the {name} field.")
    False
    """
    if len(par) < MIN_PARAGRAPH_CHARS or not par.isascii():
        return False
    if not (par[0].isupper() and par.endswith(".")):
        return False
    if _CODEY.search(par):
        return False
    words = par.split()
    if len(words) < MIN_WORDS:
        return False
    letters = sum(c.isalpha() or c in " ,.;:'\"-()?!" for c in par)
    if letters / len(par) < 0.95:  # numbers, tables, symbols
        return False
    # a run of Capitalised Words or ALL CAPS reads like a heading or a table row
    caps = sum(w.isupper() and len(w) > 1 for w in words)
    return caps / len(words) < 0.15


def paragraphs(doc: str) -> list[str]:
    """Split a cleaned docstring into whitespace-normalised paragraphs, dropping doctest,
    table, indented (code, parameter list) and underlined-heading lines.

    >>> paragraphs("Do a thing.\\n\\n>>> f()\\n1\\n\\nMore words here\\nand here.")
    ['Do a thing.', 'More words here and here.']
    """
    out = []
    for block in re.split(r"\n\s*\n", doc):
        lines = block.split("\n")
        if any(l.lstrip().startswith((">>>", "...")) for l in lines):
            continue  # a doctest block; its output lines are not prose either
        if any(re.fullmatch(r"\s*[-=~^*+]{3,}[-=~^*+ ]*", l) for l in lines):
            continue  # a table border or an underlined heading
        if any(l.startswith((" ", "\t")) for l in lines):
            continue  # indented: code, a parameter list or a definition list
        if any(re.search(r"\S {3,}\S", l) for l in lines):
            continue  # columns of a table
        text = " ".join(l.strip() for l in lines)
        text = re.sub(r"``?([^`]+)``?", r"\1", text)  # ``name`` / `name` -> name
        text = re.sub(r"(?<![\w*])\*{1,2}(\w[^*]*?)\*{1,2}(?![\w*])", r"\1", text)  # *arg* -> arg
        text = re.sub(r"\s+", " ", text).strip()
        if text:
            out.append(text)
    return out


def build_english(max_bytes: int = ENGLISH_MAX_BYTES) -> tuple[str, CorpusStats]:
    seen: set[str] = set()
    kept: list[str] = []
    sources: list[str] = []
    size = 0
    for rel in PROSE_MODULES:
        path = STDLIB / rel
        if not path.exists():
            continue
        n_before = len(kept)
        for doc in docstrings(path.read_text(encoding="utf-8")):
            for par in paragraphs(doc):
                if par in seen or not is_prose(par):
                    continue
                seen.add(par)
                kept.append(par)
                size += len(par) + 2
        if len(kept) > n_before:
            sources.append(rel)
        if size >= max_bytes:
            break
    text = "\n\n".join(kept) + "\n"
    return text, CorpusStats("assets/corpora/english.txt", len(text.encode()), len(kept), tuple(sources))


def build_code(max_bytes: int = CODE_MAX_BYTES) -> tuple[str, CorpusStats]:
    parts: list[str] = []
    sources: list[str] = []
    size = 0
    for rel in CODE_MODULES:
        path = STDLIB / rel
        if not path.exists():
            continue
        src = path.read_text(encoding="utf-8")
        if not src.isascii():  # keep the character set small for a char-level model
            continue
        src = src.replace("\t", "    ").rstrip() + "\n"
        chunk = f"# ==== Lib/{rel} (CPython, PSF License) ====\n{src}\n"
        if size + len(chunk) > max_bytes and parts:
            continue  # too big to fit; a smaller file later in the list may still fit
        parts.append(chunk)
        sources.append(rel)
        size += len(chunk)
    text = "".join(parts)
    return text, CorpusStats("assets/corpora/code.txt", len(text.encode()), len(parts), tuple(sources))


# ---- poetry (全唐诗, regular forms) ----------------------------------------------------------

POETRY_PACKAGE = "chinese-poetry@2.0.1"   # npm package; MIT licence (c) 2016 JackeyGao
POETRY_SEED = 2026                         # order of the poems and the held-out set
POETRY_HELDOUT_FRAC = 0.05                 # share of whole poems held out (the file's last poems)
VOCAB_COVERAGE = 0.995                     # the char vocabulary covers this share of the train text
UNK = "□"                                  # the unknown token (never occurs in the corpus)
LINE_PUNCT = "，。？！；"                   # a line of a poem ends with one of these
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_POEM_RE = re.compile(r"(?:[\u3400-\u4dbf\u4e00-\u9fff]+[，。？！；])+")
# where the app's own example sentences live: their characters join the vocabulary
# (the vocabulary is fixed by the shipped model's checkpoint; rebuilding after new characters
# appear in these files changes it, and tests/test_default_model.py then asks for a retrain)
APP_TEXT_GLOBS = ("assets/i18n/zh.json", "assets/examples/*.txt", "assets/docs/zh-*.md",
                  "assets/corpora/toy.txt", "chapters/*.py", "lmviz/*.py", "ui/*.py")
APP_TEXT_SKIP = ("lmviz/poetry.py",)   # describes the vocabulary; no sentence of it is model input


def regular_form(text: str) -> bool:
    """True for a 五言/七言 绝句 or 律诗: 4 or 8 lines, every line exactly 5 or 7 characters
    (the same length throughout), each line closed by ，。？！ or ；, the last by 。？ or ！, and
    nothing but Chinese characters inside the lines.

    >>> regular_form("床前明月光，疑是地上霜。举头望明月，低头思故乡。")
    True
    >>> regular_form("床前明月光，疑是地上霜。举头望明月，低头思故乡")   # unfinished
    False
    >>> regular_form("床前明月光，疑是地上霜。举头望明月，低头思故乡兮。")  # 5, 5, 5, 6
    False
    """
    if not _POEM_RE.fullmatch(text) or text[-1] not in "。？！":
        return False
    lines = re.split(f"[{LINE_PUNCT}]", text)[:-1]
    return len(lines) in (4, 8) and len({len(l) for l in lines}) == 1 and len(lines[0]) in (5, 7)


def fetch_package(tarball: str | None) -> Path:
    """The npm tarball: the given file, or `npm pack` into a temporary folder (network)."""
    if tarball:
        return Path(tarball)
    tmp = Path(tempfile.mkdtemp(prefix="chinese-poetry-"))
    subprocess.run(["npm", "pack", POETRY_PACKAGE, "--silent"], cwd=tmp, check=True,
                   stdout=subprocess.DEVNULL, timeout=600)
    (tgz,) = tmp.glob("*.tgz")
    return tgz


def read_json_members(tgz: Path, pattern: str):
    """(member name, parsed JSON) for each tarball member whose name matches pattern, sorted."""
    rx = re.compile(pattern)
    with tarfile.open(tgz, "r:gz") as tf:
        members = sorted((m for m in tf.getmembers() if rx.fullmatch(m.name)), key=lambda m: m.name)
        for m in members:
            yield m.name, json.load(tf.extractfile(m))


def app_characters() -> str:
    """Every character of the English corpus and of the app's own texts (catalogue, examples,
    passages, page sources), so the shipped model can read each sentence the app feeds it."""
    parts = [(OUT_DIR / "english.txt").read_text(encoding="utf-8")]
    for pat in APP_TEXT_GLOBS:
        for p in sorted(ROOT.glob(pat)):
            if str(p.relative_to(ROOT)) in APP_TEXT_SKIP:
                continue
            text = p.read_text(encoding="utf-8")
            if p.suffix == ".json":
                text = "".join(json.loads(text).values())
            parts.append(text)
    chars = set("".join(parts))
    # printable ASCII (tabs and line ends only as "\n"), Chinese characters and full-width punctuation
    keep = {c for c in chars if (" " <= c <= "~") or c == "\n" or _CJK.match(c)
            or "\u3000" <= c <= "\u303f" or "\uff00" <= c <= "\uffef"}
    keep.discard(UNK)
    return "".join(sorted(keep))


def coverage_vocab(text: str, coverage: float) -> tuple[list[str], float]:
    """(the most frequent characters whose counts cover >= coverage of text, the share covered);
    ties broken by code point so the list is deterministic.

    >>> coverage_vocab("aaaabbc", 0.8)
    (['a', 'b'], 0.8571428571428571)
    """
    counts = collections.Counter(text)
    total = sum(counts.values())
    kept, acc = [], 0
    for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if acc >= coverage * total:
            break
        kept.append(c)
        acc += n
    return kept, acc / total


def build_poetry(tarball: str | None = None) -> tuple[bytes, dict]:
    """Tang poems in the regular forms, simplified, de-duplicated, in a seeded order.

    1. `npm pack chinese-poetry@2.0.1`; read `dist/quantangshi/poet.tang.*.json` (57,607 poems).
    2. Join each poem's lines, convert traditional -> simplified with OpenCC `t2s`.
    3. Keep the regular forms (`regular_form`); drop titles and authors (one poem per line: a
       title is not in the 5/7 form, and the model should learn to write poems, not headings).
    4. De-duplicate on the characters alone (punctuation ignored), keep the first.
    5. Shuffle with POETRY_SEED; the last POETRY_HELDOUT_FRAC of the poems are held out. The file
       lists the poems in that order, so any tail of it is a random sample of whole poems.
    Song ci (`dist/songci/`) are read only for the report: their lines are of mixed lengths
    (that is the genre), so they are not in this corpus, whose point is the 5/7 form.
    """
    try:
        import opencc
    except ImportError:
        raise SystemExit("needs OpenCC: pip install 'opencc>=1.4,<1.5' (a script-only dependency)")
    cc = opencc.OpenCC("t2s")
    tgz = fetch_package(tarball)
    n_src, poems, seen = 0, [], set()
    for _, items in read_json_members(tgz, r"package/dist/quantangshi/poet\.tang\.\d+\.json"):
        for it in items:
            n_src += 1
            text = cc.convert("".join(it.get("paragraphs") or []).strip())
            text = re.sub(r"\s+", "", text)
            if not regular_form(text):
                continue
            key = re.sub(f"[{LINE_PUNCT}]", "", text)
            if key in seen:
                continue
            seen.add(key)
            poems.append(text)
    n_ci = sum(len(items) for _, items in read_json_members(tgz, r"package/dist/songci/ci\.song\.\d+\.json"))
    poems.sort()                                   # independent of file order, then a seeded shuffle
    random.Random(POETRY_SEED).shuffle(poems)
    n_val = round(len(poems) * POETRY_HELDOUT_FRAC)
    train, val = poems[:-n_val], poems[-n_val:]
    train_text = "\n".join(train) + "\n"
    vocab, covered = coverage_vocab(train_text, VOCAB_COVERAGE)
    extra = sorted(set(app_characters()) - set(vocab))
    chars = sorted(set(vocab) | set(extra)) + [UNK]
    counts = collections.Counter(train_text)
    total = sum(counts.values())
    # unigram entropy of the train text over this vocabulary (rare characters pooled into UNK)
    known = set(chars)
    pooled = collections.Counter({c: n for c, n in counts.items() if c in known})
    pooled[UNK] += sum(n for c, n in counts.items() if c not in known)
    import math
    h = -sum(n / total * math.log(n / total) for n in pooled.values() if n)
    text = "\n".join(poems) + "\n"
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as f:
        f.write(text.encode("utf-8"))
    forms = collections.Counter((len(re.split(f"[{LINE_PUNCT}]", p)) - 1, len(re.split(f"[{LINE_PUNCT}]", p)[0]))
                                for p in poems)
    stats = {
        "about": "Regular-form Tang poems (五言/七言 绝句 and 律诗) from chinese-poetry 2.0.1, "
                 "simplified with OpenCC t2s; one poem per line; the last n_heldout poems are held out.",
        "source": f"npm {POETRY_PACKAGE} dist/quantangshi/poet.tang.*.json",
        "licence": "MIT (c) 2016 JackeyGao; the poems themselves are public domain",
        "seed": POETRY_SEED,
        "source_poems": n_src,
        "songci_seen_not_used": n_ci,
        "n_poems": len(poems),
        "n_train": len(train),
        "n_heldout": n_val,
        "chars": len(text),
        "train_chars": len(train_text),
        "forms": {f"{n_lines}x{n}": k for (n_lines, n), k in sorted(forms.items())},
        "distinct_chars_train": len(counts),
        "vocab_coverage_target": VOCAB_COVERAGE,
        "vocab_coverage_chars": len(vocab),
        "vocab_coverage": covered,
        "vocab_extra_app_chars": len(extra),
        "vocab_size": len(chars),
        "chars_to_unk": len(set(counts) - known),
        "unk_share_train": pooled[UNK] / total,
        "unk": UNK,
        "unigram_entropy_nats": h,
        "vocab": "".join(chars),
    }
    return buf.getvalue(), stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="print sizes, write nothing")
    ap.add_argument("--only", choices=("english", "code", "poetry"), action="append",
                    help="build only these corpora (repeatable; default all)")
    ap.add_argument("--tarball", help="a chinese-poetry-2.0.1.tgz already fetched (skips npm pack)")
    args = ap.parse_args()
    only = set(args.only or ("english", "code", "poetry"))
    for name, build in (("english", build_english), ("code", build_code)):
        if name not in only:
            continue
        text, stats = build()
        if not args.check:
            OUT_DIR.mkdir(parents=True, exist_ok=True)
            (ROOT / stats.path).write_text(text, encoding="utf-8")
        print(f"{stats.path}: {stats.n_bytes:,} bytes, {stats.n_units} units, "
              f"{len(stats.sources)} source files")
    if "poetry" in only:
        blob, stats = build_poetry(args.tarball)
        if not args.check:
            (OUT_DIR / "poetry.txt.gz").write_bytes(blob)
            (OUT_DIR / "poetry.json").write_text(json.dumps(stats, ensure_ascii=False, indent=1) + "\n",
                                                 encoding="utf-8")
        print(f"assets/corpora/poetry.txt.gz: {len(blob):,} bytes; "
              + json.dumps({k: v for k, v in stats.items() if k != "vocab"}, ensure_ascii=False))


if __name__ == "__main__":
    main()
