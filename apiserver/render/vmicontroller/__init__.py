"""virt-controller's VirtualMachineInstance controller (``pkg/virt-controller/watch/vmi``), pure."""
