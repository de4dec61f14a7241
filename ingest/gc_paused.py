"""The cyclic garbage collector paused while a reader or a post-pass builds millions of Python objects.

A trace's events, ranges and recorded ops are objects without reference cycles: the collector frees none of them,
but each of its passes walks all of them, so its cost grows with what has been read (measured on a 423 MB trace:
a quarter of the reader's CPU time; 18 of the ops post-pass's 27 s). Reference counting still frees every object
as soon as it is dropped.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside the block, and back on after it (if it was on before)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
