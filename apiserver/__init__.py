"""kubevirt-expand-apiserver: render KubeVirt VirtualMachines with instancetypes and preferences applied."""

from apiserver.api import expand_vm
from apiserver.render.errors import ExpandError

__all__ = ["ExpandError", "expand_vm"]
