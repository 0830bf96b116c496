"""The Placement child's guard for SQLite: writing requests one at a time
(cmd/placement_server.one_writer_at_a_time)."""
import threading

from cyborg_lite.cmd import placement_server


class _App:
    """A WSGI app that records how many requests it serves at once, each
    held until ``release`` is set."""

    def __init__(self):
        self.inside = 0
        self.most_inside = 0
        self.count_lock = threading.Lock()
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()

    def __call__(self, environ, start_response):
        with self.count_lock:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        self.entered.release()
        self.release.wait(10)
        with self.count_lock:
            self.inside -= 1
        start_response('204 No Content', [])
        return [b'']


def _serve_two(method):
    app = _App()
    guarded = placement_server.one_writer_at_a_time(app)
    threads = [threading.Thread(target=guarded, args=(
        {'REQUEST_METHOD': method}, lambda *a: None)) for _ in range(2)]
    for thread in threads:
        thread.start()
    # Both in at once, or only one while the other waits at the lock.
    both_in = app.entered.acquire(timeout=5) and \
        app.entered.acquire(timeout=0.5)
    app.release.set()
    for thread in threads:
        thread.join(10)
    return both_in, app.most_inside


def test_writes_are_served_one_at_a_time():
    assert _serve_two('PUT') == (False, 1)


def test_reads_are_served_at_once():
    assert _serve_two('GET') == (True, 2)
