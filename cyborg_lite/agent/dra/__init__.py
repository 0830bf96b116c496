"""The agent's kubelet DRA plugin: registration and the DRAPlugin service
(v1 and v1beta1) on the kubelet's unix sockets; see docs/kubernetes.md."""
