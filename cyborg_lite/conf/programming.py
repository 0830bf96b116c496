"""Options of the [programming] group: FPGA programming jobs, their
heartbeats and reaper."""
from oslo_config import cfg

PROGRAMMING = cfg.OptGroup('programming', title='FPGA programming jobs')

PROGRAMMING_OPTS = [
    cfg.IntOpt('job_timeout',
               default=1800,
               min=1,
               max=7 * 86400,
               help='Seconds after which an active programming job is '
                    'considered abandoned whatever its heartbeats say, and '
                    'is failed or retried.'),
    cfg.IntOpt('heartbeat_timeout',
               default=120,
               min=1,
               max=86400,
               help='Seconds without a heartbeat or progress report after '
                    'which an active programming job is considered '
                    'abandoned (its agent died) and is failed or retried.'),
    cfg.IntOpt('heartbeat_interval',
               default=20,
               min=1,
               max=3600,
               help='Seconds between the heartbeats an agent sends while it '
                    'runs a programming job. Keep it well below '
                    'heartbeat_timeout.'),
    cfg.IntOpt('max_attempts',
               default=2,
               min=1,
               max=100,
               help='Default number of tries of a programming job, counting '
                    'the first. A try abandoned by a dead agent is retried '
                    'while tries remain; a try that reported an error is '
                    'not retried.'),
    cfg.IntOpt('reap_interval',
               default=30,
               min=1,
               max=3600,
               help='Seconds between two runs of the stale-job reaper in '
                    'each conductor: it fails or requeues jobs whose agent '
                    'went silent, and sends requeued ones to their host '
                    'again. Any conductor may reap any job.'),
    cfg.IntOpt('bind_wait_timeout',
               default=240,
               min=1,
               max=86400,
               help='Seconds a Kubernetes claim\'s prepare waits for the '
                    'programming job it started (the claim\'s config asks '
                    'for a bitstream or function the region lacks) before '
                    'it answers "in progress" (the kubelet plugin asks '
                    'again; the job goes on). A Nova bind does not wait: '
                    'the end of its job, reported by the agent, finishes '
                    'it.'),
    cfg.FloatOpt('bind_poll_interval',
                 default=0.5,
                 min=0.01,
                 max=60,
                 help='Seconds between two reads of the job\'s state while '
                      'a Kubernetes claim\'s prepare waits for it (any '
                      'conductor may receive the agent\'s reports, so the '
                      'database is what is watched).'),
]


def register_opts(conf):
    conf.register_group(PROGRAMMING)
    conf.register_opts(PROGRAMMING_OPTS, group=PROGRAMMING)


def list_opts():
    return [(PROGRAMMING, PROGRAMMING_OPTS)]
