"""Numbers on the charts are written in the page's language (issue 56 item 8): a Chinese chart
counts in 万 and 亿, never in K, M, B or T (nor Plotly's own SI ticks, "10k", "1G"), and an English
one keeps its K/M/B/T and thousands commas. Each figure whose numbers reach 10⁴ is built as its
page builds it (lmviz.numfmt.axis_ticks writes every label), in both languages.

What Plotly would write by itself is not in a figure's JSON: an axis whose numbers reach 10⁴ must
therefore carry its own tick texts, else the browser writes "10k"."""
from __future__ import annotations

import re

import numpy as np
import pytest

import viz.beyond as vb
import viz.cost as vc
import viz.kv_cache as vk
import viz.tokenization as vt
from lmviz.numfmt import axis_ticks, tick_label

SI = re.compile(r"\d ?(k|K|M|B|T|G)\b")          # 10k, 134M, 1.2 B, 1G …
SI_FORMAT = re.compile(r"~s|:\.?\d*s\}")          # Plotly's d3 SI formats ("~s", "%{y:.3s}")


def _figures(lang: str) -> dict:
    """The charts of /cost, /beyond, /kv-cache and /tokenization that show large numbers, built
    from the same core functions and ranges as their pages."""
    from lmviz.chapters.cost import (attention_flops, chinchilla_optimal, chinchilla_optimal_fit,
                                     decode_step_flops, layer_flops)
    from lmviz.chapters.kv_cache import MODEL_SHAPES, attention_variants
    from lmviz.kv_cache import kv_cache_bytes

    names3 = {"attention": "a", "projections": "p", "mlp": "m"}
    ns = [2 ** i for i in range(8, 17)]
    cs = np.logspace(18, 26, 33)
    table3 = [(1.92e19, 400e6), (1.21e20, 1e9), (1.23e22, 10e9), (5.76e23, 67e9), (3.85e24, 175e9), (1.27e26, 1e12)]
    n = np.array([2 ** k for k in range(4, 18)], dtype=np.float64)
    s = MODEL_SHAPES["notes"]
    grid = np.array([2 ** k for k in range(10, 21)])
    series = [(v.name, np.array([kv_cache_bytes(1, s.n_layer, x, v.n_kv_head, s.head_dim, 2) for x in grid]))
              for v in attention_variants(1, s.n_layer, 16384, s.n_head, s.n_kv_head, s.head_dim, 2)]
    lens = list(range(1, 300))
    return {
        "cost timing": vc.timing_figure([128, 256, 16384], [1e-4, 2e-4, 1e-2], [2e-4, 4e-4, 3e-2],
                                        names={"scores": "s", "full": "f", "guide": "g"}, x_title="n",
                                        y_title="ms", lang=lang),
        "cost traffic": vc.traffic_figure(ns, [4 * x * x for x in ns], [4 * x * 64 for x in ns],
                                          [attention_flops(x, 64) for x in ns],
                                          names={"dense": "d", "tiled": "t", "flops": "f"}, x_title="n",
                                          bytes_title="MiB", flops_title="FLOPs", lang=lang),
        "cost share": vc.flops_share_figure([layer_flops(2 ** i, 128) for i in range(4, 14)], names=names3,
                                            x_title="n", y_title="%", crossover=768, crossover_text="x", lang=lang),
        "cost prefill": vc.prefill_decode_figure(layer_flops(512, 128), decode_step_flops(512, 128), names=names3,
                                                 groups=["prefill", "decode"], y_title="FLOPs", lang=lang),
        "cost chinchilla": vc.chinchilla_figure(cs, [chinchilla_optimal(x).n_params for x in cs],
                                                [chinchilla_optimal_fit(x).n_params for x in cs], table3, 5.76e23,
                                                names={"rule": "r", "fit": "f", "table": "t", "now": "n"},
                                                x_title="C", y_title="N", lang=lang),
        "beyond context": vb.context_figure(n, 2 * 4 * n * 4 * 32 * 4, 4 * 4 * n * n, 256, x_label="n",
                                            names=("kv", "scores"), limit_label="limit", lang=lang),
        "kv bytes": vk.bytes_figure(grid, series, 16384, x_label="n", y_label="GiB", lang=lang),
        "kv speed": vk.speed_figure(lens, [1.0] * len(lens), [1.0 + 0.01 * x for x in lens], cached_name="c",
                                    uncached_name="u", x_label="n", y_label="ms", title="t",
                                    flops=([2e6 * x for x in lens], [2e8 * x for x in lens]), lang=lang),
        "tokenization tradeoff": vt.tradeoff_figure([210_000, 230_000, 250_000], [0.9, 0.7, 0.6], [3, 4, 5],
                                                    x_title="V x d", y_title="t/c", lang=lang),
    }


@pytest.fixture(scope="module", params=["en", "zh"])
def built(request):
    return request.param, _figures(request.param)


def _texts(spec: dict) -> list[str]:
    """Every number a reader sees without hovering, and the hover templates: tick texts, bar and
    point texts, hover data."""
    out = []
    for k, ax in spec["layout"].items():
        if re.match(r"^[xy]axis\d*$", k):
            out += [str(v) for v in ax.get("ticktext") or []]
            out += [str(ax.get("tickformat", ""))]
    for tr in spec["data"]:
        for key in ("text", "customdata"):
            v = tr.get(key)
            out += [str(x) for x in (v if isinstance(v, (list, tuple)) else [v]) if x is not None]
        out += [str(tr.get("hovertemplate") or ""), str(tr.get("texttemplate") or "")]
    return out


def _unlabelled_axes(spec: dict) -> list[str]:
    """Axes Plotly labels by itself although their numbers reach 10⁴ (it would write SI: "10k")."""
    from viz.theme import decoded

    reach: dict[str, float] = {}
    for tr in spec["data"]:
        for letter in "xy":
            vals = tr.get(letter)
            if vals is None:
                continue
            arr = decoded(vals)
            if arr.dtype.kind not in "fiu" or not arr.size:
                continue
            key = f"{letter}axis{(tr.get(letter + 'axis') or letter)[1:]}"
            reach[key] = max(reach.get(key, 0.0), float(np.nanmax(np.abs(arr.astype(float)))))
    out = []
    for key, top in reach.items():
        ax = spec["layout"].get(key, {})
        if top >= 1e4 and not ax.get("ticktext") and ax.get("exponentformat") != "power":
            out.append(key)
    return out


def test_a_chinese_chart_counts_in_wan_and_yi(built):
    lang, figs = built
    all_text = []
    for name, fig in figs.items():
        spec = fig.to_plotly_json()
        texts = _texts(spec)
        all_text += texts
        assert not _unlabelled_axes(spec), (name, _unlabelled_axes(spec))
        assert not [x for x in texts if SI_FORMAT.search(x)], name
        if lang == "zh":
            assert not [x for x in texts if SI.search(x)], (name, [x for x in texts if SI.search(x)])
    joined = " ".join(all_text)
    if lang == "zh":
        assert "万" in joined and "亿" in joined
        # the bars of the prefill chart and the cost chart's n ticks, as a reader sees them
        prefill = figs["cost prefill"].to_plotly_json()["data"][0]["text"]
        assert any("亿" in x for x in prefill) and any("万" in x for x in prefill), prefill
    else:
        assert "万" not in joined and "亿" not in joined
        assert re.search(r"\d (K|M|B|T)\b", joined)                  # English keeps its units
    timing = figs["cost timing"].to_plotly_json()["layout"]["xaxis"]["ticktext"]
    assert timing == ["128", "256", "16,384"]                       # an exact count: commas, both languages


def test_tick_labels_name_their_own_value():
    """A tick's text is its value, read back in either language (no rounding to a wrong tick)."""
    unit = {"万亿": 1e12, "亿": 1e8, "万": 1e4, "T": 1e12, "B": 1e9, "M": 1e6, "K": 1e3}
    for lang in ("en", "zh"):
        for lo, hi, log in ((16, 131072, True), (1e4, 1e12, True), (2.1e5, 2.5e5, False), (0, 37.5, False),
                            (3e4, 9e4, True), (2e6, 6e10, True)):
            d = axis_ticks(lo, hi, lang, log=log)
            for v, text in zip(d["tickvals"], d["ticktext"]):
                m = re.fullmatch(r"(-?[\d,.]+)(?: (万亿|亿|万|T|B|M|K))?", text)
                assert m, text
                read = float(m.group(1).replace(",", "")) * unit.get(m.group(2), 1)
                assert read == pytest.approx(v, rel=1e-9), (lang, v, text)
    assert tick_label(1.34e8, "zh") == "1.34 亿" and tick_label(1.34e8) == "134 M"
