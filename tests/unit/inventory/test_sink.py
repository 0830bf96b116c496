"""inventory/sink: the sink interface and its retry bookkeeping."""
import pytest

from cyborg_lite.inventory import sink as inventory_sink


class Clock:
    now = 100.0

    def __call__(self):
        return self.now


def test_backoff_doubles_up_to_the_maximum_and_clears():
    clock = Clock()
    pending = inventory_sink.PendingHosts(1.0, 5.0, clock)
    assert pending.due() == [] and pending.as_dict() == {}
    pending.failed('b')
    pending.failed('a')
    assert pending.as_dict() == {'a': 101.0, 'b': 101.0}
    assert pending.due() == []
    clock.now = 101.0
    assert pending.due() == ['a', 'b']
    for expected in (103.0, 105.0, 106.0, 106.0):  # 2, 4, then capped at 5
        pending.failed('a')
        assert pending.as_dict()['a'] == expected
    pending.clear('a')
    assert pending.as_dict() == {'b': 101.0}


def test_a_sink_must_implement_the_whole_interface():
    class Half(inventory_sink.InventorySink):
        def publish(self, hostname):
            return inventory_sink.PublishResult(hostname, True)

    with pytest.raises(TypeError, match='retry_pending'):
        Half()


def test_a_publish_result_converges_when_it_succeeded():
    assert inventory_sink.PublishResult('h', True).converged
    assert not inventory_sink.PublishResult('h', False, 'down').converged
