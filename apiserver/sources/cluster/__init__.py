"""Read VMs and what they reference from a Kubernetes cluster (see :mod:`.source`)."""

from apiserver.sources.cluster.client import ApiError, KubeClient, load_configuration
from apiserver.sources.cluster.source import ClusterSource, source_from_args

__all__ = ["ApiError", "ClusterSource", "KubeClient", "load_configuration", "source_from_args"]
