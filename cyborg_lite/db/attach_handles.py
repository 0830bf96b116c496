"""Attach handles: claiming one for a bind and giving it back.

A handle (a PCI function, an mdev) is on at most one ARQ: ``in_use`` is
set and cleared only by the conditional UPDATEs here, and the UNIQUE
accelerator_requests.attach_handle_id refuses a second ARQ whatever else
goes wrong. Sibling handles may name the same function (the regions of a
card without SR-IOV are all reached through its PF); a claim writes the
function's key (``function_key``) into the UNIQUE ``in_use_function``, so
the database refuses the same function on a second ARQ through another
handle too, even when two binds race on two regions (or on two vGPU
types of one VF). The agent report's
sync of handles is db/inventory.py's.
"""
import collections
import functools
import hashlib
import json

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cyborg_lite.common import canonical_json
from cyborg_lite.conf import CONF
from cyborg_lite.db import models
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import conditional

HANDLE = models.AttachHandle
DEPLOYABLE = models.Deployable
DEVICE = models.Device


@functools.lru_cache(maxsize=65536)
def function_key(hostname, attach_info):
    """The key of the function a handle names: the same PCI function or
    mdev on the same host has the same key, whatever the JSON spelling."""
    try:
        info = json.loads(attach_info)
        if isinstance(info, dict):
            # NOTE: a VF's handle of each vGPU type names the VF: one
            # holder, whichever type it is given (drivers/nvidia_vgpu_vfio).
            info.pop('vgpu_type', None)
        info = canonical_json.dumps(info)
    except ValueError:
        info = attach_info
    return hashlib.sha256(('%s\n%s' % (hostname, info)).encode()).hexdigest()


Holder = collections.namedtuple('Holder', ['arq_uuid', 'deployable_name'])


_ARQ = models.AcceleratorRequest
_CLAIM = models.KubernetesClaimDevice
# Built once: every bind asks (db/devices.region_rows).
_HOLDERS = (sa.select(HANDLE.in_use_function, _ARQ.uuid, _CLAIM.claim_uid,
                      DEPLOYABLE.name)
            .join(DEPLOYABLE, DEPLOYABLE.id == HANDLE.deployable_id)
            .outerjoin(_ARQ, _ARQ.attach_handle_id == HANDLE.id)
            .outerjoin(_CLAIM, _CLAIM.attach_handle_id == HANDLE.id)
            .where(HANDLE.in_use_function.in_(
                sa.bindparam('keys', expanding=True))))


def holders(s, keys):
    """{key: Holder} of those ``keys`` whose function a handle holds now
    (arq_uuid: the ARQ's uuid or ``k8s:<claim uid>``; None: in use with no
    holder pointing at it, as left by an interrupted unbind of an older
    release)."""
    keys = set(keys)
    if not keys:
        return {}
    rows = s.connection().execute(_HOLDERS, {'keys': sorted(keys)})
    # A Kubernetes claim's holder is named k8s:<claim uid> (db/k8s_claims).
    return {key: Holder(arq_uuid or ('k8s:' + claim_uid if claim_uid
                                     else None), name)
            for key, arq_uuid, claim_uid, name in rows}


def blocked(s, handles, hostname, all_of_host=False):
    """{handle id: Holder} of the free ``handles`` whose function another
    handle holds.

    ``all_of_host``: ``handles`` are every handle of ``hostname``. A key
    names its host, so only a handle of the same host can hold it: only
    the keys its handles in use hold are looked up, and a host with none
    in use (most of a fleet) needs no hashing and no query."""
    held_here = None
    if all_of_host:
        held_here = {h.in_use_function for h in handles if h.in_use}
        held_here.discard(None)
        if not held_here:
            return {}
    keys = {h.id: function_key(hostname, h.attach_info)
            for h in handles if not h.in_use}
    if held_here is not None:
        keys = {handle_id: key for handle_id, key in keys.items()
                if key in held_here}
    held = holders(s, keys.values())
    return {handle_id: held[key] for handle_id, key in keys.items()
            if key in held}


def blocked_on_hosts(s, handles_of_host):
    """``blocked`` of every host of ``handles_of_host`` ({hostname: every
    handle of the host}) with one query for them all: {hostname:
    {handle id: Holder}}."""
    keys = {}
    for hostname, handles in handles_of_host.items():
        held_here = {h.in_use_function for h in handles if h.in_use}
        held_here.discard(None)
        for h in handles:
            if held_here and not h.in_use:
                key = function_key(hostname, h.attach_info)
                if key in held_here:
                    keys[h.id] = (hostname, key)
    held = holders(s, (key for _host, key in keys.values()))
    found = {hostname: {} for hostname in handles_of_host}
    for handle_id, (hostname, key) in keys.items():
        if key in held:
            found[hostname][handle_id] = held[key]
    return found


_CLAIM_HANDLE = conditional.statement(
    HANDLE, HANDLE.id == sa.bindparam('handle_id'),
    {'in_use': True, 'in_use_function': sa.bindparam('key')},
    HANDLE.version == sa.bindparam('expected_version'),
    HANDLE.in_use.is_(False))


def _claim(s, handle_id, version, key):
    """Mark the handle in use with its function's key; False when another
    transaction claimed the handle or the function first."""
    params = {'handle_id': handle_id, 'expected_version': version,
              'key': key}
    conn = s.connection()
    try:
        if conn.dialect.name == 'sqlite':
            # NOTE: no savepoint needed: SQLite undoes a statement refused
            # by a constraint and goes on with the transaction (and its
            # one writer at a time leaves no racing claim to refuse).
            return bool(conditional.run(s, _CLAIM_HANDLE, params))
        # NOTE: a savepoint, so the UNIQUE in_use_function refusing a
        # racing bind's function undoes this UPDATE only, and the next
        # candidate can be tried in the same transaction.
        with conn.begin_nested():
            return bool(conditional.run(s, _CLAIM_HANDLE, params))
    except sa_exc.IntegrityError:
        return False


def _hostname_of(s, deployable_id):
    return s.scalar(sa.select(DEVICE.hostname)
                    .join(DEPLOYABLE, DEPLOYABLE.device_id == DEVICE.id)
                    .where(DEPLOYABLE.id == deployable_id))


def claim_free(s, deployable_id):
    """Mark one free attach handle of the deployable in use; return it.

    Returns None when no handle is free, or when every free one names a
    function another handle holds. A conditional UPDATE on (in_use=false,
    version) decides between two binds of the region, the UNIQUE
    in_use_function between two binds of sibling regions.
    """
    hostname = _hostname_of(s, deployable_id)
    query = (sa.select(HANDLE.id, HANDLE.version, HANDLE.attach_info)
             .where(HANDLE.deployable_id == deployable_id,
                    HANDLE.in_use.is_(False))
             .order_by(HANDLE.id))
    if conditional.skip_locked(s):
        # NOTE: concurrent binds to one region then skip each other's
        # handle instead of queueing behind it.
        query = query.with_for_update(skip_locked=True)
    candidates = [(handle_id, version, function_key(hostname, info))
                  for handle_id, version, info in s.execute(query)]
    taken = holders(s, [key for _, _, key in candidates])
    for handle_id, version, key in candidates:
        if key not in taken and _claim(s, handle_id, version, key):
            return s.get(HANDLE, handle_id, populate_existing=True)
    return None


def claim_in_region(s, hostname, handles, blocked_handles):
    """Mark the first free handle of a region in use, from what the caller
    read under the region's lock (db/devices.region_rows: its ``handles``
    with their version, and ``blocked_handles``, those whose function
    another handle holds). Returns (handle id, function key), or None when
    none could be claimed.

    The region's lock keeps other binds of it out, so no locking read of
    the handles is needed: the conditional UPDATE on (in_use=false,
    version) still decides, and the UNIQUE in_use_function refuses a
    function a sibling region's bind claimed since.
    """
    for handle in handles:
        if handle.in_use or handle.id in blocked_handles:
            continue
        key = function_key(hostname, handle.attach_info)
        if _claim(s, handle.id, handle.version, key):
            return handle.id, key
    return None


# The handle's host, asked after every claim and free.
_HANDLE_HOST = (sa.select(DEVICE.hostname)
                .join(DEPLOYABLE, DEPLOYABLE.device_id == DEVICE.id)
                .join(HANDLE, HANDLE.deployable_id == DEPLOYABLE.id)
                .where(HANDLE.id == sa.bindparam('handle_id')))


def request_publish_if_offer_changed(s, handle_id, why, hostname=None):
    """Ask for the host to be published again when claiming or freeing
    this handle changed what is offered beyond Placement's own count of
    its allocation: on a host serving Kubernetes too, the region's taint
    in the ResourceSlices and its siblings' behind the same function.
    (Placement offers such siblings as one provider, whose allocation
    already counts the function: common/shared_functions.py.)

    ``hostname``, when the caller has it, spares reading it again."""
    if hostname is None:
        hostname = s.connection().execute(
            _HANDLE_HOST, {'handle_id': handle_id}).scalar()
    if hostname is not None and hostname in CONF.kubernetes.hosts:
        publish_requests.add(s, hostname, why)


_FREE = conditional.statement(HANDLE, HANDLE.id == sa.bindparam('handle_id'),
                              {'in_use': False, 'in_use_function': None},
                              HANDLE.in_use.is_(True))


def free(s, handle_id):
    """Mark the handle free; False if it was not in use (already freed)."""
    freed = bool(conditional.run(s, _FREE, {'handle_id': handle_id}))
    if freed:
        request_publish_if_offer_changed(s, handle_id,
                                         'attach handle freed')
    return freed
