"""ResourceClaims as the kubelet plugin sees them.

The kubelet names a claim only (namespace, name, uid); the plugin reads
the claim from the API and checks it before touching a device: the uid
must match (a claim deleted and re-created under the same name is another
claim), it must be allocated, and every device of our driver must come
from this node's pool (k8s.io/dynamic-resource-allocation does the same
in kubeletplugin.getResourceClaims).
"""
import dataclasses

import kubernetes

from cyborg_lite.kubernetes import claim_config
from cyborg_lite.kubernetes import client as k8s_client
from cyborg_lite.kubernetes import names as k8s_names


class ClaimError(Exception):
    """This claim cannot be prepared as it stands; the message says why."""


@dataclasses.dataclass(frozen=True)
class ClaimRef:
    namespace: str
    name: str
    uid: str


@dataclasses.dataclass(frozen=True)
class AllocatedDevice:
    """One device of our driver allocated to a claim on this node."""
    request: str                    # "main" or "main/sub" (firstAvailable)
    pool: str
    device: str
    admin_access: bool = False
    share_id: str | None = None
    config: claim_config.FpgaConfig | None = None
    # The scheduler waited for our binding conditions (the allocation
    # result carries them): the region was programmed before the bind.
    bound_when_programmed: bool = False

    @property
    def base_request(self):
        return self.request.split('/', 1)[0]


class KubeClaimReader:
    """Reads ResourceClaims with the official client (resource.k8s.io/v1)."""

    def __init__(self, api_client):
        self._api = kubernetes.client.ResourceV1Api(api_client)

    def get(self, namespace, name):
        """The claim as the API holds it (a dict); ClaimError if missing."""
        try:
            return k8s_client.raw_json(
                self._api.read_namespaced_resource_claim(
                    name, namespace, _preload_content=False))
        except kubernetes.client.exceptions.ApiException as e:
            if e.status == k8s_client.NOT_FOUND:
                raise ClaimError('ResourceClaim %s/%s not found'
                                 % (namespace, name)) from e
            raise ClaimError('reading ResourceClaim %s/%s: HTTP %s'
                             % (namespace, name, e.status)) from e
        except Exception as e:   # transport: the kubelet will retry
            raise ClaimError('reading ResourceClaim %s/%s: %s'
                             % (namespace, name, e)) from e


def pods_of(claim, ref):
    """The names of the pods ``claim`` is reserved for (its
    status.reservedFor entries of core pods); ClaimError when one is not
    a pod name."""
    reserved = (claim.get('status') or {}).get('reservedFor') or []
    if not isinstance(reserved, list):
        raise ClaimError('ResourceClaim %s/%s: status.reservedFor is not a '
                         'list' % (ref.namespace, ref.name))
    names = [entry.get('name') for entry in reserved
             if isinstance(entry, dict) and entry.get('resource') == 'pods'
             and not entry.get('apiGroup')]
    try:
        return k8s_names.pod_names(names)
    except ValueError as e:
        raise ClaimError('ResourceClaim %s/%s: status.reservedFor: %s'
                         % (ref.namespace, ref.name, e)) from e


def allocated_devices(claim, ref, driver_name, pool_name):
    """Our devices in ``claim``, with the config that applies to each.

    ClaimError when the claim is not the one the kubelet named, is not
    allocated, holds a device of ours from another pool, holds none of
    ours, or carries a bad config for our driver."""
    uid = (claim.get('metadata') or {}).get('uid')
    if uid != ref.uid:
        raise ClaimError('ResourceClaim %s/%s has uid %s, not %s: it was '
                         'replaced' % (ref.namespace, ref.name, uid, ref.uid))
    allocation = (claim.get('status') or {}).get('allocation')
    if not allocation:
        raise ClaimError('ResourceClaim %s/%s is not allocated'
                         % (ref.namespace, ref.name))
    devices = allocation.get('devices') or {}
    ours = [r for r in devices.get('results') or []
            if r.get('driver') == driver_name]
    if not ours:
        raise ClaimError('ResourceClaim %s/%s has no device of driver %s'
                         % (ref.namespace, ref.name, driver_name))
    result = []
    for item in ours:
        if item.get('pool') != pool_name:
            raise ClaimError('device %s/%s of ResourceClaim %s/%s is not on '
                             'this node (pool %s)' % (
                                 item.get('pool'), item.get('device'),
                                 ref.namespace, ref.name, pool_name))
        try:
            config = claim_config.for_request(devices.get('config'),
                                              item.get('request', ''),
                                              driver_name)
        except claim_config.ConfigError as e:
            raise ClaimError('ResourceClaim %s/%s: %s'
                             % (ref.namespace, ref.name, e)) from e
        result.append(AllocatedDevice(
            request=item.get('request', ''), pool=item['pool'],
            device=item.get('device', ''),
            admin_access=bool(item.get('adminAccess')),
            share_id=item.get('shareID'), config=config,
            bound_when_programmed=claim_config.bound_when_programmed(
                item, driver_name)))
    return result
