"""How often does the lecturer's page go blank while the room answers? (Chromium, one server.)

    python bench/lecturer_blank.py [--classes 10]

Starts the app (``serve.py``) on a free port. For each class: a lecturer opens /generation in
presenter mode, starts a class, steps to the room's section and asks "be the language model";
one English student joins by the student link. For 10 s the lecturer's page is looked at every
half second: a look that finds no element in the main block is blank. The browser's page errors
are counted too (Streamlit's frontend throws "'setIn' cannot be called on an ElementNode" when a
fragment's run writes into another element's place, and the page goes blank for good).

The last line reads ``blank classes K of N, page errors E``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--classes", type=int, default=10)
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    from tests.browser_util import CHROMIUM, LAUNCH_ARGS, Server, wait_idle
    from tests.test_browser_room_acts import _button, _desktop, _join, _start_class
    from ui.i18n import translate

    srv = Server()
    blank_classes = errors = 0
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
            for i in range(args.classes):
                lctx, lec = _desktop(b)
                sctx, student = _desktop(b)
                seen: list[str] = []
                lec.on("pageerror", lambda e, seen=seen: seen.append(str(e)))
                code = _start_class(srv, lec, "generation",
                                    translate("gen.room_choices", "en", choices="").rstrip("."))
                _button(lec, translate("gen.room_ask", "en")).first.click()
                wait_idle(lec)
                _join(srv, student, code, "en")
                blank = 0
                for _ in range(20):
                    lec.wait_for_timeout(500)
                    if lec.locator("[data-testid=stMain] [data-testid=stElementContainer]").count() == 0:
                        blank += 1
                blank_classes += blank > 0
                errors += len(seen)
                print(f"class {i + 1}: blank looks {blank} of 20, page errors {seen[:2]}", flush=True)
                end = lec.get_by_role("button", name=translate("class.end", "en"))
                if end.count():
                    end.first.click()
                for ctx in (lctx, sctx):
                    ctx.close()
            b.close()
    finally:
        srv.stop()
    print(f"blank classes {blank_classes} of {args.classes}, page errors {errors}")


if __name__ == "__main__":
    main()
