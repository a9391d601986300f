"""virt-controller's template service (``pkg/virt-controller/services``), pure: the resources of the
virt-launcher pod KubeVirt creates for a VMI, and the memory overhead it adds (``pod.py`` is the entry)."""
