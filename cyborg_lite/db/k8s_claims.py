"""Regions prepared for Kubernetes ResourceClaims: every query and
transaction of k8s_claim_devices.

A claim holds a region the way a Bound ARQ does: one of its attach
handles is in use, written on the claim's row (UNIQUE attach_handle_id).
``claim`` takes it under the same locks and rules as db/arq_binds.finish_bind
(device shared, region exclusive, then the handle), so a Nova bind and a
claim racing for one region have exactly one winner, whatever the
backend: whichever commits first holds the handle, and the other sees it
held (or the UNIQUE constraints refuse it). The holder's name is
``k8s:<claim uid>`` (``holder_name``).
"""
import collections

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from cyborg_lite.common import exception
from cyborg_lite.common import uuids
from cyborg_lite.db import attach_handles
from cyborg_lite.db import cleaning
from cyborg_lite.db import deployables
from cyborg_lite.db import device_history
from cyborg_lite.db import devices
from cyborg_lite.db import instance_removals
from cyborg_lite.db import models
from cyborg_lite.db import publish_requests
from cyborg_lite.db.sql import session
from cyborg_lite.inventory import views as host_inventory
from cyborg_lite.notifications import events as notifications

CLAIM = models.KubernetesClaimDevice
HANDLE = models.AttachHandle
HOLDER_PREFIX = 'k8s:'

# What a claimed region looks like to the conductor's prepare.
Claimed = collections.namedtuple('Claimed', [
    'id', 'claim_uid', 'deployable_id', 'attach_type', 'attach_info',
    'job_uuid', 'new', 'namespace'])


def holder_name(claim_uid):
    return HOLDER_PREFIX + claim_uid


def _claimed(s, row, new):
    handle = s.get(HANDLE, row.attach_handle_id)
    job = (s.get(models.ProgrammingJob, row.programming_job_id)
           if row.programming_job_id is not None else None)
    return Claimed(row.id, row.claim_uid, row.deployable_id,
                   handle.attach_type, handle.attach_info,
                   job.uuid if job is not None else None, new,
                   row.namespace)


def _find(s, claim_uid, device_name):
    return s.scalars(sa.select(CLAIM).where(
        CLAIM.claim_uid == claim_uid,
        CLAIM.device_name == device_name)).first()


def holds(claim_uid, deployable_id):
    """Whether the claim holds the region now."""
    with session.reader() as s:
        return s.scalar(sa.select(CLAIM.id).where(
            CLAIM.claim_uid == claim_uid,
            CLAIM.deployable_id == deployable_id).limit(1)) is not None


def region_holder(s, deployable_id):
    """Who holds a handle of the region: an ARQ's uuid, ``k8s:<uid>``, or
    None when every handle is free."""
    arq = models.AcceleratorRequest
    row = s.execute(
        sa.select(arq.uuid, CLAIM.claim_uid)
        .select_from(HANDLE)
        .outerjoin(arq, arq.attach_handle_id == HANDLE.id)
        .outerjoin(CLAIM, CLAIM.attach_handle_id == HANDLE.id)
        .where(HANDLE.deployable_id == deployable_id,
               HANDLE.in_use.is_(True)).limit(1)).first()
    if row is None:
        return None
    arq_uuid, claim_uid = row
    return holder_name(claim_uid) if claim_uid else (arq_uuid or 'unknown')


def claim(deployable_id, claim_uid, namespace, claim_name, device_name,
          project_id=None, pods=()):
    """Hold a handle of the region for the claim's device ``device_name``,
    in one transaction; a Claimed. The same claim asking again for the
    device gets its row back (``new`` False); another device of the same
    deployable (a second vGPU of one type) holds another handle (VF).
    ClaimRefused with the reason when the
    region is gone, held by another (a vGPU type: when no VF is free),
    being programmed for another (or a sibling behind its PCI function
    is: deployables.sibling_programming), or the availability
    decision (inventory/views.region_refusal, on rows read under the
    locks) says why not.
    ``pods``: the pod names the claim is reserved for, kept as they were
    at its first Prepare.
    """
    def refused(reason):
        return exception.ClaimRefused(claim=claim_uid, device=device_name,
                                      reason=reason)
    try:
        with session.writer() as s:
            found = _find(s, claim_uid, device_name)
            if found is not None and found.deployable_id != deployable_id:
                raise refused('the claim holds %s as another deployable'
                              % device_name)
            if found is not None:
                return _claimed(s, found, False)
            locked = deployables.lock_for_bind(s, deployable_id)
            if locked is None:
                raise refused('the region is gone')
            device, region = locked
            job = deployables.active_job_on(s, deployable_id)
            if job is not None:
                raise refused('region %s is being programmed by job %s'
                              % (region.uuid, job))
            rows = devices.region_rows(s, device, region)
            # NOTE: a vGPU type's VFs are held one by one (the handle's
            # UNIQUE function): one holder leaves the others free.
            holder = None if devices.makes_instance(
                rows, deployable_id) else region_holder(s, deployable_id)
            if holder is not None:
                raise refused('region %s is in use by %s'
                              % (region.uuid, holder))
            why = (deployables.sibling_programming(s, rows)
                   or host_inventory.region_refusal(
                       rows, for_kubernetes=True))
            if why:
                raise refused(why)
            handle = attach_handles.claim_free(s, deployable_id)
            if handle is None:
                raise refused('no free attach handle on region %s'
                              % region.uuid)
            row = CLAIM(uuid=uuids.new(), claim_uid=claim_uid,
                        namespace=namespace, claim_name=claim_name,
                        device_name=device_name, project_id=project_id,
                        pods=','.join(pods) or None,
                        deployable_id=deployable_id,
                        attach_handle_id=handle.id)
            s.add(row)
            s.flush()
            cleaning.mark_allocated(s, deployable_id)
            attach_handles.request_publish_if_offer_changed(
                s, handle.id, 'attach handle claimed')
            # Placement must reserve it (kubernetes_claimed): published
            # by whichever conductor serves the request.
            publish_requests.add(s, device.hostname, 'claimed by %s'
                                 % holder_name(claim_uid))
            _record(s, 'k8s_claim.prepare', row, device_history.Place(
                device.uuid, region.uuid, device.hostname))
            return _claimed(s, row, True)
    except sa_exc.IntegrityError:
        # NOTE: a racing bind or claim took the handle or function first;
        # the rollback undid ours.
        raise refused('the attach handle was taken by another holder')


def pod_list(pods):
    """The pod names of a row's ``pods`` column, as a list."""
    return pods.split(',') if pods else []


def _record(s, event, row, place):
    device_history.record(s, notifications.Event(event, {
        'claim_uid': row.claim_uid, 'namespace': row.namespace,
        'claim_name': row.claim_name, 'device_name': row.device_name,
        'deployable_uuid': place.deployable_uuid,
        'device_uuid': place.device_uuid, 'hostname': place.hostname,
        'project_id': row.project_id, 'pods': pod_list(row.pods)},
        device_uuid=place.device_uuid,
        deployable_uuid=place.deployable_uuid,
        state='claimed' if event == 'k8s_claim.prepare' else 'released',
        object_uuid=row.claim_uid))


def set_job(claim_id, job_uuid):
    """Remember the job loading the region for the claim."""
    job = models.ProgrammingJob
    with session.writer() as s:
        s.execute(sa.update(CLAIM).where(CLAIM.id == claim_id).values(
            programming_job_id=sa.select(job.id).where(
                job.uuid == job_uuid).scalar_subquery()))


# The claim a programming job loads a region for (``of_job``).
JobClaim = collections.namedtuple('JobClaim', [
    'claim_uid', 'namespace', 'claim_name', 'device_name', 'hostname'])


def of_job(job_uuid):
    """The JobClaim whose region ``job_uuid`` loads; None when no claim
    holds a region for it (a bind's job, or the claim released)."""
    job = models.ProgrammingJob
    with session.reader() as s:
        row = s.execute(
            sa.select(CLAIM.claim_uid, CLAIM.namespace, CLAIM.claim_name,
                      CLAIM.device_name, models.Device.hostname)
            .join(job, job.id == CLAIM.programming_job_id)
            .join(models.Deployable,
                  models.Deployable.id == CLAIM.deployable_id)
            .join(models.Device,
                  models.Device.id == models.Deployable.device_id)
            .where(job.uuid == job_uuid)).first()
    return JobClaim(*row) if row is not None else None


def release(claim_uid, deployable_id=None):
    """Free what the claim holds (of one region, or all), in one
    transaction; each released region waits for its wipe before the next
    tenant (db/cleaning.release), as after an unbind. Returns the
    hostnames of the regions that now wait for it. Releasing twice is
    harmless."""
    to_clean = set()
    with session.writer() as s:
        query = sa.select(CLAIM).where(CLAIM.claim_uid == claim_uid)
        if deployable_id is not None:
            query = query.where(CLAIM.deployable_id == deployable_id)
        for row in s.scalars(query.with_for_update()).all():
            place = device_history.place_of_region(s, row.deployable_id)
            to_clean.add(instance_removals.release_handle(
                s, row.attach_handle_id))
            hostname = s.scalar(
                sa.select(models.Device.hostname)
                .join(models.Deployable,
                      models.Deployable.device_id == models.Device.id)
                .where(models.Deployable.id == row.deployable_id))
            # Placement offers it again (no longer kubernetes_claimed).
            publish_requests.add(s, hostname, 'released by %s'
                                 % holder_name(claim_uid))
            s.delete(row)
            _record(s, 'k8s_claim.unprepare', row, place)
    to_clean.discard(None)
    return to_clean
