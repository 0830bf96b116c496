"""Options of the [kubernetes] group: the DRA driver that serves the same
inventory to Kubernetes (ResourceSlices from the conductor, the kubelet
plugin in the agent). See docs/kubernetes.md.
"""
from oslo_config import cfg

# A DNS subdomain of at most 63 characters, lower case (the API's rule for
# a DRA driver name, which is also the domain of our attributes).
DRIVER_NAME_RE = (r'\A(?=.{1,63}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?'
                  r'(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z')
# The kubelet cancels a NodePrepareResources call after 45 s; we answer
# before it does so that "still programming" reaches it as a retryable error.
KUBELET_CALL_TIMEOUT = 45

GROUP = cfg.OptGroup('kubernetes', title='Kubernetes DRA options',
                     help='How cyborg_lite serves its accelerators to '
                          'Kubernetes through Dynamic Resource Allocation.')

OPTS = [
    cfg.BoolOpt('enabled',
                default=False,
                help='Agent: serve this host\'s devices to its kubelet '
                     '(the DRA kubelet plugin, on the sockets below). The '
                     'conductor publishes the host\'s ResourceSlices when '
                     '"kubernetes" is in [conductor]inventory_sinks and the '
                     'host is in [kubernetes]hosts.'),
    cfg.ListOpt('hosts',
                default=[],
                help='Conductor: the hosts (as their agents name them) that '
                     'serve Kubernetes; each gets a pool of devices in '
                     'ResourceSlices. A host may serve Nova too: a region '
                     'bound to an ARQ is then tainted in its slice, and one '
                     'prepared for a claim is reserved in Placement.'),
    cfg.DictOpt('node_names',
                default={},
                help='Conductor: hostname:node-name pairs for hosts whose '
                     'Kubernetes Node is named otherwise; a host not listed '
                     'is its own Node name.'),
    cfg.DictOpt('namespace_projects',
                default={},
                help='Conductor: namespace:project-id pairs. A claim in a '
                     'listed namespace may load the bitstreams that project '
                     'may see (its own and public ones); a claim in any '
                     'other namespace only public ones.'),
    cfg.StrOpt('driver_name',
               default='cyborg-lite.openstack.org',
               regex=DRIVER_NAME_RE,
               help='DRA driver name: the ResourceSlices\' spec.driver, '
                    'the domain of the device attributes, the kubelet '
                    'plugin\'s name and the vendor of its CDI specs. A '
                    'lower-case DNS subdomain of at most 63 characters.'),
    cfg.StrOpt('kubeconfig',
               help='Path of a kubeconfig file for the Kubernetes API. '
                    'Unset: the in-cluster service account of the pod.'),
    cfg.StrOpt('node_name',
               help='Name of this host\'s Node in Kubernetes, which is also '
                    'the name of its device pool. Unset: [DEFAULT]host.'),
    cfg.StrOpt('kubelet_registry_dir',
               default='/var/lib/kubelet/plugins_registry',
               help='Absolute path of the directory the kubelet watches for '
                    'plugin registration sockets; the agent serves '
                    '<driver_name>-reg.sock there.'),
    cfg.StrOpt('kubelet_plugins_dir',
               default='/var/lib/kubelet/plugins',
               help='Absolute path of the kubelet\'s plugin directory; the '
                    'agent serves the DRA service on '
                    '<kubelet_plugins_dir>/<driver_name>/dra.sock. The '
                    'kubelet must see the same path.'),
    cfg.StrOpt('cdi_dir',
               default='/var/run/cdi',
               help='Absolute path of the directory where the agent writes '
                    'one CDI spec per prepared claim, read by the container '
                    'runtime.'),
    cfg.StrOpt('plugin_instance_uid',
               regex=r'^[A-Za-z0-9][A-Za-z0-9-]{0,62}$',
               help='The UID of the pod the agent runs in, for a rolling '
                    'update of the agents\' DaemonSet with maxSurge '
                    '(kubelet 1.33+): the kubelet plugin\'s sockets carry '
                    'it (<driver_name>-<uid>-reg.sock, dra-<uid>.sock), so '
                    'that the new agent registers beside the old one and '
                    'takes over its prepared claims before the old one '
                    'stops. The DaemonSet passes metadata.uid through the '
                    'downward API as the environment variable '
                    'OS_KUBERNETES__PLUGIN_INSTANCE_UID. Unset: the '
                    'sockets of one agent a node (<driver_name>-reg.sock, '
                    'dra.sock), which a second agent would take over.'),
    cfg.StrOpt('plugin_state_dir',
               default='$state_path/dra',
               help='Absolute path of the directory where the kubelet plugin '
                    'keeps the claims it has prepared, so that they stay '
                    'prepared across a restart of the agent.'),
    cfg.FloatOpt('prepare_timeout',
                 default=40.0,
                 min=1.0,
                 max=KUBELET_CALL_TIMEOUT - 1,
                 help='Seconds NodePrepareResources waits for a claim\'s '
                      'devices (programming included) before it answers '
                      '"in progress" for that claim; the kubelet retries and '
                      'the next call picks up the running preparation. Below '
                      'the kubelet\'s own %d s limit.'
                      % KUBELET_CALL_TIMEOUT),
    cfg.BoolOpt('publish_taints',
                default=True,
                help='Publish unhealthy, maintaining, cleaning and '
                     'Nova-bound devices with a NoSchedule taint where the '
                     'cluster keeps device taints (on by default from '
                     'Kubernetes 1.36, the DRADeviceTaints gate before): '
                     'the conductor asks the apiserver with a dry run, and '
                     'where taints are dropped leaves such devices out of '
                     'the ResourceSlices instead. False: always leave them '
                     'out.'),
    cfg.BoolOpt('shared_counters',
                default=True,
                help='Publish the FPGA regions that share one PCI function '
                     '(a card without SR-IOV) as partitionable devices '
                     '(KEP-4815): a counter set per shared function, of '
                     'which each region behind it consumes all, so the '
                     'scheduler never allocates two of them at once. Needs '
                     'the DRAPartitionableDevices feature gate (on by '
                     'default from Kubernetes 1.36; counter sets in slices '
                     'of their own need 1.35) in the apiserver and the '
                     'scheduler: the conductor asks the apiserver with a '
                     'dry run, and where the counters are dropped or '
                     'refused publishes each region as a device of its own '
                     'instead, tainted while a sibling is held. False: '
                     'never publish counters (a scheduler without the gate '
                     'allocates no device that consumes counters).'),
    cfg.BoolOpt('binding_conditions',
                default=True,
                help='Publish the FPGA regions with the binding conditions '
                     '<driver_name>/programmed and <driver_name>/'
                     'programming-failed (KEP-5007): the conductor loads '
                     'what an allocated claim asks for while the pod waits '
                     'in the scheduler, and the pod binds to its node only '
                     'once the region runs it, so the kubelet\'s Prepare '
                     'never programs. Needs the DRADeviceBindingConditions '
                     'and DRAResourceClaimDeviceStatus feature gates (on by '
                     'default from Kubernetes 1.36) in the apiserver and '
                     'the scheduler: the conductor asks the apiserver with '
                     'a dry run, and where they are dropped publishes the '
                     'regions without them (Prepare programs, as before). '
                     'False: never publish them.'),
    cfg.BoolOpt('numa_node_list',
                default=False,
                help='Publish resource.kubernetes.io/numaNode as a list '
                     '(KEP-6072: the device\'s NUMA node first, then the '
                     'nodes of its socket at the smallest SLIT distance), '
                     'which matches another driver\'s scalar or list when '
                     'they intersect. Needs the DRAListTypeAttributes '
                     'feature gate (Kubernetes 1.36 on) in the apiserver '
                     'and the scheduler: turn this on after the cluster, '
                     'and off before it. Off: a scalar, the device\'s '
                     'node, valid on every release.'),
    cfg.StrOpt('unhealthy_taint_effect',
               default='NoSchedule',
               choices=[('NoSchedule', 'New claims do not get an unhealthy '
                                       'device; pods using it keep running '
                                       '(and are told in the log).'),
                        ('NoExecute', 'Also evict the pods using an '
                                      'unhealthy device that do not '
                                      'tolerate the taint (KEP-5055).')],
               help='Effect of the taint <driver_name>/unhealthy on an '
                    'unhealthy device. A recovering device is always '
                    'NoSchedule; a degraded one gets an informational '
                    'taint (effect None).'),
    cfg.BoolOpt('informational_taints',
                default=True,
                help='Publish a degraded device (offered still) with a '
                     'taint <driver_name>/degraded of effect None, which '
                     'schedules nothing away but says why. Effect None '
                     'is valid from Kubernetes 1.35; set false for a 1.34 '
                     'apiserver, which refuses it.'),
    cfg.IntOpt('api_conflict_retries',
               default=5,
               min=0,
               max=100,
               help='How many times a ResourceSlice sync re-reads the pool '
                    'and tries again after a conflict (HTTP 409) with '
                    'another writer.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
