"""The conductor's side of the Kubernetes DRA driver: a host's inventory
published as ResourceSlices (resource.k8s.io/v1). See docs/kubernetes.md."""
