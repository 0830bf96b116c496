"""NodePrepareResources / NodeUnprepareResources, whatever the transport.

Prepare of a claim: read it from the API and check it (claims.py), ask
``prepare_device`` for each of our devices (device_api.py: programming
happens there), write the claim's CDI spec, remember the claim on disk,
answer the CDI ids. Each claim runs in a worker thread so that a call
answers within ``prepare_timeout`` (below the kubelet's 45 s): a claim
still being prepared then gets an error, the kubelet calls again, and
that call waits on the same running preparation instead of starting one.
A claim already prepared gets the answer it got the first time.

Unprepare: remove the CDI spec, ``release_device`` each device, forget
the claim. A claim we do not know is already unprepared here; when given,
``release_claim(claim uid)`` is still called for it, so what a prepare cut
off before it was recorded (an agent killed mid-prepare) is given back.
"""
import concurrent.futures
import dataclasses
import logging
import threading
import time

from cyborg_lite.agent.dra import cdi
from cyborg_lite.agent.dra import claims
from cyborg_lite.agent.dra import device_api
from cyborg_lite.agent.dra import state

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ClaimOutcome:
    """The answer for one claim: its devices, or an error."""
    devices: tuple = ()               # state.PreparedDeviceRecord
    error: str = ''


def _done(outcome):
    future = concurrent.futures.Future()
    future.set_result(outcome)
    return future


class DraPlugin:

    def __init__(self, driver_name, node_name, claim_reader, prepare_device,
                 release_device, cdi_dir, state_dir, prepare_timeout,
                 release_claim=None,
                 max_workers=8):
        self.driver_name = driver_name
        self.node_name = node_name
        self.cdi_dir = cdi_dir
        self.prepare_timeout = prepare_timeout
        self._reader = claim_reader
        self._prepare_device = prepare_device
        self._release_device = release_device
        self._release_claim = release_claim
        self.store = state.PreparedClaimStore(state_dir)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers, thread_name_prefix='dra-prepare')
        self._lock = threading.Lock()
        self._running = {}            # claim uid -> Future of ClaimOutcome
        self._unpreparing = set()

    def close(self):
        self._executor.shutdown(wait=False, cancel_futures=True)

    # --- prepare ---------------------------------------------------------
    def prepare(self, refs):
        """{claim uid: ClaimOutcome} for claims.ClaimRef ``refs``."""
        deadline = time.monotonic() + self.prepare_timeout
        futures = {ref.uid: self._start(ref) for ref in refs}
        outcomes = {}
        for ref in refs:
            try:
                outcomes[ref.uid] = futures[ref.uid].result(
                    timeout=max(0.0, deadline - time.monotonic()))
            except concurrent.futures.TimeoutError:
                outcomes[ref.uid] = ClaimOutcome(error=(
                    'ResourceClaim %s/%s is still being prepared (a device '
                    'may be programming); retry to pick it up'
                    % (ref.namespace, ref.name)))
        return outcomes

    def _start(self, ref):
        with self._lock:
            if ref.uid in self._unpreparing:
                return _done(ClaimOutcome(error='ResourceClaim %s/%s is '
                                          'being unprepared' % (
                                              ref.namespace, ref.name)))
            running = self._running.get(ref.uid)
            if running is not None:
                return running
            prepared = self.store.get(ref.uid)
            if prepared is not None:
                return _done(ClaimOutcome(devices=prepared.devices))
            future = self._executor.submit(self._prepare_claim, ref)
            self._running[ref.uid] = future
            return future

    def _prepare_claim(self, ref):
        try:
            with self.store.claim_lock(ref.uid):
                return self._prepare_unless_prepared(ref)
        except Exception as e:
            return self._failed(ref, e)

    def _prepare_unless_prepared(self, ref):
        # NOTE: another agent on this node (a rolling update) may have
        # prepared the claim while this one waited for its lock.
        prepared = self.store.get(ref.uid)
        if prepared is None:
            prepared = self._prepare_new(ref)
        with self._lock:
            self._running.pop(ref.uid, None)
        return ClaimOutcome(devices=prepared.devices)

    def _prepare_new(self, ref):
        claim = self._reader.get(ref.namespace, ref.name)
        allocated = claims.allocated_devices(
            claim, ref, self.driver_name, self.node_name)
        groups = self._group(allocated)
        prepared = self._prepare_devices(ref, groups,
                                         claims.pods_of(claim, ref))
        cdi.write_spec(self.cdi_dir, self.driver_name, ref.uid,
                       [(key[1], device) for key, device in prepared])
        record = state.PreparedClaim(
            uid=ref.uid, namespace=ref.namespace, name=ref.name,
            devices=tuple(self._record(ref, key, groups[key])
                          for key, _ in prepared))
        self.store.put(record)
        LOG.info('Prepared ResourceClaim %s/%s (%s): %s', ref.namespace,
                 ref.name, ref.uid,
                 ', '.join(d.device_name for d in record.devices))
        return record

    def _failed(self, ref, e):
        if isinstance(e, (claims.ClaimError, device_api.DevicePrepareError)):
            LOG.warning('ResourceClaim %s/%s not prepared: %s',
                        ref.namespace, ref.name, e)
            message = str(e)
        else:
            LOG.exception('ResourceClaim %s/%s not prepared',
                          ref.namespace, ref.name)
            message = 'unexpected error: %s' % (e,)
        with self._lock:
            self._running.pop(ref.uid, None)
        return ClaimOutcome(error=message)

    @staticmethod
    def _group(allocated):
        """Results by (pool, device, share id): one device serving several
        requests is prepared once and named once in the CDI spec."""
        groups = {}
        for item in allocated:
            groups.setdefault((item.pool, item.device, item.share_id),
                              []).append(item)
        return groups

    def _prepare_devices(self, ref, groups, pods=()):
        done = []
        try:
            for key, items in groups.items():
                first = items[0]
                configs = {i.config for i in items}
                if len(configs) > 1:
                    raise device_api.DevicePrepareError(
                        'device %s is asked with different configs by '
                        'requests %s' % (first.device, ', '.join(
                            i.request for i in items)))
                device = self._prepare_device(device_api.DevicePrepareRequest(
                    claim_uid=ref.uid, namespace=ref.namespace,
                    claim_name=ref.name, request=first.base_request,
                    pool=first.pool, device=first.device,
                    admin_access=all(i.admin_access for i in items),
                    config=first.config, pods=pods,
                    bound_when_programmed=first.bound_when_programmed))
                if not isinstance(device, device_api.PreparedDevice):
                    raise device_api.DevicePrepareError(
                        'prepare_device returned %r' % (device,))
                done.append((key, device.check()))
        except Exception:
            self._release_quietly(ref, [key for key, _ in done])
            raise
        return done

    def _release_quietly(self, ref, keys):
        """Give back what a failed prepare took; the retry takes it again."""
        for pool, device, _ in keys:
            try:
                self._release_device(ref.uid, pool, device)
            except Exception:
                LOG.exception('Releasing %s/%s of claim %s after a failed '
                              'prepare', pool, device, ref.uid)

    def _record(self, ref, key, items):
        pool, device, share_id = key
        names = []
        for item in items:
            if item.base_request not in names:
                names.append(item.base_request)
        return state.PreparedDeviceRecord(
            request_names=tuple(names), pool_name=pool, device_name=device,
            cdi_device_ids=(cdi.device_id(self.driver_name, ref.uid,
                                          device),),
            share_id=share_id)

    # --- unprepare -------------------------------------------------------
    def unprepare(self, refs):
        """{claim uid: error text, '' when unprepared}."""
        deadline = time.monotonic() + self.prepare_timeout
        return {ref.uid: self._unprepare_one(ref, deadline) for ref in refs}

    def _unprepare_one(self, ref, deadline):
        with self._lock:
            running = self._running.get(ref.uid)
        if running is not None:
            try:
                running.result(timeout=max(0.0, deadline - time.monotonic()))
            except concurrent.futures.TimeoutError:
                return ('ResourceClaim %s/%s is still being prepared; retry '
                        'to unprepare it' % (ref.namespace, ref.name))
        with self._lock:
            if ref.uid in self._running or ref.uid in self._unpreparing:
                return ('ResourceClaim %s/%s is busy; retry'
                        % (ref.namespace, ref.name))
            self._unpreparing.add(ref.uid)
        try:
            return self._undo(ref)
        finally:
            with self._lock:
                self._unpreparing.discard(ref.uid)

    def _undo(self, ref):
        try:
            with self.store.claim_lock(ref.uid, last=True):
                prepared = self._undo_locked(ref)
        except Exception as e:
            LOG.exception('ResourceClaim %s/%s not unprepared',
                          ref.namespace, ref.name)
            return 'unpreparing ResourceClaim %s/%s: %s' % (
                ref.namespace, ref.name, e)
        if prepared:
            LOG.info('Unprepared ResourceClaim %s/%s (%s)', ref.namespace,
                     ref.name, ref.uid)
        return ''

    def _undo_locked(self, ref):
        """Unprepare ``ref`` holding its lock, whichever agent on this node
        prepared it; what was prepared, or None."""
        cdi.remove_spec(self.cdi_dir, self.driver_name, ref.uid)
        prepared = self.store.get(ref.uid)
        for device in prepared.devices if prepared else ():
            self._release_device(ref.uid, device.pool_name,
                                 device.device_name)
        if prepared is None and self._release_claim is not None:
            self._release_claim(ref.uid)
        self.store.remove(ref.uid)
        return prepared
