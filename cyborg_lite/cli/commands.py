"""Which command classes each front end exposes.

``COMMANDS`` is everything, for the standalone ``cyborg-lite``.
``OSC_COMMANDS`` is the part registered under ``openstack accelerator``:
only what python-openstackclient and python-cyborgclient lack, because
both already register ``accelerator device|deployable|device profile|arq``
and a second class under the same name would shadow one of theirs
(docs/cli.md). setup.cfg's ``openstack.cyborg_lite.v2`` entry points
must list exactly OSC_COMMANDS; a unit test checks that.
"""
from cyborg_lite.cli import accelerator_requests as arqs
from cyborg_lite.cli import bitstreams
from cyborg_lite.cli import claims
from cyborg_lite.cli import deployables
from cyborg_lite.cli import device_profiles
from cyborg_lite.cli import devices
from cyborg_lite.cli import programs
from cyborg_lite.cli import provider_trees
from cyborg_lite.cli import resource_slices
from cyborg_lite.cli import samples
from cyborg_lite.cli import signatures
from cyborg_lite.cli import services

# Names as `openstack accelerator <name>`: resources of API 2.4 and 2.5
# that neither python-openstackclient nor python-cyborgclient has.
OSC_COMMANDS = {
    'bitstream create': bitstreams.CreateBitstream,
    'bitstream list': bitstreams.ListBitstream,
    'bitstream show': bitstreams.ShowBitstream,
    'bitstream download': bitstreams.DownloadBitstream,
    'bitstream delete': bitstreams.DeleteBitstream,
    'program create': programs.CreateProgram,
    'program list': programs.ListProgram,
    'program show': programs.ShowProgram,
    'program cancel': programs.CancelProgram,
    'program stats': programs.ProgramStats,
    'resource-provider tree': provider_trees.ShowResourceProviderTree,
    'resource-slice show': resource_slices.ShowResourceSlices,
    'bitstream signature set': signatures.SetSignature,
    'bitstream signature show': signatures.ShowSignature,
    'bitstream signature delete': signatures.DeleteSignature,
    'trusted key create': signatures.CreateTrustedKey,
    'trusted key list': signatures.ListTrustedKey,
    'trusted key show': signatures.ShowTrustedKey,
    'trusted key revoke': signatures.RevokeTrustedKey,
    'trusted key delete': signatures.DeleteTrustedKey,
    'signature policy list': signatures.ListSignaturePolicy,
    'signature policy show': signatures.ShowSignaturePolicy,
    'signature policy set': signatures.SetSignaturePolicy,
    'signature policy unset': signatures.UnsetSignaturePolicy,
    'device history': devices.HistoryDevice,
    'device profile explain': device_profiles.ExplainDeviceProfile,
}

COMMANDS = {
    'device list': devices.ListDevice,
    'device show': devices.ShowDevice,
    'device disable': devices.DisableDevice,
    'device enable': devices.EnableDevice,
    'deployable list': deployables.ListDeployable,
    'deployable show': deployables.ShowDeployable,
    'device profile create': device_profiles.CreateDeviceProfile,
    'device profile list': device_profiles.ListDeviceProfile,
    'device profile show': device_profiles.ShowDeviceProfile,
    'device profile delete': device_profiles.DeleteDeviceProfile,
    'device profile explain': device_profiles.ExplainDeviceProfile,
    'arq create': arqs.CreateArq,
    'arq list': arqs.ListArq,
    'arq show': arqs.ShowArq,
    'arq bind': arqs.BindArq,
    'arq unbind': arqs.UnbindArq,
    'arq delete': arqs.DeleteArq,
    # Write local files, talk to no API: standalone only.
    'bitstream sample': samples.SampleBitstream,
    'bitstream sign': signatures.SignBitstream,
    # Not in OSC: `openstack accelerator service` would read as Cyborg's.
    'service list': services.ListService,
    # Reads the Kubernetes cluster (the caller's kubeconfig), no API.
    'claim explain': claims.ExplainClaim,
}
COMMANDS.update(OSC_COMMANDS)
