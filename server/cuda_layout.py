"""What CMake's FindCUDAToolkit needs and NVIDIA's toolkit wheels lack (see server.cuda_toolkit):
unversioned library names, and a stub of the driver library generated from the toolkit's cuda.h."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from server.errors import BuildError


def complete_layout(root: Path, cc: str = "cc") -> None:
    """Add what FindCUDAToolkit needs and the wheels lack (see the module's docstring)."""
    lib = root / "lib"
    for versioned in sorted(lib.glob("lib*.so.*")):
        plain = lib / (versioned.name.split(".so.")[0] + ".so")
        if not plain.exists():
            plain.symlink_to(versioned.name)
    stub = lib / "stubs" / "libcuda.so"
    if stub.exists():
        return
    header = root / "include" / "cuda.h"
    if not header.is_file():
        raise BuildError(f"{header} is missing: the CUDA toolkit in {root} is incomplete; remove it and build again")
    stub.parent.mkdir(parents=True, exist_ok=True)
    source = stub.parent / "libcuda_stub.c"
    source.write_text(driver_stub_source(header.read_text(errors="replace")))
    try:
        subprocess.run(
            [cc, "-shared", "-fPIC", "-o", str(stub), "-Wl,-soname,libcuda.so.1", str(source)],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"cannot build the CUDA driver stub with {cc} ({exc}); install a C compiler") from None


_DECLARED = re.compile(r"CUDAAPI\s+(cu[A-Za-z0-9_]+)\s*\(")
_RENAMED = re.compile(r"^\s*#\s*define\s+cu[A-Za-z0-9_]+\s+(cu[A-Za-z0-9_]+)\s*$", re.MULTILINE)


def driver_stub_source(cuda_h: str) -> str:
    """C for a stub driver library: one function per entry point ``cuda.h`` declares, under both
    its declared name and the versioned name a ``#define`` maps it to (``cuMemAlloc_v2``), as
    programs reference the latter. Never called: the real driver replaces it at run time."""
    names = sorted(set(_DECLARED.findall(cuda_h)) | set(_RENAMED.findall(cuda_h)))
    return "".join(f"int {name}(void) {{ return 999; }}\n" for name in names)
