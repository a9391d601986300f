"""KubeVirt's VM controller (``pkg/virt-controller/watch/vm``), pure: what it does to a VM, one module per step."""
