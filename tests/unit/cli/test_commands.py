"""The two command tables agree with the installed entry points, and
nothing we register under `openstack accelerator` shadows another
package's command."""
import importlib.metadata

import pytest

from cyborg_lite.cli import app
from cyborg_lite.cli import commands
from cyborg_lite.cli import osc_plugin

OSC_GROUP = 'openstack.%s.v2' % osc_plugin.API_NAME


def _entry_points(group, dist=None):
    eps = importlib.metadata.entry_points(group=group)
    return {ep.name: ep for ep in eps
            if dist is None or ep.dist.name.replace('-', '_') == dist}


def _other_accelerator_commands():
    """Command names python-openstackclient and python-cyborgclient
    register (``accelerator device list`` ...)."""
    names = set()
    for group in ('openstack.accelerator.v2', 'openstack.accelerator.v1'):
        for ep in importlib.metadata.entry_points(group=group):
            names.add(ep.name.replace('_', ' '))
    return names


def test_osc_entry_points_are_exactly_osc_commands():
    eps = _entry_points(OSC_GROUP, 'cyborg_lite')
    assert {n.replace('_', ' ') for n in eps} == {
        'accelerator ' + n for n in commands.OSC_COMMANDS}
    for name, cls in commands.OSC_COMMANDS.items():
        ep = eps['accelerator_' + name.replace(' ', '_')]
        assert ep.load() is cls


def test_plugin_module_is_registered():
    eps = _entry_points('openstack.cli.extension', 'cyborg_lite')
    assert eps['cyborg_lite'].load() is osc_plugin


def test_other_clients_are_installed_so_the_clash_check_means_something():
    assert 'accelerator device list' in _other_accelerator_commands()


def test_osc_commands_clash_with_nothing():
    ours = {'accelerator ' + n for n in commands.OSC_COMMANDS}
    assert not ours & _other_accelerator_commands()


def test_plugin_uses_its_own_client_slot():
    # Sharing OSC's "accelerator" slot would hand our commands an SDK proxy
    # (or theirs our client).
    assert osc_plugin.API_NAME != 'accelerator'
    assert osc_plugin.check_api_version('2.3')
    assert not osc_plugin.check_api_version('1')


@pytest.mark.parametrize('given,sent', [('2', '2.3'), (None, '2.3'),
                                        ('2.1', '2.1')])
def test_plugin_microversion(given, sent):
    assert osc_plugin.microversion(given) == sent


def test_standalone_has_every_command_with_a_parser():
    manager = app.build_command_manager()
    for name, cls in commands.COMMANDS.items():
        found, _, _ = manager.find_command(name.split())
        assert found is cls
        assert cls.__doc__
        parser = cls(None, None).get_parser('cyborg-lite ' + name)
        assert parser.format_usage().startswith('usage: cyborg-lite')
