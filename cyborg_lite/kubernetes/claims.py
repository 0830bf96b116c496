"""Kubernetes ResourceClaims, conductor side: preparing a region for a
claim the kubelet plugin (agent/dra) was asked to prepare, and releasing
it.

``prepare`` resolves the device name of the node's pool to its region
(the names kubernetes/slices.py publishes), holds the region for
``k8s:<claim uid>`` (db/k8s_claims.claim: the locks and rules of a Nova
bind, so one of the two wins a race), then, when the claim's config asks
for a bitstream or a function the region lacks, runs the program-on-bind
path: the same checks (programming_checks: visibility to the project the
namespace maps to, region type, checksum, signature) and a job linked to
the claim. A region that holds what the config asks for in an image the
signature policy refuses now counts as not loaded, as for a bind. A
claim's first prepare runs those checks before it holds the region, so
one they refuse holds, wipes and records nothing.
It waits at most the ``wait`` the caller gives; a job still running then
answers ClaimInProgress, and the next call (a kubelet retry, or the agent
after a restart) waits on the same job. A refusal or a failed job frees
the region again, so a failed prepare holds nothing.

``release`` frees what the claim holds; each region is wiped before its
next tenant (conductor/cleaning.py), as after an unbind. A failed prepare
releases the same way: the claim's bitstream may be half loaded.
"""
import time

from oslo_log import log as logging

from cyborg_lite.bitstreams import checks
from cyborg_lite.bitstreams import trust as bitstream_trust
from cyborg_lite.common import device_records
from cyborg_lite.common import exception
from cyborg_lite.common import states
from cyborg_lite.conf import CONF
from cyborg_lite.db import bitstreams as bitstreams_db
from cyborg_lite.db import deployables as deployables_db
from cyborg_lite.db import devices as devices_db
from cyborg_lite.db import k8s_claims as claims_db
from cyborg_lite.db import programming_jobs as jobs_db
from cyborg_lite.kubernetes import names as k8s_names
from cyborg_lite.kubernetes import slices
from cyborg_lite.kubernetes import view as k8s_view
from cyborg_lite.metrics import counted as metrics

LOG = logging.getLogger(__name__)

# The fields of a prepare request (agent/dra/conductor_device.py sends it).
REQUEST_KEYS = ('claim_uid', 'namespace', 'claim_name', 'pool', 'device')


class ClaimFlow:

    def __init__(self, programming, cleaning, conf=CONF):
        self.programming = programming
        self.cleaning = cleaning
        self.conf = conf

    # --- where the device is ------------------------------------------

    def _region(self, hostname, request):
        """(view Device, view Deployable) of the request's device."""
        refused = _refusal(request)
        if hostname not in self.conf.kubernetes.hosts:
            raise refused('host %s does not serve Kubernetes ([kubernetes]'
                          'hosts of the conductor)' % hostname)
        node = k8s_view.node_name(self.conf, hostname)
        if request['pool'] != node:
            raise refused('pool %s is not the pool of host %s (%s)'
                          % (request['pool'], hostname, node))
        inventory = k8s_view.of_host(self.conf,
                                     devices_db.load_inventory(hostname))
        found = slices.devices_by_name(inventory).get(request['device'])
        if found is None:
            raise refused('no device %s in pool %s' % (request['device'],
                                                       node))
        return found

    # --- prepare --------------------------------------------------------

    def prepare(self, hostname, request, wait):
        """Hold (and program) the region for the claim; what the agent
        needs to give it to the container, as a dict."""
        began, outcome = time.monotonic(), 'failed'
        try:
            answer = self._prepare(hostname, request, wait)
            outcome = 'prepared'
            return answer
        except exception.ClaimInProgress:
            outcome = 'in_progress'
            raise
        except exception.ClaimRefused:
            outcome = 'refused'
            raise
        finally:
            metrics.observe(metrics.PREPARE_DURATION,
                            time.monotonic() - began, outcome)

    def _prepare(self, hostname, request, wait):
        _check_request(request)
        _device, dep = self._region(hostname, request)
        region, device_row = deployables_db.load_region(dep.uuid)
        if request.get('admin_access'):
            # Monitoring access shares the device with its tenant: nothing
            # is held or loaded for it.
            return _answer(region, device_row, None)
        claimed, project_id, config = self._hold(
            region, request, pods=request.get('pods') or ())
        if claimed.new:
            LOG.info('Region %s held for ResourceClaim %s/%s (%s)',
                     region.uuid, request['namespace'],
                     request['claim_name'], request['claim_uid'])
        # Allocated with our binding condition: the conductor loaded the
        # region before the pod was bound (kubernetes/binding.py); Prepare
        # never programs then, nor waits for a job.
        bound = bool(request.get('bound_when_programmed'))
        try:
            if config:
                self._ensure_programmed(claimed, region.uuid, config,
                                        project_id, 0 if bound else wait,
                                        start=not bound)
        except exception.ClaimInProgress:
            raise
        except Exception:
            # NOTE: a refused or failed prepare holds nothing; the retry
            # takes the region again once it is wiped.
            self.cleaning.start(claims_db.release(request['claim_uid'],
                                                  region.id))
            raise
        region, device_row = deployables_db.load_region(dep.uuid)
        return _answer(region, device_row, claimed)

    def program_for_binding(self, hostname, request):
        """Hold the region for a claim the scheduler allocated with our
        binding condition and start the job that loads what its config
        asks for, without waiting (kubernetes/binding.py): the job's uuid,
        or None when the region runs it already. The checks and the hold
        are Prepare's; a refusal or a failed start frees the region."""
        _check_request(request)
        _device, dep = self._region(hostname, request)
        region, _device_row = deployables_db.load_region(dep.uuid)
        claimed, project_id, config = self._hold(region, request)
        if not config:
            return None
        try:
            return self._job_for(claimed, region.uuid, config, project_id,
                                 reuse_ended=True)
        except Exception:
            self.cleaning.start(claims_db.release(request['claim_uid'],
                                                  region.id))
            raise

    def _hold(self, region, request, pods=()):
        """Hold ``region`` for the claim of ``request``, its config
        checked first unless the claim holds it already: (db Claimed, the
        namespace's project, the config)."""
        project_id = self.conf.kubernetes.namespace_projects.get(
            request['namespace'])
        config = request.get('config')
        if config and not claims_db.holds(request['claim_uid'], region.id):
            # A prepare the job's checks refuse holds, writes and
            # records nothing: refused before the region is held.
            self._check_config(region, config, project_id)
        claimed = claims_db.claim(
            region.id, request['claim_uid'], request['namespace'],
            request['claim_name'], request['device'], project_id, pods=pods)
        return claimed, project_id, config

    def _ensure_programmed(self, claimed, deployable_uuid, config,
                           project_id, wait, start=True):
        job_uuid = self._job_for(claimed, deployable_uuid, config,
                                 project_id, start)
        if job_uuid is None:
            return                       # already loaded
        done = self._wait(claimed, deployable_uuid, job_uuid, wait)
        if done.state != 'succeeded':
            raise exception.ProgrammingError(
                reason='job %s %s: %s' % (done.uuid, done.state,
                                          done.error or 'no reason given'))

    def _job_for(self, claimed, deployable_uuid, config, project_id,
                 start=True, reuse_ended=False):
        """The job loading the region for the claim: the one running, or
        one started now (not when ``start`` is false: refused instead);
        None when the region runs what the config asks for. With
        ``reuse_ended`` the claim's job is its answer even once ended: a
        binding condition follows that job's end, and a failed one is not
        tried again (the scheduler allocates again)."""
        job_uuid = claimed.job_uuid
        if job_uuid is not None and (reuse_ended or
                                     self._job_active(job_uuid) or
                                     config.get('force')):
            return job_uuid
        if not start:
            region, _device = deployables_db.load_region(deployable_uuid)
            if self._to_load(region, config, project_id) is not None:
                raise exception.ClaimRefused(
                    claim=claimed.claim_uid, device=deployable_uuid,
                    reason='the region does not run what the claim asks '
                           'for, and its pod was bound on our binding '
                           'condition: Prepare does not program')
            return None
        return self._start(claimed, deployable_uuid, config, project_id,
                           claims_db.holder_name(claimed.claim_uid))

    @staticmethod
    def _to_load(region, config, project_id):
        """The uuid of the bitstream the config makes the region load, or
        None when it holds what the config asks for in an image the
        project may be given as it is."""
        wanted = _wanted(config)
        if not config.get('force') and checks.programming_needed(
                wanted, region.bitstream_id, region.function_id) is None \
                and checks.loaded_image_trusted(
                    region.bitstream_id, region.function_id, project_id):
            return None
        bitstream_uuid = config.get('bitstream_id')
        if bitstream_uuid is None:
            bitstream_uuid = checks.resolve_function(
                config['function_id'], region, project_id)
        return bitstream_uuid

    def _check_config(self, region, config, project_id):
        """The checks the config's job gets (programming_checks.preflight)
        but who holds the region, which the hold decides."""
        bitstream_uuid = self._to_load(region, config, project_id)
        if bitstream_uuid is None:
            return
        bitstream = bitstreams_db.get(bitstream_uuid)
        checks.preflight(bitstream, region, None, project_id=project_id,
                         trust=bitstream_trust.load(bitstream, project_id))

    def _start(self, claimed, deployable_uuid, config, project_id, holder):
        region, _device = deployables_db.load_region(deployable_uuid)
        bitstream_uuid = self._to_load(region, config, project_id)
        if bitstream_uuid is None:
            return None
        job = self.programming.start_job(bitstream_uuid, deployable_uuid,
                                         project_id=project_id,
                                         holder=holder,
                                         namespace=claimed.namespace)
        claims_db.set_job(claimed.id, job['uuid'])
        LOG.info('ResourceClaim %s: programming job %s loads %s into %s',
                 claimed.claim_uid, job['uuid'], bitstream_uuid,
                 deployable_uuid)
        return job['uuid']

    @staticmethod
    def _job_active(job_uuid):
        return jobs_db.get(job_uuid).state not in states.JOB_TERMINAL

    def _wait(self, claimed, deployable_uuid, job_uuid, wait):
        opts = self.conf.programming
        deadline = time.monotonic() + min(wait, opts.bind_wait_timeout)
        while True:
            job = jobs_db.get(job_uuid)
            if job.state in states.JOB_TERMINAL:
                return job
            if time.monotonic() >= deadline:
                raise exception.ClaimInProgress(
                    claim=claimed.claim_uid, device=deployable_uuid,
                    reason='programming job %s is %s' % (job_uuid,
                                                         job.state))
            time.sleep(opts.bind_poll_interval)

    # --- release --------------------------------------------------------

    def release(self, hostname, claim_uid, device=None):
        """Free what the claim holds on ``hostname`` (one device of the
        pool, or all when ``device`` is None) and start the wipe of each
        region; the hosts whose regions wait for it."""
        began, outcome = time.monotonic(), 'failed'
        try:
            hosts = self._release(hostname, claim_uid, device)
            outcome = 'released'
            return hosts
        finally:
            metrics.observe(metrics.UNPREPARE_DURATION,
                            time.monotonic() - began, outcome)

    def _release(self, hostname, claim_uid, device):
        deployable_id = None
        if device is not None:
            request = {'claim_uid': claim_uid, 'device': device,
                       'pool': k8s_view.node_name(self.conf, hostname)}
            try:
                _device, dep = self._region(hostname, request)
            except exception.ClaimRefused as e:
                LOG.warning('Release of %s for claim %s: %s; releasing all '
                            'the claim holds', device, claim_uid, e)
            else:
                deployable_id = deployables_db.load_region(dep.uuid)[0].id
        hosts = claims_db.release(claim_uid, deployable_id)
        if hosts:
            LOG.info('ResourceClaim %s released %s on %s', claim_uid,
                     device or 'its devices', ', '.join(sorted(hosts)))
        self.cleaning.start(hosts)
        return hosts


def _refusal(request):
    def refused(reason):
        return exception.ClaimRefused(claim=request.get('claim_uid'),
                                      device=request.get('device'),
                                      reason=reason)
    return refused


def _check_request(request):
    missing = [k for k in REQUEST_KEYS
               if not isinstance(request.get(k), str) or not request[k]]
    if missing:
        raise exception.Invalid(reason='a prepare request lacks %s'
                                % ', '.join(missing))
    try:
        # NOTE: an older agent sends none.
        k8s_names.pod_names(request.get('pods') or [])
    except ValueError as e:
        raise exception.Invalid(reason='a prepare request: %s' % e)
    config = request.get('config')
    if config is not None and (not isinstance(config, dict) or
                               bool(config.get('bitstream_id')) ==
                               bool(config.get('function_id'))):
        raise exception.Invalid(reason='a prepare config has exactly one '
                                'of bitstream_id and function_id')


def _answer(region, device, claimed):
    """What the agent gives the container of the region."""
    return {
        'deployable_uuid': region.uuid, 'device_uuid': device.uuid,
        'identity': device.identity,
        'region_name': device_records.region_name_of(region, device),
        'driver': device.driver_name, 'pci_address': device.pci_address,
        'region_type': region.region_type,
        'function_id': region.function_id,
        'bitstream_id': region.bitstream_id,
        'attach_type': claimed.attach_type if claimed else None,
        'attach_info': claimed.attach_info if claimed else None,
    }


def _wanted(config):
    """The config as a device profile group, for checks.programming_needed."""
    if config.get('bitstream_id'):
        return {'accel:bitstream_id': config['bitstream_id']}
    return {'accel:function_id': config['function_id']}
