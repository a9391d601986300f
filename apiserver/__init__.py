"""kubevirt-expand-apiserver: render KubeVirt VirtualMachines with instancetypes and preferences applied."""

from apiserver.api import Expanded, Expander, ExpandWarning, expand, expand_vm, launch_vm
from apiserver.render.kubernetes.errors import ExpandError

__all__ = ["ExpandError", "ExpandWarning", "Expanded", "Expander", "expand", "expand_vm", "launch_vm"]
