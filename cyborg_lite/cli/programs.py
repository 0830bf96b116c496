"""``program create|list|show|cancel|stats``: programming jobs (API 2.4).

A job loads a bitstream into one region (deployable). The API answers at
once with a ``queued`` job; ``create --wait`` follows it through
downloading, programming and verifying, printing each state change on
stderr, and exits 1 unless it ends ``succeeded``. ``show`` lists the
job's tries one per line (number, host, outcome, times, error).
``stats`` sums the seconds of ended jobs by project and namespace (API
2.11, from the job records).
"""
from cliff import columns as cliff_columns

from cyborg_lite.cli import base
from cyborg_lite.cli import client as cl_client
from cyborg_lite.cli import versioned
from cyborg_lite.cli import waiting

STATES = ('queued', 'downloading', 'programming', 'verifying',
          'succeeded', 'failed', 'cancelled')
FINAL_STATES = ('succeeded', 'failed', 'cancelled')
# Filters of list: (option, API query parameter).
FILTERS = (('--deployable', 'deployable_uuid'),
           ('--bitstream', 'bitstream_uuid'),
           ('--hostname', 'hostname'))


def program_path(uuid, suffix=''):
    return '/programs/%s%s' % (uuid, suffix)


class CreateProgram(versioned.ShowCommand):
    """Program a region (deployable) with a bitstream."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('deployable', metavar='<deployable-uuid>')
        parser.add_argument('bitstream', metavar='<bitstream-uuid>')
        parser.add_argument('--force', action='store_true',
                            help='Even if a bound ARQ holds the region '
                                 '(admin)')
        parser.add_argument('--wait', action='store_true',
                            help='Wait until the job ends, showing state '
                                 'changes on stderr')
        parser.add_argument('--timeout', type=float, default=600,
                            help='Seconds --wait waits (default 600)')
        return parser

    def _wait(self, job, timeout):
        job = waiting.wait_for_state(
            lambda: self.api.get(program_path(job['uuid'])), FINAL_STATES,
            timeout, interval=0.2,
            report=waiting.state_reporter(label=job['uuid'] + ': '))
        if job['state'] != 'succeeded':
            raise cl_client.ClientError('Programming job %s ended %s: %s' % (
                job['uuid'], job['state'], job.get('error') or ''))
        return job

    def fetch(self, parsed_args):
        body = {'deployable_uuid': parsed_args.deployable,
                'bitstream_uuid': parsed_args.bitstream}
        if parsed_args.force:
            body['force'] = True
        job = self.api.post('/programs', body)
        if parsed_args.wait:
            return self._wait(job, parsed_args.timeout)
        return job


class ListProgram(versioned.ListCommand):
    """List programming jobs."""

    columns = ('uuid', 'state', 'deployable_uuid', 'bitstream_uuid',
               'hostname', 'error')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        for option, field in FILTERS:
            parser.add_argument(option, dest=field, metavar='<%s>'
                                % option[2:], help='Only jobs with this '
                                                   + field.replace('_', ' '))
        parser.add_argument('--state', choices=STATES,
                            help='Only jobs in this state')
        return parser

    def fetch(self, parsed_args):
        params = {field: getattr(parsed_args, field)
                  for _option, field in FILTERS + (('', 'state'),)
                  if getattr(parsed_args, field) is not None}
        return self.api.get_all('/programs', 'programs', params)


class TriesColumn(cliff_columns.FormattableColumn):
    """A job's tries: one line each in tables, the list in json/yaml."""

    def human_readable(self):
        return '\n'.join(_try_line(t) for t in self._value or ())

    def machine_readable(self):
        return self._value


def _try_line(job_try):
    line = 'try %s on %s: %s (%s - %s)' % (
        job_try.get('number'), job_try.get('hostname'),
        job_try.get('outcome'), job_try.get('started_at'),
        job_try.get('ended_at') or 'now')
    if job_try.get('error'):
        line += ': %s' % job_try['error']
    return line


class ShowProgram(versioned.ShowCommand):
    """Show one programming job, with its tries."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('program', metavar='<uuid>')
        return parser

    def fetch(self, parsed_args):
        return self.api.get(program_path(parsed_args.program))

    def take_action(self, parsed_args):
        job = self.fetch(parsed_args)
        names, values = base.show_fields(job)
        return names, tuple(TriesColumn(job['tries']) if n == 'tries' else v
                            for n, v in zip(names, values))


class ProgramStats(versioned.ListCommand):
    """Programming seconds of ended jobs by project and namespace."""

    min_api_version = versioned.PROGRAMMING_STATS_API_VERSION
    columns = ('project_id', 'namespace', 'jobs', 'seconds')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--project', metavar='<project-id>',
                            help="Only this project's jobs (yours unless "
                                 'you are an admin)')
        return parser

    def fetch(self, parsed_args):
        params = {} if parsed_args.project is None else {
            'project_id': parsed_args.project}
        return self.api.get('/programs/stats',
                            params=params)['programming_seconds']


class CancelProgram(ShowProgram):
    """Cancel a programming job that has not started writing."""

    def fetch(self, parsed_args):
        return self.api.post(program_path(parsed_args.program, '/cancel'),
                             None)
