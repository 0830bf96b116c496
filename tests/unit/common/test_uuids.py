"""common/uuids.py: version 4 UUIDs from buffered kernel randomness."""
import os
import threading
import uuid

from cyborg_lite.common import uuids


def test_a_uuid_is_version_4_and_its_string_is_the_usual_form():
    value = uuids.uuid4()
    assert isinstance(value, uuid.UUID)
    assert value.version == 4 and value.variant == uuid.RFC_4122
    text = uuids.new()
    assert text == str(uuid.UUID(text)) and len(text) == 36


def test_uuids_do_not_repeat_across_buffers_and_threads():
    seen = []

    def make():
        seen.extend(uuids.new() for _ in range(2000))

    threads = [threading.Thread(target=make) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # 8,000 UUIDs: 31 refills of the 4 KiB buffer.
    assert len(set(seen)) == len(seen) == 8000


def test_a_forked_child_does_not_repeat_its_parents_uuids():
    uuids.new()   # the buffer now holds the parent's next UUIDs
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child
        try:
            os.write(write, ''.join(uuids.new() for _ in range(5))
                     .encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    os.waitpid(pid, 0)
    parent = ''.join(uuids.new() for _ in range(5))
    assert len(child) == len(parent) == 5 * 36
    assert child != parent
    assert not set(child[i:i + 36] for i in range(0, 180, 36)) & \
        set(parent[i:i + 36] for i in range(0, 180, 36))


def test_the_string_is_the_uuid_modules_for_the_same_bytes(monkeypatch):
    drawn = []

    def random16(real=uuids._random16):
        drawn.append(real())
        return drawn[-1]

    monkeypatch.setattr(uuids, '_random16', random16)
    for _ in range(2000):
        text = uuids.new()
        assert text == str(uuid.UUID(bytes=drawn[-1], version=4))
    # Every bit the version and variant leave was random somewhere.
    assert {b for raw in drawn for b in raw} == set(range(256))
