"""The apiserver stand-in with Node node-1, and a SliceSync of our driver
through the real client against it on a manual clock (the gated-field
tests: taints, shared counters)."""
import pytest

from cyborg_lite.kubernetes import slice_sync
from tests import waiting
from tests.unit.kubernetes import fake_apiserver
from tests.unit.kubernetes import inventories


@pytest.fixture
def apiserver():
    server = fake_apiserver.FakeKubeApiServer().start()
    server.add_node('node-1')
    yield server
    server.stop()


@pytest.fixture
def clock():
    return waiting.ManualClock()


@pytest.fixture
def sync(apiserver, clock):
    client = apiserver.api_client()
    yield slice_sync.SliceSync(client, inventories.DRIVER, clock=clock)
    client.close()
