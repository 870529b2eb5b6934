"""Our patches on the pinned llama.cpp (server/patches/): applied in name order to a copy of the
sdist of its own per patch set, so the pristine tree stays as it is."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from server.errors import BuildError
from server.sdist import SDIST_NAME, SDIST_VERSION, fetch_sdist

# Changes we carry on the pinned source, applied in name order (see patches/README.md).
PATCHES_DIR = Path(__file__).resolve().parent / "patches"

Progress = Callable[[int, str], None]


def patch_files() -> list[Path]:
    return sorted(PATCHES_DIR.glob("*.patch"))


def patch_digest() -> str:
    digest = hashlib.sha256()
    for patch in patch_files():
        digest.update(patch.name.encode() + b"\0" + patch.read_bytes())
    return digest.hexdigest()[:12]


def patched_source(work_dir: Path, progress: Progress | None = None) -> Path:
    """The pinned sdist with our patches applied, in a folder of its own per patch set (the
    pristine tree stays as it is: other readers use it, e.g. for its chat templates)."""
    pristine = fetch_sdist(work_dir, progress)
    patches = patch_files()
    if not patches:
        return pristine
    target = work_dir / f"{pristine.parent.name}-patched-{patch_digest()}"
    marker = target / ".localagent-patched"
    if marker.is_file():
        return target / "llama.cpp"
    if progress:
        progress(0, "applying the patches")
    shutil.rmtree(target, ignore_errors=True)
    with tempfile.TemporaryDirectory(dir=work_dir, prefix=".patching-") as scratch:
        tree = Path(scratch) / "llama.cpp"
        shutil.copytree(pristine, tree, symlinks=True)
        for patch in patches:
            done = subprocess.run(
                ["patch", "-p1", "--forward", "--batch", "--silent", "-i", str(patch)],
                cwd=tree,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                detail = (done.stdout + done.stderr).strip().splitlines()[:3]
                raise BuildError(
                    f"the patch {patch.name} does not apply to {SDIST_NAME}=={SDIST_VERSION} "
                    f"({'; '.join(detail) or f'exit {done.returncode}'}): the source moved; update the patch, "
                    "or build your own checkout with --source DIR"
                )
        (Path(scratch) / ".localagent-patched").write_text("\n".join(p.name for p in patches) + "\n")
        try:
            os.replace(scratch, target)
        except OSError:
            if not marker.is_file():  # not a build beside this one that got there first
                raise BuildError(f"cannot put the patched source in place at {target}") from None
            shutil.rmtree(scratch, ignore_errors=True)
        # The emptied scratch name is recreated so TemporaryDirectory's cleanup finds it.
        Path(scratch).mkdir()
    return target / "llama.cpp"
