"""Copy KaTeX (the maths typesetter) into assets/katex/, for the HTML hand-outs.

    python scripts/fetch_katex.py [--tarball katex-0.16.22.tgz]

Runs ``npm pack katex@VERSION`` (the npm registry, once; or ``--tarball`` with one fetched
before) and keeps what a hand-out needs to render formulas offline: ``katex.min.js``,
``katex.min.css``, the ``.woff2`` fonts and the licence (MIT). The app never loads these files
in the browser: ``ui.render.export_html`` inlines them (fonts as data URIs) into a hand-out that
has a formula, so the file works from ``file://`` with no network.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

VERSION = "0.16.22"
OUT = Path(__file__).resolve().parent.parent / "assets" / "katex"
KEEP = ("package/dist/katex.min.js", "package/dist/katex.min.css", "package/LICENSE")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tarball", type=Path, help="a katex-VERSION.tgz fetched before")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tgz = a.tarball
        if tgz is None:
            subprocess.run(["npm", "pack", f"katex@{VERSION}"], cwd=tmp, check=True, capture_output=True)
            tgz = Path(tmp) / f"katex-{VERSION}.tgz"
        if OUT.exists():
            shutil.rmtree(OUT)
        (OUT / "fonts").mkdir(parents=True)
        with tarfile.open(tgz) as tar:
            for m in tar.getmembers():
                keep = m.name in KEEP or (m.name.startswith("package/dist/fonts/") and m.name.endswith(".woff2"))
                if keep and m.isfile():
                    dest = OUT / ("fonts" if "/fonts/" in m.name else "") / Path(m.name).name
                    dest.write_bytes(tar.extractfile(m).read())
    (OUT / "VERSION").write_text(VERSION + "\n")
    n = len(list((OUT / "fonts").glob("*.woff2")))
    print(f"wrote {OUT}: katex {VERSION}, {n} fonts, {sum(p.stat().st_size for p in OUT.rglob('*') if p.is_file()):,} bytes")


if __name__ == "__main__":
    main()
