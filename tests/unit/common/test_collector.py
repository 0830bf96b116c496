"""common/collector.held_off: the collector is off inside, as it was
after, whatever the call does."""
import gc

import pytest

from cyborg_lite.common import collector


@pytest.fixture
def restore_gc():
    was_on = gc.isenabled()
    yield
    (gc.enable if was_on else gc.disable)()


@collector.held_off
def _inside(fail=False):
    if fail:
        raise ValueError('failed')
    return gc.isenabled()


def test_off_inside_on_again_after(restore_gc):
    gc.enable()
    assert _inside() is False
    assert gc.isenabled()


def test_on_again_after_a_call_that_raises(restore_gc):
    gc.enable()
    with pytest.raises(ValueError):
        _inside(fail=True)
    assert gc.isenabled()


def test_left_off_when_it_was_off_and_by_a_call_inside_another(
        restore_gc):
    gc.disable()
    assert _inside() is False
    assert not gc.isenabled()
    gc.enable()
    assert collector.held_off(lambda: (_inside(), gc.isenabled()))() == (
        False, False)
    assert gc.isenabled()
