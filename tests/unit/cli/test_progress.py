"""The progress bar draws on a real pseudo-terminal and stays silent on
anything that is not one."""
import io
import os
import select

import pytest

from cyborg_lite.cli import progress


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture
def pty_stream():
    """A writable file whose isatty() is really True, and its reader."""
    master, slave = os.openpty()
    stream = os.fdopen(slave, 'w')
    yield stream, master
    stream.close()
    os.close(master)


def _read_all(master):
    # A pty hands back one write per read(); drain until nothing is left.
    chunks = []
    while select.select([master], [], [], 0.2)[0]:
        chunks.append(os.read(master, 65536))
    return b''.join(chunks).decode()


def test_draws_bytes_percent_and_rate_on_a_tty(pty_stream):
    stream, master = pty_stream
    clock = FakeClock()
    bar = progress.Progress(total=4 * 1024 * 1024, label='upload',
                            stream=stream, clock=clock)
    assert bar.enabled
    clock.now += 2.0
    bar.update(2 * 1024 * 1024)
    bar.finish()
    out = _read_all(master)
    assert 'upload' in out
    assert '2.0 MiB / 4.0 MiB' in out
    assert ' 50%' in out
    assert '1.0 MiB/s' in out
    assert out.startswith('\r')
    # The pty turns \n into \r\n: the bar ends its line once finished.
    assert out.endswith('\r\n')


def test_unknown_total_shows_bytes_and_rate(pty_stream):
    stream, master = pty_stream
    clock = FakeClock()
    with progress.Progress(stream=stream, clock=clock) as bar:
        clock.now += 1.0
        list(bar.wrap([b'x' * 1000, b'y' * 536]))
    out = _read_all(master)
    assert '1.5 KiB' in out
    assert '1.5 KiB/s' in out
    assert '%' not in out


def test_redraws_are_throttled(pty_stream):
    stream, master = pty_stream
    clock = FakeClock()
    bar = progress.Progress(total=100, stream=stream, clock=clock,
                            min_interval=0.5)
    for _ in range(10):
        bar.update(1)   # same instant: only the first draws
    clock.now += 1.0
    bar.update(1)
    out = _read_all(master)
    assert out.count('\r') == 2


def test_silent_when_not_a_tty():
    stream = io.StringIO()
    with progress.Progress(total=10, stream=stream) as bar:
        assert list(bar.wrap([b'abc', b'de'])) == [b'abc', b'de']
    assert bar.done == 5
    assert stream.getvalue() == ''


def test_silent_on_a_pipe():
    read_fd, write_fd = os.pipe()
    with os.fdopen(write_fd, 'w') as stream:
        with progress.Progress(total=10, stream=stream) as bar:
            bar.update(10)
    with os.fdopen(read_fd) as reader:
        assert reader.read() == ''


@pytest.mark.parametrize('n,text', [(0, '0 B'), (1023, '1023 B'),
                                    (1536, '1.5 KiB'),
                                    (5 * 1024 ** 3, '5.0 GiB')])
def test_format_bytes(n, text):
    assert progress.format_bytes(n) == text
