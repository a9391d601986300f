"""KubeVirt's application-aware-quota (AAQ, github.com/kubevirt/application-aware-quota), pure: what an
``ApplicationAwareResourceQuota`` charges for a VM's virt-launcher pod, by the calculator its AAQ CR names.

==============================================================================  ====================
AAQ (package: function)                                                          here
==============================================================================  ====================
built-in-usage-calculators: ``VirtLauncherCalculator.CalculateUsageByConfig``    :func:`.usage.launcher_usage`
built-in-usage-calculators: ``CalculateResourceLauncherVMIUsagePodResources``    :func:`.usage.virtual_resources`
built-in-usage-calculators/cpu: ``GetNumberOfVCPUs``                             :func:`.usage.vcpus`
aaq-operator: the AAQ CR's ``configName`` (CRD default, controller flag)         :func:`.usage.calculator_of`
aaq-operator: ``spec.namespaceSelector`` (default: the enable-gating label)       :func:`.usage.gates`
==============================================================================  ====================

The gate controller then admits a gated pod against the namespace's ApplicationAwareResourceQuotas with
kube-apiserver's ``CheckRequest`` (:func:`apiserver.render.kubernetes.quota.admit`), without the pod
evaluator's ``must specify`` constraints (``AaqEvaluator.Constraints`` returns nil).
"""

from apiserver.render.aaq.usage import (
    CALCULATORS,
    DEFAULT_CALCULATOR,
    GATING_LABEL,
    calculator_of,
    gates,
    launcher_usage,
)

__all__ = ["CALCULATORS", "DEFAULT_CALCULATOR", "GATING_LABEL", "calculator_of", "gates", "launcher_usage"]
