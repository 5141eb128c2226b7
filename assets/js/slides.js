// lmviz presenter mode: a section drawn by the server is shown one screen (a "step") at a time.
// The items of the section's container (.st-key-lmviz-slides) are packed into steps that fit the
// visible height: at most one heading, one block of prose (the server splits prose into blocks of
// two sentences), one chart; widgets go with the chart that follows them. The step shown is
// scrolled to the top and every other item is made invisible and inert. PageDown / Space / ArrowRight /
// ArrowDown step forward, PageUp / ArrowLeft / ArrowUp back, whatever has the focus (a clicker
// must never move a focused slider); past the last step the server's "next" button is pressed,
// before the first its "previous" button (landing on that section's last step). Only keys typed
// into a text box stay there (except PageUp / PageDown). The chapter's title and intro are part
// of the first step of its first section only.
// A step that shows a button a clicker presses (window.lmvizActs, ui.render.CLICKER_KEYS: "Ask
// the room", "Reveal", "Start", "Play", "Measure") takes the first PageDown as that press, once
// per visit of the section; the next PageDown moves on. While the press's run is drawing, a
// PageDown waits for it (it would otherwise step past the answer the press brings).
(() => {
  if (window.lmvizSlides) { window.lmvizSlides.soon(); return; }
  const S = window.lmvizSlides = { i: 0, steps: [], key: null, timer: null, pressed: new Set(), at: 0 };
  const ACTS = (window.lmvizActs || []).map(p => new RegExp(p));
  const KEYS = { PageDown: 1, " ": 1, ArrowRight: 1, ArrowDown: 1, PageUp: -1, ArrowLeft: -1, ArrowUp: -1 };
  const box = () => document.querySelector(".st-key-lmviz-slides");
  const main = () => document.querySelector("[data-testid=stMain]");
  const CHART = "[data-testid=stPlotlyChart], [data-testid=stDataFrame], [data-testid=stTable], svg, [data-testid=stImage]";
  const WIDGET = "input, button, [role=slider], textarea, select, [data-testid=stExpander]";
  function kind(el) {
    if (el.querySelector("h1, h2, h3")) return "heading";
    if (el.querySelector(CHART)) return "chart";
    if (el.querySelector(WIDGET)) return "widget";
    if (el.querySelector("[data-testid=stMarkdownContainer]")) return "text";
    return "other";
  }
  function twin(el) {
    // a chart's text twin (ui.render): visually hidden (1 px, out of the flow), its place on the
    // page says nothing, so it must not start a step of its own (it did, with a top far below
    // the chart, and the step scrolled its first lines above the window)
    return el.getBoundingClientRect().height <= 2 && !!el.querySelector(".lmviz-twin");
  }
  function plainBlock(el) {
    // a borderless vertical block (a fragment, a plain container): its children are the items
    if (el.getAttribute("data-testid") !== "stVerticalBlock") {
      const inner = el.getAttribute("data-testid") === "stLayoutWrapper" &&
        el.querySelector(":scope > [data-testid=stVerticalBlock]");
      return inner && el.children.length === 1 ? plainBlock(inner) : null;
    }
    const cs = getComputedStyle(el);
    return parseFloat(cs.borderTopWidth) > 0 ? null : el;
  }
  function flat(el, out) {
    if (el.getBoundingClientRect().height <= 0.5) return;
    const inner = plainBlock(el);
    if (inner) { [...inner.children].forEach(c => flat(c, out)); return; }
    out.push(el);
  }
  function items() {
    const b = box(), out = [];
    if (b) [...b.children].forEach(c => flat(c, out));
    return out;
  }
  function headerH() {
    const h = document.querySelector("[data-testid=stHeader]");
    return h ? h.getBoundingClientRect().height : 0;
  }
  function pack(its, base, room) {
    const sec = new URLSearchParams(location.search).get("sec") || "1";
    const steps = [];
    let cur = null;
    for (const el of its) {
      if (cur && twin(el)) { cur.els.push(el); continue; }   // with the chart it describes
      const r = el.getBoundingClientRect(), top = r.top - base, bottom = r.bottom - base, k = kind(el);
      if (!cur) {
        // the first step of a chapter starts at the page's top: its title and intro, once
        cur = { top: sec === "1" ? 0 : top, els: [], n: {} };
      }
      const n = cur.n, full = cur.els.length > 0 && (
        bottom - cur.top > room || (k === "heading" && cur.els.length > 0) ||
        (k === "chart" && n.chart) || (k === "text" && (n.text || n.chart)) ||
        (k === "widget" && n.chart));
      const first = steps.length === 0 && cur.els.length === 0 && cur.top === 0 && bottom > room;
      if (full || first) {
        // a chart that does not fit takes the widgets just above it along: a slider and the
        // chart it drives are one slide (the slider's step used to end above its chart)
        const moved = [];
        if (k === "chart" && !n.chart) {
          while (cur.els.length > 1 && kind(cur.els[cur.els.length - 1]) === "widget") moved.unshift(cur.els.pop());
          cur.n.widget = (cur.n.widget || 0) - moved.length;
        }
        if (cur.els.length || first) steps.push(cur);
        cur = { top: moved.length ? moved[0].getBoundingClientRect().top - base : top, els: moved, n: moved.length ? { widget: moved.length } : {} };
      }
      cur.els.push(el);
      cur.n[k] = (cur.n[k] || 0) + 1;
    }
    if (cur && cur.els.length) steps.push(cur);
    return steps;
  }
  function fit(steps, base, room) {
    // a step still taller than the slide (an item that cannot be split: a row of columns, a chart
    // with its text beside it, or a chart with its slider): its tallest item is drawn smaller
    // (CSS zoom) so that the step fits, the one place the type may go under 28 px. True when an
    // item changed (the items below it moved: pack again)
    let changed = false;
    const h = el => el.getBoundingClientRect().height;
    for (const st of steps) {
      const els = st.els.filter(el => !twin(el));      // a chart's text twin is out of the flow
      if (!els.length) continue;
      const over = Math.max(...els.map(el => el.getBoundingClientRect().bottom - base)) - st.top - room;
      if (over <= 1) continue;
      const big = els.reduce((a, el) => (h(el) > h(a) ? el : a));
      const z0 = parseFloat(big.style.zoom) || 1, hb = h(big);
      const z = Math.max(0.5, Math.floor(z0 * Math.max(1, hb - over) / hb * 1000) / 1000);
      if (z < z0 - 0.001) { big.style.zoom = String(z); changed = true; }
    }
    return changed;
  }
  function layout() {
    const m = main(), its = items();
    if (!m || !its.length) { S.steps = []; return; }
    const base = m.getBoundingClientRect().top - m.scrollTop, room = m.clientHeight - headerH() - 12;
    for (const el of its) el.style.zoom = "";
    let steps = pack(its, base, room);
    for (let pass = 0; pass < 3 && fit(steps, base, room); pass++) steps = pack(its, base, room);
    S.steps = steps;
  }
  function off(el, yes) {
    // a data attribute and `inert` (React leaves both alone when it redraws an element's class)
    if (yes) { el.setAttribute("data-lmviz-off", ""); el.inert = true; }
    else { el.removeAttribute("data-lmviz-off"); el.inert = false; }
  }
  function show() {
    const m = main(), its = items();
    if (!m || !S.steps.length) return;
    S.i = Math.max(0, Math.min(S.i, S.steps.length - 1));
    const on = new Set(S.steps[S.i].els);
    for (const el of its) off(el, !on.has(el));
    m.scrollTo({ top: Math.max(0, S.steps[S.i].top - (S.steps[S.i].top ? headerH() + 4 : 0)), behavior: "instant" });
    const b = box();
    if (b) { b.dataset.step = String(S.i + 1); b.dataset.steps = String(S.steps.length); }
    where();
  }
  function where() {
    // "chapter · section k of n" on every slide, from the page's own (translated) title and
    // section bar, which only a section's first step shows
    let w = document.querySelector(".lmviz-where");
    if (!w) { w = document.createElement("div"); w.className = "lmviz-where"; w.setAttribute("aria-hidden", "true"); document.body.appendChild(w); }
    const b = box(), h1 = document.querySelector("[data-testid=stMain] h1");
    const bar = [...document.querySelectorAll("[data-testid=stMain] [data-testid=stProgress]")].find(p => !b || !b.contains(p));
    const title = h1 ? h1.textContent.trim() : "", sec = bar ? bar.innerText.trim() : "";
    w.textContent = b && title ? (sec ? `${title} · ${sec}` : title) : "";
    w.style.display = w.textContent ? "" : "none";
  }
  function refresh() {
    const b = box();
    if (!b) { S.key = null; return; }
    const h = b.querySelector("h2");
    const key = location.pathname + "|" + (new URLSearchParams(location.search).get("sec") || "1") + "|" + (h ? h.textContent : "");
    b.querySelectorAll("[data-lmviz-off]").forEach(el => off(el, false));
    layout();
    if (key !== S.key) {
      S.key = key;
      S.pressed.clear();
      S.i = sessionStorage.getItem("lmviz-slide-last") === "1" ? S.steps.length - 1 : 0;
      sessionStorage.removeItem("lmviz-slide-last");
    }
    show();
  }
  S.soon = () => { clearTimeout(S.timer); S.timer = setTimeout(refresh, 150); };
  function press(which) {
    const btn = document.querySelector(`.st-key-lmviz_${which} button`);
    if (btn && !btn.disabled) {
      if (which === "prev") sessionStorage.setItem("lmviz-slide-last", "1");
      btn.click();
    }
  }
  function action(step) {
    // the first button of the step that a clicker presses and has not pressed on this visit
    for (const el of step.els) {
      for (const btn of el.querySelectorAll("button")) {
        let key = null;
        for (let c = btn.parentElement; c && c !== el.parentElement && !key; c = c.parentElement) {
          key = [...c.classList].find(n => ACTS.some(r => r.test(n))) || null;
        }
        if (key && !btn.disabled && !S.pressed.has(key)) return { key, btn };
      }
    }
    return null;
  }
  function watchRun() {
    // the end of a press's run: the app's script state goes to running and back (a fragment's
    // timer runs too, so "running" alone says nothing about the press)
    const app = document.querySelector("[data-testid=stApp]");
    if (!app || S.runObs) return;
    S.runObs = new MutationObserver(() => {
      if (!S.at) return;
      if (app.dataset.testScriptState === "running") S.ran = true;
      else if (S.ran) { S.at = 0; S.ran = false; }
    });
    S.runObs.observe(app, { attributes: true, attributeFilter: ["data-test-script-state"] });
  }
  function drawing() {
    // from a press until its run has ended (1.5 s if no run was seen to start, 8 s at most)
    if (!S.at) return false;
    const since = Date.now() - S.at;
    if (since > 8000 || (!S.ran && since > 1500)) { S.at = 0; S.ran = false; return false; }
    return true;
  }
  S.go = (d) => {
    refresh();
    if (d > 0 && S.steps.length) {
      if (drawing()) {
        // one PageDown waits for the press's run, then counts (more while waiting count once)
        if (!S.wait) S.wait = setInterval(() => {
          if (drawing()) return;
          clearInterval(S.wait); S.wait = null; S.go(1);
        }, 100);
        return;
      }
      const a = action(S.steps[S.i]);
      if (a) {
        watchRun();
        S.pressed.add(a.key);
        S.at = Date.now(); S.ran = false;
        const b = box();
        if (b) b.dataset.presses = String(+(b.dataset.presses || 0) + 1);   // read by the tests
        a.btn.click();
        return;
      }
    }
    if (S.wait) { clearInterval(S.wait); S.wait = null; }
    const j = S.i + d;
    if (j < 0) return press("prev");
    if (j >= S.steps.length) return press("next");
    S.i = j;
    show();
  };
  window.addEventListener("keydown", (e) => {
    if (!box() || !(e.key in KEYS) || e.altKey || e.ctrlKey || e.metaKey) return;
    const a = document.activeElement;
    const typing = a && (a.isContentEditable || a.tagName === "TEXTAREA" ||
      (a.tagName === "INPUT" && !["range", "checkbox", "radio", "button", "submit"].includes(a.type)));
    if (typing && e.key !== "PageDown" && e.key !== "PageUp") return;
    e.preventDefault();
    e.stopImmediatePropagation();
    if (a && a !== document.body && a.blur) a.blur();
    S.go(KEYS[e.key]);
  }, true);
  new MutationObserver(() => { if (box()) S.soon(); })
    .observe(document.body, { childList: true, subtree: true, characterData: true });
  window.addEventListener("resize", S.soon);
  S.soon();
})();
