"""The cluster permissions authentication and authorization need, as data for the manifests' tests.

Each rule: (apiGroup, resource, verbs, namespace or None for cluster-wide, resourceNames).
"""

from __future__ import annotations

from typing import NamedTuple

from apiserver.auth.config import CONFIGMAP_NAME, CONFIGMAP_NAMESPACE


class Rule(NamedTuple):
    api_group: str
    resource: str
    verbs: tuple[str, ...]
    namespace: str | None = None
    resource_names: tuple[str, ...] = ()


# Granted by the ClusterRole system:auth-delegator (bind it with a ClusterRoleBinding).
AUTH_DELEGATOR_RULES: tuple[Rule, ...] = (
    Rule("authentication.k8s.io", "tokenreviews", ("create",)),
    Rule("authorization.k8s.io", "subjectaccessreviews", ("create",)),
)

# Granted by the Role kube-system/extension-apiserver-authentication-reader (a RoleBinding there).
# List and watch are sent with fieldSelector metadata.name=<name>, so resourceNames restricts them too.
AUTHENTICATION_READER_RULES: tuple[Rule, ...] = (
    Rule("", "configmaps", ("get", "list", "watch"), CONFIGMAP_NAMESPACE, (CONFIGMAP_NAME,)),
)

RULES: tuple[Rule, ...] = AUTH_DELEGATOR_RULES + AUTHENTICATION_READER_RULES
