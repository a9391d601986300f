"""virt-api's VirtualMachineInstance mutating webhook (``pkg/virt-api/webhooks/mutating-webhook``), pure."""
