"""Random (version 4) UUIDs, from kernel randomness read 4 KiB at a time.

``uuid.uuid4()`` reads its 16 bytes with a getrandom() system call, and
CPython lets go of the GIL around it. In the API's threads, where others
wait for the GIL, each such call hands it over and back: the two of a
POST (its request id, its new row) were 12-15% of the API's CPU with
four requests at a time (bench/post_cost.py). The bytes are the same
os.urandom bytes; a forked child reads its own (a buffer inherited from
the parent would repeat the parent's UUIDs).
"""
import os
import threading
import uuid

_BUFFER_SIZE = 4096
_lock = threading.Lock()
_buffer = b''
_offset = 0


def _reset():
    # NOTE: a new lock too: another thread of the parent may have held it
    # when the process forked.
    global _buffer, _offset, _lock
    _buffer, _offset, _lock = b'', 0, threading.Lock()


os.register_at_fork(after_in_child=_reset)


def _random16():
    global _buffer, _offset
    with _lock:
        if _offset == len(_buffer):
            _buffer, _offset = os.urandom(_BUFFER_SIZE), 0
        random = _buffer[_offset:_offset + 16]
        _offset += 16
    return random


def uuid4():
    """A new uuid.UUID, version 4, as uuid.uuid4() makes."""
    return uuid.UUID(bytes=_random16(), version=4)


def new():
    """A new version 4 UUID as the string the database and API use:
    str(uuid4()), without building the UUID object (a third of the
    time)."""
    value = bytearray(_random16())
    value[6] = value[6] & 0x0F | 0x40   # version 4
    value[8] = value[8] & 0x3F | 0x80   # the RFC 4122 variant
    text = value.hex()
    return '%s-%s-%s-%s-%s' % (text[:8], text[8:12], text[12:16],
                               text[16:20], text[20:])
