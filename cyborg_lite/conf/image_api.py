"""Options of [image_api], how an agent downloads bitstream images from
the API ([agent]image_source = http).

[image_api] holds keystoneauth1's standard session, auth and adapter
options, as [placement] does. For an API with ``auth_strategy = noauth``::

    [agent]
    image_source = http
    [image_api]
    endpoint_override = http://api-host:6666
"""
from oslo_config import cfg

from cyborg_lite.conf import _keystoneauth

IMAGE_API = cfg.OptGroup('image_api', title='Image download options',
                         help='How an agent with [agent]image_source = http '
                              'reaches the cyborg-lite API. endpoint_override '
                              'is the API URL; without it the service '
                              'catalog is asked for service_type '
                              'accelerator.')
IMAGE_API_SERVICE_TYPE = 'accelerator'


def register_opts(conf):
    _keystoneauth.register(conf, IMAGE_API, IMAGE_API_SERVICE_TYPE)


def list_opts():
    return [(IMAGE_API, _keystoneauth.sample_opts(IMAGE_API_SERVICE_TYPE))]
