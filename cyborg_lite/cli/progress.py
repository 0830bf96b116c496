"""A byte-transfer progress bar for uploads and downloads.

It draws on a terminal only: when stderr is a pipe or a file (scripts, CI,
``2>log``) it writes nothing, so output stays clean. It writes to stderr so
that a download streamed to stdout is never mixed with it.

    with Progress(total=size, label='upload') as bar:
        for chunk in bar.wrap(chunks):
            send(chunk)
"""
import sys
import time

WIDTH = 24
UNITS = ('B', 'KiB', 'MiB', 'GiB', 'TiB')


def format_bytes(n):
    """``1536`` -> ``'1.5 KiB'``; whole bytes below 1 KiB."""
    value = float(n)
    for unit in UNITS:
        if value < 1024 or unit == UNITS[-1]:
            break
        value /= 1024
    if unit == 'B':
        return '%d B' % n
    return '%.1f %s' % (value, unit)


def _isatty(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        # A closed or fake stream is not a terminal.
        return False


class Progress:
    """Bytes done, percent (when the total is known) and rate."""

    def __init__(self, total=None, label='', stream=None,
                 min_interval=0.1, clock=time.monotonic):
        self.total = total
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _isatty(self.stream)
        self.done = 0
        self._clock = clock
        self._start = clock()
        self._min_interval = min_interval
        self._last_draw = None

    def line(self):
        """The text of the bar as it stands now."""
        elapsed = max(self._clock() - self._start, 1e-6)
        rate = '%s/s' % format_bytes(int(self.done / elapsed))
        parts = [self.label] if self.label else []
        if self.total:
            fraction = min(self.done / self.total, 1.0)
            filled = int(fraction * WIDTH)
            bar = '#' * filled + ' ' * (WIDTH - filled)
            parts.append('[%s] %3d%%' % (bar, int(fraction * 100)))
            parts.append('%s / %s' % (format_bytes(self.done),
                                      format_bytes(self.total)))
        else:
            parts.append(format_bytes(self.done))
        parts.append(rate)
        return '  '.join(parts)

    def _draw(self, force=False):
        now = self._clock()
        # Redrawing on every chunk would cost more than the transfer.
        if not force and self._last_draw is not None and \
                now - self._last_draw < self._min_interval:
            return
        self._last_draw = now
        # \r back to column 0, then clear to end of line (ANSI EL).
        self.stream.write('\r' + self.line() + '\x1b[K')
        self.stream.flush()

    def update(self, nbytes):
        self.done += nbytes
        if self.enabled:
            self._draw()

    def finish(self):
        if self.enabled:
            self._draw(force=True)
            self.stream.write('\n')
            self.stream.flush()
            self.enabled = False

    def wrap(self, chunks):
        """Yield ``chunks`` unchanged, counting their bytes."""
        for chunk in chunks:
            self.update(len(chunk))
            yield chunk

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.finish()
        return False
