"""The built docs site opened as a reader would: headless Chromium (Debian's `chromium`)
loads pages of `site/`, saves a screenshot of each into `site-shots/`, and fails when a
page does not render: no page title, no Material content area, no navigation, or an image
that is all one colour. `make docs-check` builds the site first.

Usage: python scripts/docs_check.py [PAGE ...]   (paths under site/, default: three pages)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
SHOTS = ROOT / "site-shots"
PAGES = {  # page -> its title, as the reader sees it
    "index.html": "cdcmirror",
    "reference/configuration/index.html": "Settings",
    "operations/monitoring/index.html": "Monitoring",
}
BROWSER = ("chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars")
SETTLE = "--virtual-time-budget=8000"  # the page's scripts (Mermaid's diagrams) run first


def _run(*args: str) -> str:
    done = subprocess.run([*BROWSER, *args], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"chromium failed ({done.returncode}): {done.stderr[-500:]}")
    return done.stdout


def _colours(png: Path) -> int:
    """How many distinct bytes the image's first rows hold (1: a blank page)."""
    data = png.read_bytes()
    chunks, i = [], 8
    while i < len(data):
        length = int.from_bytes(data[i : i + 4], "big")
        kind = data[i + 4 : i + 8]
        if kind == b"IDAT":
            chunks.append(data[i + 8 : i + 8 + length])
        i += 12 + length
    pixels = zlib.decompress(b"".join(chunks))
    return len(set(pixels[: 1280 * 4 * 200]))


def check(page: str, title: str) -> list[str]:
    url = (SITE / page).as_uri()
    dom = _run(SETTLE, "--dump-dom", url)
    problems = []
    if f">{title}" not in dom or "<h1" not in dom:
        problems.append(f"{page}: no title {title!r}")
    if 'class="md-content"' not in dom:
        problems.append(f"{page}: no content area")
    if 'class="md-nav' not in dom:
        problems.append(f"{page}: no navigation")
    shot = SHOTS / (page.replace("/index.html", "").replace("/", "-").replace(".html", "") + ".png")
    _run(SETTLE, "--window-size=1280,900", f"--screenshot={shot}", url)
    if not shot.is_file() or _colours(shot) < 8:
        problems.append(f"{page}: the screenshot {shot} is blank")
    return problems


def main(pages: list[str]) -> int:
    if shutil.which("chromium") is None:
        print("chromium is not installed: apt-get install chromium", file=sys.stderr)
        return 2
    if not (SITE / "index.html").is_file():
        print("no site/ to check: run `make docs-build` first", file=sys.stderr)
        return 2
    SHOTS.mkdir(exist_ok=True)
    wanted = {p: PAGES.get(p, "") for p in pages} if pages else PAGES
    problems = [p for page, title in wanted.items() for p in check(page, title)]
    for problem in problems:
        print(problem, file=sys.stderr)
    print(
        f"{len(wanted) - len({p.split(':')[0] for p in problems})} of {len(wanted)} pages "
        f"render; screenshots in {SHOTS.relative_to(ROOT)}/"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
