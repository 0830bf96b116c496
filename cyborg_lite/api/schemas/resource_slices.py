"""What /v2/resource_slices/{hostname} answers (2.5). Each slice is a
resource.k8s.io/v1 ResourceSlice (its own schema is Kubernetes'; the
builder checks it, kubernetes/slices.check_slice)."""
from cyborg_lite.api.schemas import common

_SLICE = {
    'type': 'object',
    'properties': {'apiVersion': {'type': 'string',
                                  'enum': ['resource.k8s.io/v1']},
                   'kind': {'type': 'string', 'enum': ['ResourceSlice']},
                   'metadata': {'type': 'object'},
                   'spec': {'type': 'object'}},
    'required': ['apiVersion', 'kind', 'metadata', 'spec'],
    'additionalProperties': False,
}

SLICES = {
    'type': 'object',
    'properties': {
        'hostname': common.STRING,
        'node_name': common.STRING,
        'served': {'type': 'boolean'},
        'resource_slices': {'type': 'array', 'items': _SLICE},
    },
    'required': ['hostname', 'node_name', 'served', 'resource_slices'],
    'additionalProperties': False,
}
