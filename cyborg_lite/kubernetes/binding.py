"""Binding conditions (KEP-5007), conductor side: a region is programmed
before its pod binds to the node, not in the kubelet's Prepare.

Regions that may need programming are published with the binding
condition ``<driver>/programmed`` and the failure condition
``<driver>/programming-failed`` (kubernetes/slices.py, where the cluster
keeps them: gated_fields). The scheduler copies them into the claim's
allocation result and waits, the pod unbound, until the first is True in
the claim's ``status.devices[].conditions`` (or the second is, and it
allocates again). ``ClaimBinding`` is that waiting's other side:

- ``seen(claim)`` (kubernetes/claim_watch.py: every claim listed, added
  or modified) takes each result of ours that waits for our condition,
  on a host of ``[kubernetes]hosts``, holds the region for the claim and
  starts the job that loads what its config asks for, as Prepare would
  (ClaimFlow.program_for_binding: the same checks, hold and job), and
  writes the condition False with the job in its message; or True at once
  when the region runs it already; or the failure condition with the
  refusal;
- ``job_changed(job_uuid)``, from the job's progress reports (the
  conductor's job_progress, as a job's end resumes an ARQ bind), writes
  its progress in the message, and at its end True, or the failure
  condition with the job's error (the region is then freed and wiped,
  as after a failed Prepare). No thread waits for a job.

A conductor started again lists every claim: a condition left unwritten
by one killed between a job's end and the write is written then. The
kubelet's Prepare of a claim allocated so (the agent tells it by the
result's bindingConditions) never programs (kubernetes/claims.py). An
unchanged condition is not written again.
"""
import datetime
import threading

import kubernetes
from oslo_log import log as logging

from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.conf import CONF
from cyborg_lite.db import k8s_claims as claims_db
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.kubernetes import claim_config
from cyborg_lite.kubernetes import claim_watch
from cyborg_lite.kubernetes import client as k8s_client
from cyborg_lite.kubernetes import view as k8s_view

LOG = logging.getLogger(__name__)

CONFLICT_RETRIES = 5
MAX_MESSAGE = 1024          # of the API's 32768: a job's error is short
RUNNING = 'Programming'
PROGRAMMED = 'Programmed'
FAILED = 'ProgrammingFailed'


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


class ClaimBinding:

    def __init__(self, flow, api_client, conf=CONF):
        self.flow = flow                    # kubernetes/claims.ClaimFlow
        self.conf = conf
        self.driver = conf.kubernetes.driver_name
        self.programmed = claim_config.programmed_condition(self.driver)
        self.failed = claim_config.programming_failed_condition(self.driver)
        self.hosts = {k8s_view.node_name(conf, h): h
                      for h in conf.kubernetes.hosts}
        self._resource = kubernetes.client.ResourceV1Api(api_client)
        # The claim watch's thread and the RPC workers reporting jobs.
        self._lock = threading.Lock()

    # --- the scheduler allocated a claim -------------------------------
    def seen(self, claim):
        if not self._waiting(claim):
            return
        # NOTE: the watch's copy may be older than a job's end written
        # meanwhile (and its region freed): decided on the claim as it is
        # now, one claim event or job end at a time.
        with self._lock:
            meta = claim['metadata']
            claim = self._read(meta['namespace'], meta['name'])
            if claim is None or claim['metadata'].get('uid') != meta['uid']:
                return
            for result in self._waiting(claim):
                self._start(claim, result)

    def gone(self, claim):
        """A claim deleted before its pod was bound: what it holds goes."""
        uid = claim['metadata'].get('uid')
        with self._lock:
            for result in self._results(claim):
                self.flow.release(self.hosts[result['pool']], uid,
                                  result['device'])

    def _results(self, claim):
        allocation = (claim.get('status') or {}).get('allocation') or {}
        return [r for r in (allocation.get('devices') or {}).get(
                    'results') or []
                if r.get('driver') == self.driver and r.get('pool') in
                self.hosts and claim_config.bound_when_programmed(
                    r, self.driver)]

    def _waiting(self, claim):
        """Our results whose binding condition is not decided yet."""
        done = set()
        for entry in (claim.get('status') or {}).get('devices') or []:
            if any(c.get('status') == 'True' and c.get('type') in (
                    self.programmed, self.failed)
                   for c in entry.get('conditions') or []):
                done.add((entry.get('pool'), entry.get('device')))
        return [r for r in self._results(claim)
                if (r['pool'], r['device']) not in done]

    def _decided(self, claim, result):
        key = (result['pool'], result['device'])
        return key not in {(r['pool'], r['device'])
                           for r in self._waiting(claim)}

    def _start(self, claim, result):
        meta = claim['metadata']
        request = {'claim_uid': meta['uid'], 'namespace': meta['namespace'],
                   'claim_name': meta['name'], 'pool': result['pool'],
                   'device': result['device']}
        try:
            config = claim_config.for_request(
                claim['status']['allocation']['devices'].get('config'),
                result.get('request', ''), self.driver)
            request['config'] = config.to_dict() if config else None
            job_uuid = self.flow.program_for_binding(
                self.hosts[result['pool']], request)
        except exception.DatabaseUnavailable:
            raise       # not the claim's fault: the next resync retries
        except (claim_config.ConfigError,
                exception.CyborgLiteException) as e:
            LOG.warning('ResourceClaim %s/%s, device %s: not programmed: '
                        '%s', meta['namespace'], meta['name'],
                        result['device'], e)
            self._write(claim, result, failure=exception.error_text(e))
            return
        if job_uuid is None:
            self._write(claim, result)
        else:
            self._job_state(claim, result, jobs_db.get(job_uuid))

    # --- a job of a claim's region moved ---------------------------------
    def job_changed(self, job_uuid):
        """A programming job reported progress or ended: the condition of
        the claim it loads a region for follows."""
        held = claims_db.of_job(job_uuid)
        if held is None:
            return
        with self._lock:
            self._job_changed(held, job_uuid)

    def _job_changed(self, held, job_uuid):
        pool = k8s_view.node_name(self.conf, held.hostname)
        claim = self._read(held.namespace, held.claim_name)
        if claim is None or claim['metadata'].get('uid') != held.claim_uid:
            return
        for result in self._waiting(claim):
            if (result['pool'], result['device']) == (pool,
                                                      held.device_name):
                self._job_state(claim, result, jobs_db.get(job_uuid))

    def _job_state(self, claim, result, job):
        if job.state == 'succeeded':
            self._write(claim, result)
        elif job.state in states.JOB_TERMINAL:
            error = 'programming job %s %s: %s' % (
                job.uuid, job.state, job.error or 'no reason given')
            self._write(claim, result, failure=error)
            self.flow.release(self.hosts[result['pool']],
                              claim['metadata']['uid'], result['device'])
        else:
            self._write(claim, result, running='programming job %s is %s'
                        % (job.uuid, job.state))

    # --- the claim's status ----------------------------------------------
    def _conditions(self, running=None, failure=None):
        if failure is not None:
            return [(self.programmed, 'False', FAILED, failure),
                    (self.failed, 'True', FAILED, failure)]
        if running is not None:
            return [(self.programmed, 'False', RUNNING, running)]
        return [(self.programmed, 'True', PROGRAMMED,
                 'the region runs what the claim asks for')]

    def _write(self, claim, result, running=None, failure=None):
        wanted = self._conditions(running, failure)
        meta = claim['metadata']
        for _ in range(CONFLICT_RETRIES):
            claim = self._read(meta['namespace'], meta['name'])
            if claim is None or claim['metadata'].get('uid') != meta['uid']:
                return
            if running is not None and self._decided(claim, result):
                return          # a job's end was written meanwhile
            if not _set(claim, self.driver, result, wanted):
                return          # unchanged: no write
            try:
                k8s_client.discard(
                    self._resource.replace_namespaced_resource_claim_status(
                        meta['name'], meta['namespace'], claim,
                        _preload_content=False))
                LOG.info('ResourceClaim %s/%s, device %s: %s', meta[
                    'namespace'], meta['name'], result['device'],
                    '; '.join('%s=%s (%s)' % c[:3] for c in wanted))
                return
            except kubernetes.client.exceptions.ApiException as e:
                if e.status != k8s_client.CONFLICT:
                    raise k8s_client.KubernetesApiError(
                        reason='status of ResourceClaim %s/%s: HTTP %s %s'
                        % (meta['namespace'], meta['name'], e.status,
                           e.body))
        raise k8s_client.KubernetesApiError(
            reason='status of ResourceClaim %s/%s: still conflicting'
            % (meta['namespace'], meta['name']))

    def _read(self, namespace, name):
        try:
            return k8s_client.raw_json(
                self._resource.read_namespaced_resource_claim(
                    name, namespace, _preload_content=False))
        except kubernetes.client.exceptions.ApiException as e:
            if e.status == k8s_client.NOT_FOUND:
                return None
            raise


def _set(claim, driver, result, wanted):
    """Put the ``wanted`` conditions (type, status, reason, message) in
    the claim's status.devices entry of ``result``; whether that changed
    the claim."""
    devices = claim.setdefault('status', {}).setdefault('devices', [])
    key = (driver, result['pool'], result['device'])
    entry = next((d for d in devices
                  if (d.get('driver'), d.get('pool'), d.get('device')) ==
                  key), None)
    if entry is None:
        entry = {'driver': driver, 'pool': result['pool'],
                 'device': result['device']}
        if result.get('shareID'):
            entry['shareID'] = result['shareID']
        devices.append(entry)
    conditions = entry.setdefault('conditions', [])
    changed = False
    for ctype, status, reason, message in wanted:
        message = message[:MAX_MESSAGE]
        old = next((c for c in conditions if c.get('type') == ctype), None)
        if old is not None and (old.get('status'), old.get('reason'),
                                old.get('message')) == (status, reason,
                                                        message):
            continue
        new = {'type': ctype, 'status': status, 'reason': reason,
               'message': message,
               'observedGeneration': claim['metadata'].get('generation', 0),
               'lastTransitionTime': old['lastTransitionTime']
               if old is not None and old.get('status') == status
               else _now()}
        if old is not None:
            conditions[conditions.index(old)] = new
        else:
            conditions.append(new)
        changed = True
    return changed


def watch_claims(flow, api_client, conf=CONF):
    """A ClaimBinding for ``flow`` (ClaimFlow), fed by a ClaimWatch of the
    cluster's claims, started; (binding, watch)."""
    binding = ClaimBinding(flow, api_client, conf)
    watch = claim_watch.ClaimWatch(api_client, binding.seen,
                                   binding.gone).start()
    LOG.info('Watching ResourceClaims: regions allocated with the binding '
             'condition %s are programmed before their pods bind',
             binding.programmed)
    return binding, watch
