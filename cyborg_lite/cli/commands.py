"""Which command classes each front end exposes.

``COMMANDS`` is everything, for the standalone ``cyborg-lite``.
``OSC_COMMANDS`` is the part registered under ``openstack accelerator``:
only what python-openstackclient and python-cyborgclient lack, because
both already register ``accelerator device|deployable|device profile|arq``
and a second class under the same name would shadow one of theirs
(see README "CLI"). setup.cfg's ``openstack.cyborg_lite.v2`` entry points
must list exactly OSC_COMMANDS; a unit test checks that.
"""
from cyborg_lite.cli import accelerator_requests as arqs
from cyborg_lite.cli import deployables
from cyborg_lite.cli import device_profiles
from cyborg_lite.cli import devices

COMMANDS = {
    'device list': devices.ListDevice,
    'device show': devices.ShowDevice,
    'deployable list': deployables.ListDeployable,
    'deployable show': deployables.ShowDeployable,
    'device profile create': device_profiles.CreateDeviceProfile,
    'device profile list': device_profiles.ListDeviceProfile,
    'device profile show': device_profiles.ShowDeviceProfile,
    'device profile delete': device_profiles.DeleteDeviceProfile,
    'arq create': arqs.CreateArq,
    'arq list': arqs.ListArq,
    'arq show': arqs.ShowArq,
    'arq bind': arqs.BindArq,
    'arq unbind': arqs.UnbindArq,
    'arq delete': arqs.DeleteArq,
}

# Names as `openstack accelerator <name>`; the bitstream, program and
# resource-provider tree commands go here when their API exists.
OSC_COMMANDS = {}
