"""Mermaid for the docs site, served with it: Material for MkDocs loads Mermaid from a CDN
unless the page has it already, so without this the diagrams of a site read offline (or
behind a proxy) show as their source. Fetches the pinned release's tarball from the npm
registry (no npm needed), checks its SHA-256, and writes ``dist/mermaid.min.js`` to the path
given. `make docs-build` runs it when the file is missing.

Usage: python scripts/vendor_mermaid.py docs/javascripts/mermaid.min.js
"""

from __future__ import annotations

import hashlib
import io
import sys
import tarfile
import urllib.request
from pathlib import Path

VERSION = "11.12.2"  # the Mermaid 11 line Material 9.8 loads (mermaid@11 on its CDN)
TARBALL = f"https://registry.npmjs.org/mermaid/-/mermaid-{VERSION}.tgz"
SHA256 = "c4ab1840638b1735135090c667382e89cc353b46b56761514a3d0a8a80963832"
MEMBER = "package/dist/mermaid.min.js"


def main(target: Path) -> int:
    try:
        with urllib.request.urlopen(TARBALL, timeout=60) as response:
            data = response.read()
    except OSError as exc:
        print(f"cannot fetch {TARBALL}: {exc}; diagrams will load from the CDN", file=sys.stderr)
        return 1
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256:
        print(f"{TARBALL}: SHA-256 {digest}, expected {SHA256}", file=sys.stderr)
        return 1
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        member = tar.extractfile(MEMBER)
        assert member is not None, MEMBER
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(member.read())
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
