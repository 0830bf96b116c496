"""Fixtures every functional test may share."""
import pytest

from cyborg_lite.cmd import placement_server
from tests import fork_server


@pytest.fixture(scope='session')
def placement():
    """One Placement for the session; tests keep apart by hostname."""
    server = placement_server.PlacementServer(popen=fork_server.popen).start()
    yield server
    server.cleanup()
