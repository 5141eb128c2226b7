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

Usage:
    .venv/bin/python scripts/make_corpora.py            # writes both files
    .venv/bin/python scripts/make_corpora.py --check    # prints sizes, writes nothing
"""
from __future__ import annotations

import argparse
import ast
import re
import sysconfig
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="print sizes, write nothing")
    args = ap.parse_args()
    for build in (build_english, build_code):
        text, stats = build()
        if not args.check:
            OUT_DIR.mkdir(parents=True, exist_ok=True)
            (ROOT / stats.path).write_text(text, encoding="utf-8")
        print(f"{stats.path}: {stats.n_bytes:,} bytes, {stats.n_units} units, "
              f"{len(stats.sources)} source files")


if __name__ == "__main__":
    main()
