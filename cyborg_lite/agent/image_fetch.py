"""Where an agent gets the image of a programming job ([agent]image_source).

A fetcher is called with the job's bitstream dict and returns an iterable
of bytes chunks; agent/programming.run_job hashes what it reads and
refuses an image whose sha256 or header is wrong, so neither source is
trusted. Errors surface while the chunks are read, inside the job, and
fail it with their text.
"""
from keystoneauth1 import exceptions as ks_exc

from cyborg_lite.bitstreams import store as image_store
from cyborg_lite.common import exception
from cyborg_lite.common import service_clients

FILE_PATH = '/v2/bitstreams/%s/file'
# The route exists from API 2.4 on; without the header the API serves 2.0
# and answers 404.
DOWNLOAD_HEADERS = {'Accept': 'application/octet-stream',
                    'OpenStack-API-Version': 'accelerator 2.4'}


class LocalImages:
    """Reads the bitstream store this host shares with the API."""

    def __init__(self, store):
        self.store = store

    def __call__(self, bitstream):
        return self.store.iter_image(bitstream['sha256'])


class HttpImages:
    """Downloads ``GET /v2/bitstreams/{uuid}/file`` from the API (2.4)."""

    def __init__(self, adapter, chunk_size):
        self.adapter = adapter
        self.chunk_size = chunk_size

    def __call__(self, bitstream):
        return self._chunks(bitstream['uuid'])

    def _chunks(self, uuid):
        url = FILE_PATH % uuid
        try:
            resp = self.adapter.get(url, stream=True, raise_exc=False,
                                    headers=dict(DOWNLOAD_HEADERS))
        except ks_exc.ClientException as exc:
            raise exception.ProgrammingError(
                reason='cannot download the image of bitstream %s: %s'
                % (uuid, exc))
        try:
            if resp.status_code != 200:
                raise exception.ProgrammingError(
                    reason='downloading the image of bitstream %s: HTTP %s '
                           '%s' % (uuid, resp.status_code,
                                   resp.text[:200].strip()))
            yield from resp.iter_content(self.chunk_size)
        finally:
            resp.close()


def make_fetcher(conf):
    if conf.agent.image_source == 'http':
        adapter = service_clients.adapter_from_conf(conf, 'image_api')
        return HttpImages(adapter, conf.bitstreams.chunk_size)
    return LocalImages(image_store.ImageStore(conf.bitstreams.store_dir,
                                              conf.bitstreams.chunk_size))
