"""``claim explain <namespace>/<name>``: why a ResourceClaim gets none of
our devices, the funnel of each request (kubernetes/claim_explain.py) as
the conductor's Event says it.

It reads the claim, the DeviceClasses and our driver's ResourceSlices
from the cluster itself, with the caller's kubeconfig, not through the
accelerator API: the API holds no Kubernetes credentials (only the
conductor's sink does), and whoever may read a claim is the cluster's
RBAC to decide, in the claim's namespace, not cyborg_lite's roles."""
import os

from cliff import lister

DEFAULT_DRIVER = 'cyborg-lite.openstack.org'


class ExplainClaim(lister.Lister):
    """Why a ResourceClaim gets none of our devices: per request, each
    selector (its DeviceClass's, then its own), the taints and the count,
    with the devices of our slices passing each; the first that none
    passes is the blocking one."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('claim', metavar='<namespace>/<name>')
        parser.add_argument(
            '--kubeconfig', default=os.environ.get('KUBECONFIG') or
            os.path.expanduser('~/.kube/config'),
            help='The cluster to ask (default: $KUBECONFIG, else '
                 '~/.kube/config)')
        parser.add_argument('--driver', default=DEFAULT_DRIVER,
                            help='Our DRA driver name, the conductor\'s '
                                 '[kubernetes]driver_name (default %s)'
                                 % DEFAULT_DRIVER)
        return parser

    def take_action(self, parsed_args):
        namespace, sep, name = parsed_args.claim.partition('/')
        if not sep or not namespace or not name:
            raise SystemExit('claim must be <namespace>/<name>')
        # NOTE: imported here: the kubernetes client (and requests) would
        # slow every other command's start (bench/cli_startup.py).
        from cyborg_lite.kubernetes import claim_events
        from cyborg_lite.kubernetes import client as k8s_client
        api_client = k8s_client.new_api_client(parsed_args.kubeconfig)
        try:
            answer = claim_events.ClaimExplainer(
                api_client, parsed_args.driver, 'cli').explain(namespace,
                                                              name)
        finally:
            api_client.close()
        return funnel_rows(answer)


def funnel_rows(answer):
    """(columns, rows) of ``claim_events.ClaimExplainer.explain``'s
    answer: a row per request and step, then the blocking request."""
    rows = []
    for request in answer['requests']:
        blocked = False
        for step, devices in request['funnel']:
            stop = devices == 0 and not blocked and request['blocking']
            blocked = blocked or bool(stop)
            rows.append((request['request'], step, devices,
                         request['blocking'] if stop else ''))
        if request['blocking'] and not blocked:
            rows.append((request['request'], 'blocking', '',
                         request['blocking']))
    if not answer['pending']:
        rows.append(('', 'claim', '', 'allocated, or asks for no '
                     'DeviceClass of %s' % answer['driver']))
    return ('request', 'step', 'devices', 'blocking'), rows
