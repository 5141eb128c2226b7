"""Write assets/favicon.png, the browser-tab icon (drawn here: no icon font, no CDN).

    python scripts/make_favicon.py

A 64 x 64 picture of a causal attention pattern: a lower triangle of cells in lmviz's accent
colour, strongest on the diagonal. Pillow comes with Streamlit.
"""
from pathlib import Path

from PIL import Image, ImageDraw

OUT = Path(__file__).resolve().parent.parent / "assets" / "favicon.png"
N, CELL, PAD = 6, 9, 5
ACCENT = (196, 40, 71)


def main() -> None:
    img = Image.new("RGBA", (64, 64), (255, 255, 255, 0))
    d = ImageDraw.Draw(img)
    d.rounded_rectangle((0, 0, 63, 63), radius=12, fill=(255, 255, 255, 255))
    for q in range(N):
        for k in range(q + 1):
            a = 255 if k == q else 90 + 20 * k          # the diagonal strongest
            x, y = PAD + k * CELL, PAD + q * CELL
            d.rectangle((x, y, x + CELL - 2, y + CELL - 2), fill=ACCENT + (a,))
    img.save(OUT, optimize=True)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
