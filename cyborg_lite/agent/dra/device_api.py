"""What the kubelet plugin asks of the rest of cyborg_lite, per device.

The plugin is given two callables:

``prepare_device(request: DevicePrepareRequest) -> PreparedDevice``
    Make one allocated device ready for the claim: resolve the device name
    to its deployable, check that the claim's namespace may use the asked
    bitstream, program it when ``request.config`` asks for what is not
    loaded (the program-on-bind path, with its region-type and checksum
    checks), and take the attach handle for ``k8s:<claim uid>``. It must be
    idempotent per (claim uid, device): the kubelet retries, and after a
    restart of the agent the call comes again while a job may still run.
    Raise DevicePrepareError (or any exception) to fail the claim.

``release_device(claim_uid: str, pool: str, device: str) -> None``
    The opposite, when the claim is unprepared: free the attach handle and
    start cleanup of the region. Idempotent; raise to keep the claim
    prepared and have the kubelet retry.
"""
import dataclasses
import os
import re

from cyborg_lite.kubernetes import claim_config

_ENV_NAME_RE = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
_PERMISSIONS_RE = re.compile(r'[rwm]{1,3}')


class DevicePrepareError(Exception):
    """A device cannot be prepared for this claim; the message says why."""


@dataclasses.dataclass(frozen=True)
class DevicePrepareRequest:
    claim_uid: str
    namespace: str
    claim_name: str
    request: str                     # the claim's request name
    pool: str
    device: str                      # DNS-label name from the slice
    admin_access: bool = False       # monitoring access: never program
    config: claim_config.FpgaConfig | None = None
    pods: tuple = ()                 # the claim's status.reservedFor pods
    # Allocated with our binding conditions (KEP-5007): the conductor
    # programmed the region before the pod was bound; never program here.
    bound_when_programmed: bool = False


@dataclasses.dataclass(frozen=True)
class DeviceNode:
    """A device node the container gets (CDI deviceNodes entry)."""
    path: str                        # inside the container
    host_path: str | None = None     # on the host, when it differs
    permissions: str | None = None   # r, w, m; None: the runtime's rwm

    def to_cdi(self):
        node = {'path': self.path}
        if self.host_path:
            node['hostPath'] = self.host_path
        if self.permissions:
            node['permissions'] = self.permissions
        return node


@dataclasses.dataclass(frozen=True)
class PreparedDevice:
    """What the container gets for one device."""
    device_nodes: tuple = ()         # DeviceNode
    env: tuple = ()                  # (name, value) pairs

    def check(self):
        """DevicePrepareError unless every field can go in a CDI spec,
        which refuses a device with no edit at all."""
        if not self.device_nodes and not self.env:
            raise DevicePrepareError('a prepared device needs a device node '
                                     'or an environment variable')
        for node in self.device_nodes:
            for path in (node.path, node.host_path):
                if path is not None and (
                        not isinstance(path, str) or
                        not os.path.isabs(path) or '\0' in path):
                    raise DevicePrepareError('device node path %r is not an '
                                             'absolute path' % (path,))
            if node.permissions is not None and \
                    not _PERMISSIONS_RE.fullmatch(node.permissions):
                raise DevicePrepareError('bad device node permissions %r'
                                         % (node.permissions,))
        for name, value in self.env:
            if not isinstance(name, str) or \
                    not _ENV_NAME_RE.fullmatch(name) or \
                    not isinstance(value, str) or '\0' in value:
                raise DevicePrepareError('bad environment variable %r=%r'
                                         % (name, value))
        return self
