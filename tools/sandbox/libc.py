"""The C library, for the system calls and prctl options Python has no wrapper for."""

from __future__ import annotations

import ctypes
import functools


@functools.cache
def libc_handle() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    return libc
