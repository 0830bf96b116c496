"""cyborg-lite-all-in-one that cannot start says why in one line on
stderr, exits 1 and leaves no Placement child behind; killed with
SIGKILL, its Placement child goes with it."""
import signal
import socket
import time

import pytest

from tests.functional.all_in_one import process

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group('all_in_one')]


def _fails_with_one_line(aio, *expected):
    try:
        status, out, err = aio.run()
        lines = err.strip().splitlines()
        assert status == 1, (status, out, err)
        assert len(lines) == 1, err
        assert lines[0].startswith('cyborg-lite-all-in-one: error: ')
        for text in expected:
            assert text in lines[0]
        assert process.placement_children(aio.placement_port) == []
        return lines[0]
    finally:
        process.kill_leftovers(aio.placement_port)


@pytest.mark.parametrize('args, expected', [
    (('--cards', '-1'), ('--cards', '-1 is not between 0 and 64')),
    (('--regions', 'two'), ('--regions', "'two' is not an integer")),
    (('--api-port', '70000'), ('--api-port', 'not between 1 and 65535')),
])
def test_bad_arguments(tmp_path, args, expected):
    aio = process.AllInOneProcess(tmp_path / 'state', *args)
    _fails_with_one_line(aio, *expected)
    assert process.port_is_free(aio.placement_port)
    assert not (tmp_path / 'state').exists()


def test_state_dir_under_a_regular_file(tmp_path):
    (tmp_path / 'file').write_text('not a directory')
    aio = process.AllInOneProcess(tmp_path / 'file' / 'state')
    _fails_with_one_line(aio, 'cannot create the state directory',
                         str(tmp_path / 'file' / 'state'))
    assert process.port_is_free(aio.placement_port)


def test_placement_failing_to_start(tmp_path):
    # Its database path is a directory: Placement cannot open it and dies.
    (tmp_path / 'state' / 'placement' / 'placement.sqlite').mkdir(
        parents=True)
    aio = process.AllInOneProcess(tmp_path / 'state')
    _fails_with_one_line(aio, 'Placement did not start on port %d'
                         % aio.placement_port, 'placement.log')
    assert process.port_is_free(aio.placement_port)


def test_api_port_in_use_stops_the_placement_it_started(tmp_path):
    with socket.socket() as busy:
        busy.bind(('127.0.0.1', 0))
        busy.listen()
        aio = process.AllInOneProcess(tmp_path / 'state',
                                      api_port=busy.getsockname()[1])
        _fails_with_one_line(aio, 'Address already in use')
    assert process.port_is_free(aio.placement_port)


def _gone(port, timeout=30):
    """Whether the Placement on ``port`` went away: no such process and
    nothing listening (a dying process has an empty cmdline a moment
    before its sockets close)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.placement_children(port) and \
                process.port_is_free(port):
            return True
        time.sleep(0.1)
    return False


def test_sigkill_takes_the_placement_child_along(tmp_path):
    aio = process.AllInOneProcess(tmp_path / 'state')
    aio.start()
    try:
        aio.wait_api()
        assert process.placement_children(aio.placement_port) != []
        aio.stop(signal.SIGKILL)
        assert _gone(aio.placement_port)
    finally:
        process.kill_leftovers(aio.placement_port)
