"""Kubernetes DRA: names, the API client, the host view and the pure
ResourceSlice builder (what the API, the agent and the CLI
import), the sink that publishes the slices and watches them, and
the conductor's claim workflow (claims.py). The kubelet plugin
runs in the agent: agent/dra/. See docs/kubernetes.md."""
