"""Whether the cluster keeps the gated fields we publish, found out by
asking it.

Two things we write into ResourceSlices are behind Kubernetes feature
gates that are off by default on releases we serve:

- device taints (``DRADeviceTaints``: alpha, off by default, from 1.33;
  beta and on from 1.36; GA in 1.37);
- binding conditions (``DRADeviceBindingConditions``, with
  ``DRAResourceClaimDeviceStatus``: alpha, off, in 1.34; beta and on from
  1.36; kube-apiserver and kube-scheduler), with which a region that may
  need programming binds its pod only once programmed (KEP-5007,
  kubernetes/binding.py);
- the shared counters of partitionable devices (``DRAPartitionableDevices``:
  alpha, off, from 1.33; beta and on from 1.36; kube-apiserver and
  kube-scheduler), with which regions behind one PCI function are
  published (kubernetes/counters.py).

An apiserver with a gate off drops the gate's fields from every slice it
is sent (its dropDisabledFields, unless the stored slice already uses
them) and answers as if nothing happened. A written field that does not
come back is how a cluster says it ignores it (k8s.io/dynamic-resource-
allocation's resourceslice controller reports it the same way, as a
DroppedFieldsError). An apiserver of 1.34 with the counters gate on
refuses our counters instead (422: it wants the counter sets in the slice
of the devices that consume them; slices of their own came in 1.35).

So before a sync first writes such a field, slice_sync asks with a dry run
(a create with ``dryRun=All``: completed and checked as a real create, not
stored), one per field, and it checks the answer of every real write too.
Where a field does not come back, or is refused, the slices are built
without it, which is said once in the log:

- without taints, devices that would carry a NoSchedule or NoExecute
  taint are left out (k8s_slices.untainted; an effect None taint is only
  dropped);
- without counters, each region behind a shared function is a device of
  its own, as before counters: its siblings are tainted (or left out)
  while one is held, and two claims allocated in the same instant may get
  two of them, the second Prepare then refused;
- without binding conditions, a pod binds to its node as soon as its
  claim is allocated, and the region is programmed in the kubelet's
  Prepare, as before binding conditions (kubernetes/claims.py).

A cluster found without a field is asked again after ``REASK_INTERVAL``
seconds: an upgrade may turn it on.
"""
import dataclasses
import logging
import time
import typing

LOG = logging.getLogger(__name__)

REASK_INTERVAL = 3600


def taint_counts(obj):
    """{device name: number of taints} of a ResourceSlice."""
    return {d['name']: len(d.get('taints') or [])
            for d in obj.get('spec', {}).get('devices') or []}


def counter_counts(obj):
    """{(what, name): number of counters} of a ResourceSlice: each counter
    set it defines, each device's consumption."""
    spec = obj.get('spec', {})
    counts = {('set', s['name']): len(s.get('counters') or {})
              for s in spec.get('sharedCounters') or []}
    counts.update({('device', d['name']): sum(
        len(c.get('counters') or {}) for c in d.get('consumesCounters') or [])
        for d in spec.get('devices') or []})
    return counts


def binding_condition_counts(obj):
    """{device name: number of binding conditions} of a ResourceSlice."""
    return {d['name']: len(d.get('bindingConditions') or []) +
            len(d.get('bindingFailureConditions') or [])
            for d in obj.get('spec', {}).get('devices') or []}


@dataclasses.dataclass(frozen=True)
class GatedField:
    name: str                   # as said in the log
    gate: str                   # the Kubernetes feature gate
    counts: typing.Callable     # slice -> {where: how many of it}
    instead: str                # what is published where it is dropped
    again: str                  # what is published once it is kept again


TAINTS = GatedField(
    'device taints', 'DRADeviceTaints', taint_counts,
    'Devices that would carry a NoSchedule or NoExecute taint '
    '(unavailable: maintaining, cleaning, held by Nova, ...) are left out '
    'of the ResourceSlices instead.',
    'unavailable devices are published again, tainted.')

SHARED_COUNTERS = GatedField(
    'shared counters', 'DRAPartitionableDevices', counter_counts,
    'Regions that share one PCI function are published as devices of '
    'their own instead, tainted while a sibling is held: the scheduler may '
    'allocate two of them at once, and the second Prepare is then refused. '
    'The kube-scheduler needs the gate too.',
    'regions that share a PCI function consume its counter again.')


BINDING_CONDITIONS = GatedField(
    'binding conditions', 'DRADeviceBindingConditions',
    binding_condition_counts,
    'Regions are published without them: a pod binds to its node as soon '
    'as its claim is allocated, and its region is programmed in the '
    'kubelet\'s Prepare instead. The kube-scheduler needs the gate too.',
    'a pod waits for its region to be programmed before it binds again.')


class FieldSupport:
    """What the sync knows of the cluster's support for one GatedField."""

    def __init__(self, field, wanted=True, clock=time.monotonic):
        self.field = field
        self.wanted = wanted        # the [kubernetes] option that asks for it
        self.clock = clock
        self.kept = None            # unknown until asked
        self._asked_at = None

    def used(self, obj):
        """Whether the ResourceSlice ``obj`` has this field."""
        return any(self.field.counts(obj).values())

    def publish(self):
        """Whether slices may be built with the field now."""
        if not self.wanted:
            return False
        return self.kept is not False or self._ask_again()

    def unsure(self):
        """Whether a write with the field must first be tried as a dry
        run."""
        return self.wanted and (self.kept is None or
                                (self.kept is False and self._ask_again()))

    def _ask_again(self):
        return self.clock() - self._asked_at >= REASK_INTERVAL

    def observed(self, sent, stored):
        """Learn from a write (or dry run) of ``sent`` answered with
        ``stored``; whether the field sent was kept."""
        sent_counts = self.field.counts(sent)
        if not any(sent_counts.values()):
            return True
        counts = self.field.counts(stored)
        kept = all(counts.get(where, 0) >= count
                   for where, count in sent_counts.items())
        self._learn(kept, 'dropped the %s of ResourceSlice %s: the cluster '
                    'does not have them (the %s feature gate, on by default '
                    'from Kubernetes 1.36)' % (
                        self.field.name, sent['metadata'].get('name'),
                        self.field.gate))
        return kept

    def refused(self, sent, reason):
        """A dry run of ``sent`` with the field was refused as invalid."""
        self._learn(False, 'refused the %s of ResourceSlice %s: %s' % (
            self.field.name, sent['metadata'].get('name'), reason))

    def _learn(self, kept, what_happened):
        if kept and self.kept is False:
            LOG.info('The Kubernetes API keeps %s now: %s', self.field.name,
                     self.field.again)
        elif not kept and self.kept is not False:
            LOG.warning('The Kubernetes API %s. %s', what_happened,
                        self.field.instead)
        self.kept = kept
        self._asked_at = self.clock()
