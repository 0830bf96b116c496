"""Fixtures every functional test may share."""
import pytest

from cyborg_lite.cmd import placement_server
from tests import zygote


@pytest.fixture(scope='session')
def placement():
    """One Placement for the session; tests keep apart by hostname."""
    server = placement_server.PlacementServer(popen=zygote.popen).start()
    yield server
    server.cleanup()
