"""Files as they were before a turn's writes, kept by the file tools for undo.

Snapshots leave ignored files out (a `.env`, build output), so the file tools call in before
they change a file and its bytes (or the fact that it did not exist) are kept once per turn,
under the data directory, next to the checkpoint they belong to.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

__all__ = ["Preimages"]


class Preimages:
    def __init__(self, workspace: Path, session_id: str, data_dir: Path) -> None:
        self.workspace = workspace
        self.session_id = session_id
        self.data_dir = data_dir

    def keep(self, number: int, path: Path) -> None:
        """Keep `path` as it is now for checkpoint `number`, unless this turn kept it already."""
        target = Path(path).resolve()
        if not target.is_relative_to(self.workspace):
            return
        folder = self._folder(number)
        manifest = _read_manifest(folder)
        relative = target.relative_to(self.workspace).as_posix()
        if relative in manifest:
            return  # the first version this turn is the one to go back to
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        entry: dict[str, str | None] = {"blob": None}
        if target.is_file() and not target.is_symlink():
            blob = hashlib.sha256(relative.encode()).hexdigest()[:24]
            shutil.copyfile(target, folder / blob)
            entry["blob"] = blob
            entry["mode"] = oct(target.stat().st_mode & 0o7777)
        manifest[relative] = entry
        partial = folder / "manifest.json.partial"
        partial.write_text(json.dumps(manifest), encoding="utf-8")
        os.replace(partial, folder / "manifest.json")

    def restore(self, number: int) -> None:
        """Put back every file kept for checkpoint `number` (removing those that did not exist),
        then forget them."""
        folder = self._folder(number)
        for relative, entry in _read_manifest(folder).items():
            target = self.workspace / relative
            if not target.resolve().is_relative_to(self.workspace):
                continue
            blob = entry.get("blob") if isinstance(entry, dict) else None
            if blob is None:
                if target.is_file() or target.is_symlink():
                    target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / blob, target)
            if isinstance(entry.get("mode"), str):
                os.chmod(target, int(str(entry["mode"]), 8))
        shutil.rmtree(folder, ignore_errors=True)

    def _folder(self, number: int) -> Path:
        return self.data_dir / "preimages" / self.session_id / str(number)


def _read_manifest(folder: Path) -> dict[str, dict[str, str | None]]:
    try:
        data = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
