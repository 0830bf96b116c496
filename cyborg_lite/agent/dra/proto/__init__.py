"""The kubelet's gRPC APIs as .proto files written from the published field
numbers, and the Python modules ``make protos`` generates from them
(committed; tests/unit/kubernetes/test_protos.py checks they are current)."""
