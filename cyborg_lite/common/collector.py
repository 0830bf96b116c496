"""Python's cyclic garbage collector held off around one bulk build.

An explain at 1,000 hosts makes some 100,000 rows and tuples that
outlive it by milliseconds and form no cycle. Every 700 of them start a
collection, and every hundredth of those is a full one, which walks
every object of the process: two fifths of an explain's CPU time
(docs/benchmarks-history.md section 12). Reference counting frees them
all the same; a cycle made meanwhile waits for the next collection.
"""
import functools
import gc


def held_off(func):
    """``func`` runs with the collector off, and it is turned back on
    after, unless it was off before (or another call holding it off has
    not returned yet: the outermost turns it back on)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        was_on = gc.isenabled()
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            if was_on:
                gc.enable()
    return wrapper
