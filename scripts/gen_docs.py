"""Write docs/reference/ from the code (localagent.reference_docs): the command-line, profile and
settings references. `--check` writes nothing and exits 1 when a page is out of date."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from localagent.reference_docs import reference_pages

REFERENCE_DIR = Path(__file__).resolve().parent.parent / "docs" / "reference"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="only say which pages differ from the code")
    args = parser.parse_args()
    stale = []
    for name, text in reference_pages().items():
        path = REFERENCE_DIR / name
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'out of date' if args.check else 'wrote'}: {path.relative_to(REFERENCE_DIR.parent.parent)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
