"""Commands of resources newer than the default microversion.

Every request sends ``--os-accelerator-api-version`` (2.3 by default, what
Cyborg and python-cyborgclient speak), but /v2/bitstreams, /v2/programs
and /v2/resource_provider_trees exist from 2.4 only. Their commands send
the larger of the two versions; the other commands keep working against a
stock Cyborg.

Commands that only show more from a newer version (a device's
``unavailable_reasons``, a deployable's ``device_state`` from 2.5, where
both sit from 2.6, their health from 2.7) use ``FallbackMixin``: they ask
for that version and, when the API refuses it with 406 (a stock Cyborg,
an older cyborg_lite), ask again at each older one they know, then at the
version given.
"""
from cyborg_lite.cli import base
from cyborg_lite.cli import client as cl_client

# The API's microversion.TOPOLOGY (the CLI talks HTTP only; a test keeps
# the two equal): devices and deployables show where they sit.
TOPOLOGY_API_VERSION = '2.6'
# microversion.DEVICE_HEALTH: their health (and enable refused while
# unhealthy).
HEALTH_API_VERSION = '2.7'
# microversion.PROGRAMMING_STATS: /v2/programs/stats.
PROGRAMMING_STATS_API_VERSION = '2.11'


def _parse(version):
    major, _, minor = str(version).partition('.')
    return int(major), int(minor or 0)


def at_least(current, wanted):
    """``current`` unless it is older than ``wanted`` (``latest`` and
    unparsable values are the user's choice and kept)."""
    try:
        return wanted if _parse(current) < _parse(wanted) else current
    except ValueError:
        return current


class VersionedApi:
    """The client's JSON calls, each request at the given microversion."""

    # The client's helpers, built on request(): same paging, same errors.
    _json = cl_client.Client._json
    get = cl_client.Client.get
    get_all = cl_client.Client.get_all
    post = cl_client.Client.post
    put = cl_client.Client.put
    delete = cl_client.Client.delete

    def __init__(self, api, min_version):
        self._api = api
        self.endpoint = api.endpoint
        self.api_version = at_least(api.api_version, min_version)

    def request(self, method, path, **kwargs):
        kwargs.setdefault('microversion', self.api_version)
        return self._api.request(method, path, **kwargs)


class Mixin(base.ApiMixin):
    """``self.api`` at microversion ``min_api_version`` or later."""

    min_api_version = '2.4'

    @property
    def api(self):
        return VersionedApi(self.app.client_manager.cyborg_lite,
                            self.min_api_version)


class FallbackMixin(Mixin):
    """``self.api`` at ``min_api_version``; ``fetch_any_version(call)``
    retries at each of ``older_api_versions``, then at the version given,
    while the API refuses one."""

    older_api_versions = ()

    def fetch_any_version(self, call):
        """``call(api)`` at ``min_api_version``, or at an older version
        after a 406."""
        client = self.app.client_manager.cyborg_lite
        for version in (self.min_api_version,) + self.older_api_versions:
            try:
                return call(VersionedApi(client, version))
            except cl_client.ApiError as exc:
                if exc.status != 406:
                    raise
        return call(client)


class Command(Mixin, base.Command):
    """An action of a 2.4 resource."""


class ListCommand(Mixin, base.ListCommand):
    """A list of a 2.4 resource."""


class ShowCommand(Mixin, base.ShowCommand):
    """One object of a 2.4 resource."""
